"""Statistics dumps: one CSV row per op tensor with its max, min, mean or L2 norm, no tensor data.

Graph mode often allows only these. Two writers are known: MindSpore's ``statistic.csv``
(``rank_{id}/{net}/{graph_id}/{iteration}/statistic.csv``; columns ``Op Type, Op Name, Task ID,
Stream ID, Timestamp, IO, Slot, Data Size, Data Type, Shape, Max Value, Min Value, L2Norm Value``,
each row ending in an empty field; two real runs in ``samples/real/stats_dumps/``) and CANN's
``dump_data: stats``, whose CSV names the same things with some other headers (``Input/Output``,
``Index``, ``Avg Value``, NaN/Inf counts). Columns are found by header, so either reads; the CANN
variant is read from its documented header names, without a real file to check against.
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

STATS_FILE = "statistic.csv"
# canonical name -> headers that carry it (compared case-insensitively)
COLUMNS: dict[str, tuple[str, ...]] = {
    "op_type": ("Op Type",),
    "op_name": ("Op Name",),
    "task_id": ("Task ID",),
    "stream_id": ("Stream ID",),
    "timestamp": ("Timestamp",),
    "io": ("IO", "Input/Output"),
    "slot": ("Slot", "Index"),
    "size": ("Data Size",),
    "dtype": ("Data Type",),
    "format": ("Format",),
    "shape": ("Shape",),
    "max": ("Max Value", "Max"),
    "min": ("Min Value", "Min"),
    "mean": ("Avg Value", "Mean Value", "Mean"),
    "l2norm": ("L2Norm Value", "L2norm Value", "Norm Value"),
    "count": ("Count",),
    "nan": ("Nan Count", "NaN Count"),
    "neg_inf": ("Negative Inf Count",),
    "pos_inf": ("Positive Inf Count",),
}
STAT_NAMES = ("max", "min", "mean", "l2norm", "count", "nan", "neg_inf", "pos_inf")


class StatsError(ValueError):
    """A statistics CSV that cannot be read; the message names the file (and line)."""


@dataclass(frozen=True)
class StatRow:
    op_type: str
    op_name: str
    io: str  # "input" | "output" (lower case)
    slot: int
    dtype: str
    shape: tuple[int, ...] | None
    size: int | None
    stats: dict[str, float | None]  # only the statistics this file has columns for
    line: int

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.op_name, self.io, self.slot)


@dataclass
class StatsFile:
    path: Path
    columns: list[str]
    rows: list[StatRow] = field(default_factory=list)

    @property
    def statistics(self) -> list[str]:
        """The statistics this file records (canonical names, in STAT_NAMES order)."""
        have = _column_map(self.columns)
        return [name for name in STAT_NAMES if name in have]

    @property
    def ops(self) -> list[str]:
        return list(dict.fromkeys(r.op_name for r in self.rows))


def _column_map(header: list[str]) -> dict[str, int]:
    lowered = [h.strip().lower() for h in header]
    found: dict[str, int] = {}
    for name, accepted in COLUMNS.items():
        for title in accepted:
            if title.lower() in lowered:
                found[name] = lowered.index(title.lower())
                break
    return found


def is_stats_header(header: list[str]) -> bool:
    have = _column_map(header)
    return "op_name" in have and bool({"max", "min", "mean", "l2norm"} & set(have))


def looks_like_stats_csv(path: str | os.PathLike) -> bool:
    p = Path(path)
    if p.suffix.lower() != ".csv":
        return False
    try:
        with open(p, newline="", encoding="utf-8-sig", errors="replace") as handle:
            header = next(csv.reader(handle), [])
    except OSError:
        return False
    return is_stats_header(header)


def is_stats_file(path: str | os.PathLike) -> bool:
    """A statistics CSV: named statistic.csv, whatever its content (a damaged one is said
    when read, not left out unsaid), or a CSV with a statistics header."""
    return Path(path).name == STATS_FILE or looks_like_stats_csv(path)


def _number(text: str) -> float | None:
    text = text.strip()
    if not text or text.upper() in ("N/A", "NA", "NONE", "NULL", "-"):
        return None
    try:
        return float(text)
    except ValueError:
        lowered = text.lower()
        if lowered in ("nan", "+nan", "-nan"):
            return math.nan
        if lowered in ("inf", "+inf", "infinity"):
            return math.inf
        if lowered in ("-inf", "-infinity"):
            return -math.inf
        raise


def _shape(text: str) -> tuple[int, ...] | None:
    inner = text.strip().strip("()[]").strip()
    if not inner:
        return () if text.strip() in ("()", "[]") else None
    try:
        return tuple(int(d) for d in inner.replace(" ", "").split(",") if d)
    except ValueError:
        return None


def read_stats_csv(path: str | os.PathLike) -> StatsFile:
    """Read one statistics CSV; StatsError names the file, the line and what is wrong."""
    p = Path(path)
    try:
        with open(p, newline="", encoding="utf-8-sig") as handle:
            return _read(p, handle)
    except OSError as exc:
        raise StatsError(f"{p}: cannot read: {exc.strerror or exc}") from None


def _read(p: Path, handle) -> StatsFile:
    reader = csv.reader(handle)
    try:
        header = next(reader, None)
        if header is None:
            raise StatsError(
                f"{p}: empty file, not a statistics dump CSV (dump the run again; the dump "
                "stopped before writing any row)"
            )
        cols = _column_map(header)
        if not is_stats_header(header):
            raise StatsError(
                f"{p}: line 1: header {', '.join(header[:6])}... has no 'Op Name' and "
                "statistic columns (Max Value, Min Value, L2Norm Value...); not a "
                "statistics dump CSV (pass the folder a dump_data: stats run wrote)"
            )
        result = StatsFile(p, [h.strip() for h in header])
        for row in reader:
            if any(cell.strip() for cell in row):
                if len(row) < len(header):  # a row cut short (the file, at its end)
                    raise StatsError(
                        f"{p}: line {reader.line_num}: {len(row)} of the header's "
                        f"{len(header)} columns; the file is cut short or damaged"
                    )
                result.rows.append(_row(p, reader.line_num, row, cols))
    except UnicodeDecodeError as exc:
        raise StatsError(f"{p}: not UTF-8 text (byte {exc.start}); not a CSV") from None
    except csv.Error as exc:
        raise StatsError(f"{p}: line {reader.line_num}: {exc}") from None
    return result


def _row(p: Path, line: int, row: list[str], cols: dict[str, int]) -> StatRow:
    def cell(name: str) -> str:
        i = cols.get(name)
        return row[i].strip() if i is not None and i < len(row) else ""

    stats: dict[str, float | None] = {}
    for name in STAT_NAMES:
        if name in cols:
            try:
                stats[name] = _number(cell(name))
            except ValueError:
                raise StatsError(
                    f"{p}: line {line}: {name} {cell(name)!r} is not a number"
                ) from None
    slot_text = cell("slot")
    size_text = cell("size")
    return StatRow(
        op_type=cell("op_type"),
        op_name=cell("op_name"),
        io=cell("io").lower() or "output",
        slot=int(slot_text) if slot_text.isdigit() else 0,
        dtype=cell("dtype"),
        shape=_shape(cell("shape")) if "shape" in cols else None,
        size=int(size_text) if size_text.isdigit() else None,
        stats=stats,
        line=line,
    )


def read_execution_order(path: str | os.PathLike) -> list[str]:
    """MindSpore's ``execution_order/ms_execution_order_graph_{id}.csv``: op full names in the
    order the graph ran them (header ``NodeExecutionOrder-FullNameWithScope``)."""
    p = Path(path)
    try:
        with open(p, newline="", encoding="utf-8-sig") as handle:
            rows = [row for row in csv.reader(handle) if row]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise StatsError(f"{p}: cannot read: {exc}") from None
    if not rows or rows[0][0].strip() != "NodeExecutionOrder-FullNameWithScope":
        raise StatsError(f"{p}: line 1: not a MindSpore execution order file")
    return [row[0].strip() for row in rows[1:]]
