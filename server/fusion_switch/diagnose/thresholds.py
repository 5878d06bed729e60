"""How one tensor's comparison row is judged: metric thresholds (defaults: formats.md 4.5),
each metric's *exceedance* (1.0 = exactly at the threshold; cosine: ``(1 - cos) / (1 - limit)``;
the others: ``value / limit``), the tensor's *badness* (its largest exceedance; out of band when
above 1), and :class:`RowIndex`, the rows judged once as they are fed (:mod:`.attribution` then
judges ops and ranks rules)."""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .json_numbers import json_number


@dataclass(frozen=True)
class Threshold:
    metric: str
    limit: float
    higher_is_better: bool

    def exceedance(self, value: float) -> float:
        """1.0 at the limit, above 1 out of band."""
        if math.isnan(value):
            return math.nan
        if self.higher_is_better:
            gap = 1.0 - self.limit
            if gap <= 0:
                return 0.0 if value >= self.limit else math.inf
            return max(0.0, (1.0 - value) / gap)
        if self.limit <= 0:
            return 0.0 if value <= self.limit else math.inf
        return abs(value) / self.limit

    def describe(self, value: float) -> str:
        op = "<=" if self.higher_is_better else ">="
        return f"{self.metric} {_against(value, self.limit)} {op} {self.limit:.15g}"


DEFAULT_THRESHOLDS: dict[str, Threshold] = {
    t.metric: t
    for t in (
        Threshold("CosineSimilarity", 0.99, True),
        Threshold("RelativeEuclideanDistance", 0.05, False),
        Threshold("KullbackLeiblerDivergence", 0.005, False),
        Threshold("RootMeanSquareError", 1.0, False),
        Threshold("MeanRelativeError", 1.0, False),
    )
}
HIGHER_IS_BETTER = {"CosineSimilarity"}
METRIC_ALIASES = {
    "cos": "CosineSimilarity",
    "cosine": "CosineSimilarity",
    "red": "RelativeEuclideanDistance",
    "kl": "KullbackLeiblerDivergence",
    "rmse": "RootMeanSquareError",
    "mre": "MeanRelativeError",
    "mae": "MeanAbsoluteError",
    "maxabs": "MaxAbsoluteError",
    "are": "AccumulatedRelativeError",
    "maxrel": "MaxRelativeError",
}
KNOWN_METRICS = (
    "CosineSimilarity",
    "MaxAbsoluteError",
    "AccumulatedRelativeError",
    "RelativeEuclideanDistance",
    "KullbackLeiblerDivergence",
    "MeanAbsoluteError",
    "RootMeanSquareError",
    "MaxRelativeError",
    "MeanRelativeError",
)


def metric_name(name: str) -> str | None:
    """Canonical metric name for a name or alias (case-insensitive), None if unknown."""
    key = name.strip()
    lower = {m.lower(): m for m in KNOWN_METRICS}
    return lower.get(key.lower()) or METRIC_ALIASES.get(key.lower())


def parse_thresholds(items: Iterable[str] | None) -> dict[str, Threshold]:
    """Defaults overridden by ``name=value`` items (``cos=0.999``, ``red=0.1``; ``kl=off`` removes
    one). Raises ValueError saying what is wrong and the known names."""
    result = dict(DEFAULT_THRESHOLDS)
    for item in items or ():
        name, sep, raw = item.partition("=")
        metric = metric_name(name)
        if not sep or metric is None:
            known = ", ".join([*KNOWN_METRICS, *sorted(METRIC_ALIASES)])
            raise ValueError(
                f"bad threshold {item!r}: expected NAME=VALUE with NAME one of {known}"
            )
        if raw.strip().lower() in ("off", "none"):
            result.pop(metric, None)
            continue
        try:
            limit = float(raw)
        except ValueError:
            raise ValueError(f"bad threshold {item!r}: {raw!r} is not a number") from None
        if not math.isfinite(limit):
            raise ValueError(f"bad threshold {item!r}: the value must be finite")
        result[metric] = Threshold(metric, limit, metric in HIGHER_IS_BETTER)
    if not result:
        raise ValueError("every threshold is switched off: nothing to judge tensors by")
    return result


class RowLike(Protocol):
    """What attribution reads from a comparison row (``compare.engine.ResultRow`` has it)."""

    npu_dump: str
    tensor_index: str  # "op:input:0" / "op:output:0"
    metrics: Mapping[str, float | None]


