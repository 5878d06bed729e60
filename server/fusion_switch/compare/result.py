"""One row of the comparison result: a fusion-on tensor against its fusion-off counterpart.

A :class:`ResultRow` is what msaccucmp writes as one CSV line, kept as data: numbers as floats
for attribution and reports, and the exact cell texts for a byte-compatible CSV
(:mod:`.result_csv`). Rows without a tensor (an op whose dump file is missing) have
``tensor_index`` None and every metric None.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Literal

NAN = "NaN"
# msaccucmp's CompareFailReason for a tensor without a fusion-off counterpart (its wording)
NO_GROUND_TRUTH = "There is no the ground truth dump file"
TensorKind = Literal["input", "output"]


@dataclass(slots=True)
class ResultRow:
    """One result line. Field names follow the CSV columns. Slotted: the calling process holds
    every row until the report is written (10,000 at 5,000 ops), and an instance dict per row
    was about 10 MB of the peak.

    ``index``: msaccucmp's Index (the fusion-on op group number, rows are sorted by it).
    ``npu_dump``/``ground_truth``: fusion-on op name(s) / fusion-off op names (``*`` = none).
    ``tensor_index``: ``op:input:0`` style, None for an op-level row. ``shape``: the compared
    fusion-on shape (None when unknown). ``metrics``: name → value (None = not computed, NaN =
    computed NaN); ``metric_text``: the exact cells. ``fail_reason``: CompareFailReason parts.
    ``op_name`` is the fusion-on op of the row (also for multi-op groups, where ``npu_dump``
    lists every op of the group); ``right_op``/``right_output_index`` the fusion-off tensor.
    ``messages`` are our own explanations (clearer than, and not written to, the CSV).
    """

    index: int
    op_type: str
    npu_dump: str
    ground_truth: str
    op_name: str
    tensor_index: str | None = None
    kind: TensorKind | None = None
    position: int | None = None
    shape: tuple[int, ...] | None = None
    left_dtype: str = NAN
    left_address: str = NAN
    right_dtype: str = NAN
    right_address: str = NAN
    metrics: dict[str, float | None] = field(default_factory=dict)
    metric_text: dict[str, str] = field(default_factory=dict)
    std: tuple[tuple[float, float], tuple[float, float]] | None = None
    fail_reason: list[str] = field(default_factory=list)
    right_op: str | None = None
    right_output_index: int | None = None
    left_path: str | None = None
    right_path: str | None = None
    messages: list[str] = field(default_factory=list)

    def __reduce__(self):
        """Rows travel from the workers in bulk (10,000 at 5,000 ops): a flat tuple unpickles
        about twice as fast as the dataclass's instance dict with two dicts inside."""
        names = tuple(self.metrics)
        if tuple(self.metric_text) != names:
            return (_row_from_fields, ({f.name: getattr(self, f.name) for f in fields(self)},))
        # one tuple object for every row's names: pickle then writes a reference to it
        names = _SHARED_NAMES.setdefault(names, names)
        return (
            _row_from_state,
            (
                self.index,
                self.op_type,
                self.npu_dump,
                self.ground_truth,
                self.op_name,
                self.tensor_index,
                self.kind,
                self.position,
                self.shape,
                self.left_dtype,
                self.left_address,
                self.right_dtype,
                self.right_address,
                names,
                tuple(self.metrics.values()),
                tuple(self.metric_text.values()),
                self.std,
                self.fail_reason,
                self.right_op,
                self.right_output_index,
                self.left_path,
                self.right_path,
                self.messages,
            ),
        )

    @property
    def compared(self) -> bool:
        """True when the metrics were computed on a tensor pair."""
        return self.tensor_index is not None and any(v is not None for v in self.metrics.values())

    def value(self, name: str) -> float | None:
        return self.metrics.get(name)

    @property
    def shape_text(self) -> str:
        """msaccucmp's Shape cell: ``[1,16,8,8]``, ``NaN`` when unknown."""
        if self.shape is None:
            return NAN
        return "[" + ",".join(str(d) for d in self.shape) + "]"

    @property
    def fail_reason_text(self) -> str:
        return ",".join(self.fail_reason)


_SHARED_NAMES: dict[tuple[str, ...], tuple[str, ...]] = {}


def _row_from_fields(fields: dict) -> ResultRow:
    return ResultRow(**fields)


def _row_from_state(
    index, op_type, npu_dump, ground_truth, op_name, tensor_index, kind, position, shape,
    left_dtype, left_address, right_dtype, right_address, names, values, texts, std,
    fail_reason, right_op, right_output_index, left_path, right_path, messages,
) -> ResultRow:  # fmt: skip
    # every field named, not sliced from *state: called once per row unpickled
    return ResultRow(
        index, op_type, npu_dump, ground_truth, op_name, tensor_index, kind, position, shape,
        left_dtype, left_address, right_dtype, right_address,
        dict(zip(names, values, strict=True)), dict(zip(names, texts, strict=True)),
        std, fail_reason, right_op, right_output_index, left_path, right_path, messages,
    )  # fmt: skip


@dataclass
class CompareCounts:
    """Totals of one comparison."""

    groups: int = 0  # fusion-on op groups (distinct Index values)
    ops: int = 0  # fusion-on ops that produced rows
    rows: int = 0
    compared: int = 0  # rows with metrics
    no_left_dump: int = 0  # op-level rows: the fusion-on op has no dump
    undumped_tasks: int = 0  # of them, ops with a task (not a constant, a graph input, ...)
    no_right_dump: int = 0  # tensor rows whose fusion-off dump is missing
    failed: int = 0  # other tensor rows without metrics
    bad_files: int = 0
    dumped_ops: int = 0  # ops with dump files in the fusion-on folder
    unnamed_dumps: int = 0  # of them, ops the fusion-on graph does not name: not judged

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)
