"""Compare two statistics dumps op by op and tensor by tensor, with what statistics allow.

A statistics dump keeps, per op tensor, a few numbers (max, min, mean or L2 norm, sometimes
NaN/Inf counts) instead of the tensor. Two runs can then be compared per statistic (relative
difference), for dtype/shape changes and for NaN/Inf appearing, and the first tensor in
execution order whose statistics drift past the threshold is named. Cosine similarity, error
distributions, and replaying a fused op need the tensors themselves: tensor dumps.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_THRESHOLD = 0.01  # relative difference of a statistic counted as drift
NEEDS_TENSORS = (
    "statistics only: tensor metrics (cosine similarity, relative Euclidean distance, KL "
    "divergence...) and replaying a fused op need tensor dumps (dump_data: tensor)"
)
CSV_NAME = "stats_compare.csv"
SUMMARY_NAME = "stats_summary.json"


@dataclass
class TensorStats:
    """One tensor compared: ``rel`` maps each statistic both sides have to its relative
    difference (None when a side has no value)."""

    leaf: str
    op_name: str
    op_type: str
    io: str
    slot: int
    occurrence: int
    dtype: tuple[str, str]
    shape: tuple[object, object]
    on: dict[str, float | None]
    off: dict[str, float | None]
    rel: dict[str, float | None] = field(default_factory=dict)
    status: str = "match"  # match | drift | nan_inf | dtype | shape | only_on | only_off

    @property
    def worst(self) -> float:
        values = [v for v in self.rel.values() if v is not None and not math.isnan(v)]
        return max(values, default=0.0)


def _rel(a: float | None, b: float | None) -> float | None:
    if a is None or b is None:
        return None
    if math.isnan(a) or math.isnan(b):
        return 0.0 if math.isnan(a) and math.isnan(b) else math.inf
    if math.isinf(a) or math.isinf(b):
        return 0.0 if a == b else math.inf
    return abs(a - b) / max(abs(b), 1e-12) if a != b else 0.0


def _bad(values: dict[str, float | None]) -> int:
    """NaN/Inf seen in a tensor's statistics (counts when the file has them)."""
    counted = sum(int(values.get(k) or 0) for k in ("nan", "neg_inf", "pos_inf"))
    if counted:
        return counted
    return sum(
        1
        for k in ("max", "min", "mean", "l2norm")
        if values.get(k) is not None and not math.isfinite(values[k])  # type: ignore[arg-type]
    )


def _keyed(rows) -> dict[tuple[str, str, int, int], object]:
    seen: dict[tuple[str, str, int], int] = {}
    out = {}
    for row in rows:
        n = seen.get(row.key, 0)
        seen[row.key] = n + 1
        out[(*row.key, n)] = row
    return out


def compare_files(leaf: str, on_file, off_file, threshold: float) -> list[TensorStats]:
    """Every tensor of two statistics files (StatsFile), in the fusion-on file's order."""
    on_rows, off_rows = _keyed(on_file.rows), _keyed(off_file.rows)
    shared_stats = [s for s in on_file.statistics if s in off_file.statistics]
    out: list[TensorStats] = []
    for key in [*on_rows, *(k for k in off_rows if k not in on_rows)]:
        a, b = on_rows.get(key), off_rows.get(key)
        ref = a or b
        item = TensorStats(
            leaf=leaf,
            op_name=key[0],
            op_type=ref.op_type,  # type: ignore[union-attr]
            io=key[1],
            slot=key[2],
            occurrence=key[3],
            dtype=(a.dtype if a else "", b.dtype if b else ""),  # type: ignore[union-attr]
            shape=(a.shape if a else None, b.shape if b else None),  # type: ignore[union-attr]
            on=dict(a.stats) if a else {},  # type: ignore[union-attr]
            off=dict(b.stats) if b else {},  # type: ignore[union-attr]
        )
        if a is None or b is None:
            item.status = "only_off" if a is None else "only_on"
        else:
            item.rel = {s: _rel(a.stats.get(s), b.stats.get(s)) for s in shared_stats}
            if a.dtype != b.dtype:
                item.status = "dtype"
            elif a.shape != b.shape:
                item.status = "shape"
            elif _bad(a.stats) > _bad(b.stats):
                item.status = "nan_inf"
            elif item.worst > threshold:
                item.status = "drift"
        out.append(item)
    return out