@dataclass
class TensorEvidence:
    tensor: str
    metrics: dict[str, float | None]
    badness: float | None
    crossed: list[str]
    via: str = ""  # how an input was judged when its own row had no numbers

    def to_json(self) -> dict:
        out = {
            "tensor": self.tensor,
            "metrics": {k: json_number(v) for k, v in self.metrics.items()},
            "badness": json_number(self.badness),
            "crossed": self.crossed,
        }
        if self.via:
            out["via"] = self.via
        return out


def judge(
    metrics: Mapping[str, float | None], thresholds: Mapping[str, Threshold]
) -> tuple[float | None, list[str]]:
    """(badness, crossed thresholds) of one tensor; badness None when no metric is available."""
    worst: float | None = None
    crossed = []
    for name, threshold in thresholds.items():
        value = metrics.get(name)
        if value is None:
            continue
        value = float(value)
        if value != value:  # NaN: no verdict from this metric
            continue
        b = threshold.exceedance(value)
        if b != b:
            continue
        if worst is None or b > worst:
            worst = b
        if b > 1.0:
            crossed.append(threshold.describe(value))
    return worst, crossed


class RowIndex:
    """Rows by tensor, each judged once (None: no numbers), fed in order: the command line feeds
    each chunk as it arrives, while the next are compared (issue 16: 28 ms less at the end)."""

    def __init__(self, thresholds: Mapping[str, Threshold] | None = None) -> None:
        self.thresholds = dict(thresholds or DEFAULT_THRESHOLDS)
        self.fed: list[RowLike] | None = []  # None: a feed failed, do not use this index
        self.row_order: dict[str, int] = {}  # op name -> position of its first row
        self.indices: dict[str, dict[str, set[int]]] = {}  # op name -> kind -> indices
        self.judged: dict[tuple[str, str, int], TensorEvidence | None] = {}

    def feed(self, rows: Sequence[RowLike]) -> RowIndex:
        fresh: dict[tuple[str, str, int], RowLike] = {}
        row_order, indices = self.row_order, self.indices
        for i, row in enumerate(rows, len(self.fed or ())):  # inlined: it runs for every row
            op_kind, _, rest = (getattr(row, "tensor_index", "") or "").rpartition(":")
            op_name, _, kind = op_kind.rpartition(":")
            if kind not in ("input", "output") or not rest.isdigit():
                continue
            key = (op_name, kind, int(rest))
            fresh[key] = row
            if op_name not in row_order:
                row_order[op_name] = i
                indices[op_name] = {kind: {key[2]}}
            else:
                indices[op_name].setdefault(kind, set()).add(key[2])
        if self.fed is not None:
            self.fed.extend(rows)
        self.judged.update(_judge_rows(fresh, self.thresholds))  # a later row of a key wins
        return self

    def indexes(self, rows: Sequence[RowLike], thresholds: Mapping[str, Threshold]) -> bool:
        """It was fed exactly ``rows`` (the same objects) and judged with ``thresholds``."""
        fed = self.fed
        if fed is None or len(fed) != len(rows) or self.thresholds != thresholds:
            return False
        return all(map(operator.is_, fed, rows))