@dataclass
class StatsComparison:
    tensors: list[TensorStats]
    threshold: float
    statistics: list[str]
    notes: list[str]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for t in self.tensors:
            out[t.status] = out.get(t.status, 0) + 1
        out["compared"] = sum(1 for t in self.tensors if t.status not in ("only_on", "only_off"))
        out["ops"] = len({(t.leaf, t.op_name) for t in self.tensors})
        return out

    def first_divergence(self) -> TensorStats | None:
        """The first tensor, in execution order, whose statistics went wrong."""
        return next(
            (t for t in self.tensors if t.status in ("drift", "nan_inf", "dtype", "shape")), None
        )

    def summary(self) -> dict:
        first = self.first_divergence()
        worst = sorted((t for t in self.tensors if t.status == "drift"), key=lambda t: -t.worst)[
            :10
        ]
        return {
            "kind": "statistics",
            "threshold": self.threshold,
            "statistics": self.statistics,
            "counts": self.counts(),
            "first_divergence": _row_json(first) if first else None,
            "worst": [_row_json(t) for t in worst],
            "notes": [*self.notes, NEEDS_TENSORS],
        }


def compare_stats(pairs, threshold: float = DEFAULT_THRESHOLD) -> StatsComparison:
    """``pairs``: (label, on StatsFile, off StatsFile) for each leaf pair, in order."""
    tensors: list[TensorStats] = []
    statistics: list[str] = []
    notes: list[str] = []
    for label, on_file, off_file in pairs:
        tensors += compare_files(label, on_file, off_file, threshold)
        for s in on_file.statistics:
            if s in off_file.statistics and s not in statistics:
                statistics.append(s)
        only = sorted(set(on_file.statistics) ^ set(off_file.statistics))
        if only:
            notes.append(f"{label}: statistics recorded on one side only: {', '.join(only)}")
    return StatsComparison(tensors, threshold, statistics, notes)


def _num(v: float | None) -> float | str | None:
    if v is None:
        return None
    return v if math.isfinite(v) else str(v)


def _row_json(t: TensorStats) -> dict:
    return {
        "leaf": t.leaf,
        "op": t.op_name,
        "type": t.op_type,
        "tensor": f"{t.io}:{t.slot}",
        "occurrence": t.occurrence,
        "status": t.status,
        "dtype": list(t.dtype),
        "on": {k: _num(v) for k, v in t.on.items()},
        "off": {k: _num(v) for k, v in t.off.items()},
        "relative_difference": {k: _num(v) for k, v in t.rel.items()},
    }


def rendered_outputs(
    result: StatsComparison, out_dir: str | os.PathLike
) -> tuple[tuple[Path, str], tuple[Path, str]]:
    """``(csv path, its text), (summary path, its text)`` for ``result`` in ``out_dir``; the
    caller writes them as it writes summary.json (a link planted there is replaced, never
    written through: a review), which this package cannot import."""
    out = Path(out_dir)
    csv_path, summary_path = out / CSV_NAME, out / SUMMARY_NAME
    stats = result.statistics
    handle = io.StringIO(newline="")
    w = csv.writer(handle)
    w.writerow(
        ["Leaf", "Op Name", "Op Type", "Tensor", "Occurrence", "Status", "Data Type"]
        + [f"{s} (on)" for s in stats]
        + [f"{s} (off)" for s in stats]
        + [f"{s} relative difference" for s in stats]
    )
    for t in result.tensors:
        w.writerow(
            [
                t.leaf,
                t.op_name,
                t.op_type,
                f"{t.io}:{t.slot}",
                t.occurrence,
                t.status,
                "/".join(dict.fromkeys(d for d in t.dtype if d)),
            ]
            + [_cell(t.on.get(s)) for s in stats]
            + [_cell(t.off.get(s)) for s in stats]
            + [_cell(t.rel.get(s)) for s in stats]
        )
    summary = result.summary()
    summary["csv"] = str(csv_path.resolve())
    return (csv_path, handle.getvalue()), (summary_path, json.dumps(summary, indent=1) + "\n")


def _cell(v: float | None) -> str:
    return "" if v is None else f"{v:.6g}"