def _judge_rows(
    by_tensor: Mapping[tuple[str, str, int], RowLike], thresholds: Mapping[str, Threshold]
) -> dict[tuple[str, str, int], TensorEvidence | None]:
    """Each row's :class:`TensorEvidence` (None: no numbers), as :func:`judge` gives it.

    Issue 16: this runs for every compared tensor (10,000 at 5,000 ops). Rows whose metrics
    are all plain floats or None (what the engine writes) take a path with the thresholds'
    arithmetic inlined; any other value (ints, numpy scalars, text) takes the general one."""
    plan = _threshold_plan(thresholds)
    out: dict[tuple[str, str, int], TensorEvidence | None] = {}
    inf = math.inf
    for key, row in by_tensor.items():
        raw = row.metrics
        one_side = non_finite_on_one_side(getattr(row, "std", None))
        plain = plan is not None
        numbers = False
        if plain:
            for v in raw.values():
                if v is None:
                    continue
                if v.__class__ is not float:
                    plain = False
                    break
                if v == v:
                    numbers = True
        if not plain:
            if not _has_numbers(raw) and one_side is None:
                out[key] = None
                continue
            metrics = {k: _num(v) for k, v in raw.items()}
            badness, crossed = judge(metrics, thresholds)
        elif not numbers and one_side is None:
            out[key] = None
            continue
        else:
            metrics = raw if type(raw) is dict else dict(raw)  # read only: the row's own
            badness = None
            crossed = []
            for name, threshold, higher_is_better, limit, gap in plan:  # judge(), inlined
                value = metrics.get(name)
                if value is None or value != value:
                    continue
                if higher_is_better:
                    if gap <= 0:
                        b = 0.0 if value >= limit else inf
                    else:
                        b = (1.0 - value) / gap
                        b = b if b > 0.0 else 0.0  # max(0.0, b), NaN included
                elif limit <= 0:
                    b = 0.0 if value <= limit else inf
                else:
                    b = abs(value) / limit
                if b != b:
                    continue
                if badness is None or b > badness:
                    badness = b
                if b > 1.0:
                    crossed.append(threshold.describe(value))
        if one_side is not None:  # the metrics then skip those values, or are NaN
            badness = math.inf
            crossed = [one_side, *crossed]
        op_name, kind, index = key
        out[key] = TensorEvidence(f"{op_name}:{kind}:{index}", metrics, badness, crossed)
    return out


def non_finite_on_one_side(std: Any) -> str | None:
    """What a row's StandardDeviation pair ``((mean, std), (mean, std))`` shows when one side
    holds NaN or infinity and the other none, else None. Each metric then skips those values
    or is NaN itself, which judges nothing: a fused op that writes NaN agreed "within the
    thresholds" (both sides NaN at once is no difference between the runs)."""
    if std is None:
        return None
    try:
        (on_mean, on_std), (off_mean, off_std) = std
        on_bad = not (math.isfinite(on_mean) and math.isfinite(on_std))
        off_bad = not (math.isfinite(off_mean) and math.isfinite(off_std))
    except (TypeError, ValueError):
        return None
    if on_bad == off_bad:
        return None
    return f"NaN or infinity in fusion {'on' if on_bad else 'off'} only"


def _threshold_plan(
    thresholds: Mapping[str, Threshold],
) -> list[tuple[str, Threshold, bool, float, float]] | None:
    """(name, threshold, higher is better, limit, gap) per threshold for the inlined
    :meth:`Threshold.exceedance`; None when one is not a plain :class:`Threshold`."""
    plan = []
    for name, threshold in thresholds.items():
        if type(threshold) is not Threshold or type(threshold.limit) is not float:
            return None
        limit = threshold.limit
        plan.append((name, threshold, threshold.higher_is_better, limit, 1.0 - limit))
    return plan


def _has_numbers(metrics: Mapping[str, float | None]) -> bool:
    return any(
        v is not None and not (isinstance(v, float) and math.isnan(v)) for v in metrics.values()
    )


def _num(value: Any) -> float | None:
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _against(value: float, limit: float) -> str:
    """``value`` as :func:`_fmt` shows it, with more digits where that would hide which side
    of ``limit`` it is on (a review: 0.99997 read "1 <= 1" against a limit of 0.99999)."""
    more = (f"{value:.{digits}g}" for digits in range(5, 18))
    return side_kept(value, limit, itertools.chain([_fmt(value)], more, [repr(value)]))


def side_kept(value: float, limit: float, texts: Iterable[str]) -> str:
    """The first of ``texts`` (``value`` shown more and more precisely) that reads on the
    same side of ``limit`` as ``value`` and not as the limit itself; the last one where none
    does. A value that is infinite, NaN or the limit itself reads as the first."""
    shown = iter(texts)
    first = last = next(shown)
    if not math.isfinite(value) or value == limit:
        return first
    for last in itertools.chain([first], shown):
        read = float(last)
        if (read > limit) == (value > limit) and read != limit:
            return last
    return last


def _fmt(value: float) -> str:
    if math.isinf(value) or math.isnan(value):
        return str(value)
    if value != 0 and (abs(value) >= 1e5 or abs(value) < 1e-3):
        return f"{value:.3g}"
    return f"{value:.4f}".rstrip("0").rstrip(".") if "." in f"{value:.4f}" else str(value)
