"""Compare the ops of some fusion-on groups and return their result rows (runs in any process).

This is msaccucmp's per-group comparison (``FusionOpComparison``) over our readers: for every op
of a group, read its fusion-on dump, pair each input and output with a fusion-off tensor
(:mod:`.pairing`), align the two (:mod:`.align`) and compute the metrics (:mod:`.metrics`). How a
group's rows are made depends on its relation (one op per group, several ops, L1 fusion), and so
do msaccucmp's quirks reproduced here: which ops are skipped, when a missing dump gives a row
and when it gives none.

Memory stays bounded: one tensor pair is decoded at a time and dropped after its metrics; only
dump headers are cached.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..readers import array_reuse
from ..readers.dump import DumpError, DumpFile, DumpTensor, read_dump
from ..readers.dumpdir import DumpDir
from ..readers.ffts_merge import op_dump_location, read_op_dump
from .align import (
    FRACTAL_NZ,
    NC1HWC0,
    NCHW,
    ND,
    NHWC,
    Aligned,
    AlignError,
    TensorView,
    _maybe_swap_nchw,
    align,
    is_scalar_shape,
)
from .metrics import (
    NAN_TEXT,
    SCRATCH,
    SizeMismatchError,
    cells_from_bytes,
    kernel_in_use,
    metric_cells,
    release_kernel_buffer,
    stored_source,
    stored_tensor,
)
from .pairing import (
    MergedRule,
    Relation,
    RightRef,
    RuleOp,
    Unpaired,
    group_labels,
    op_labels,
    relation,
)
from .parent_death import alive, arm_parent_death_signal
from .result import NAN, NO_GROUND_TRUTH, ResultRow
from .result_csv import CsvLayout, RenderedRows, render_rows
from .worker_memory import pair_need

_HEADER_CACHE_SIZE = 256
# File bytes the cached headers may hold (a small file is read whole, see read_dump): at
# 256 files of ~50 KB, 13 MB went round and round the heap of each measuring process, ~3,500
# fresh pages faulted in per process at 5,000 ops, while every re-use of a fusion-off file
# there came within 10 files of its previous use (issue 16).
_HEADER_CACHE_BYTES = 2 * 1024 * 1024
_SCRATCH_LIMIT = 16 * 1024 * 1024  # elements; bigger work buffers are freed after each op


def release_work_buffers() -> None:
    """Let the metrics' work buffers go once this process has compared its tensors: they are
    sized to the largest tensor (tens of MB each on real activations), and the process goes
    on to the replay's share and the outputs (issue 16). The kernel's decoding buffer too:
    kept, it held the largest pair's 51 MB through a real-sized run's replay after the
    comparison (a 300 MiB budget's peak 249 -> 299 MiB)."""
    SCRATCH.release_if_larger(0)
    release_kernel_buffer()


@dataclass
class JobContext:
    """Everything a worker needs; picklable, sent once per worker process."""

    merged: MergedRule
    left: DumpDir  # fusion-on dumps ("my output")
    right: DumpDir  # fusion-off dumps ("ground truth")
    algorithms: list[str]
    max_cmp_size: int = 0
    csv_layout: CsvLayout | None = None  # set: a worker process renders its rows' CSV lines


@dataclass
class ChunkResult:
    """Rows of some consecutive groups, plus what went wrong on the way."""

    chunk: int
    rows: list[ResultRow] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # bad files: "path: problem"
    ops: int = 0  # fusion-on ops handled
    cancelled: bool = False
    rendered: RenderedRows | None = None  # the rows' CSV lines, when a worker rendered them


class _Failure(Exception):
    """The fusion-on op cannot be compared at all (msaccucmp: an op-level NaN row)."""

    def __init__(self, reason: str, missing: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.missing = missing  # no dump file (msaccucmp skips such ops in multi-op groups)


def no_left_dump_reason(op: RuleOp) -> str:
    name = op.name
    return f'[{name}] There is no dump file for my output operator "{name}". The type is {op.type}.'


def no_right_dump_reason(op_name: str, tensor_id: str) -> str:
    return f"[{op_name}] {NO_GROUND_TRUTH} for {tensor_id}."


def right_dump_reason(error: DumpError) -> str:
    """The CSV's reason for a fusion-off dump file that cannot be read: ours, but msaccucmp's
    own words for an empty file (its size check comes before any parsing)."""
    if getattr(error, "rows", False):  # FFTS+ parts that do not fit: msaccucmp says nothing
        return ""
    if error.file_size != 0:
        return str(error)
    path = error.path
    return f"Failed to parse dump file {path!r}. The file size is zero. Please check the dump file."


def _address(tensor: DumpTensor) -> str:
    return str(tensor.address) if tensor.address else NAN


def _msaccucmp_shape(tensor: DumpTensor) -> tuple[int, ...]:
    """The shape msaccucmp assigns a dump tensor: DT_UNDEFINED data with bytes present becomes
    ``[size]`` (a byte count); an empty shape stays empty (a scalar)."""
    if tensor.size and tensor.data_type == 0:
        return (tensor.size,)
    return tuple(tensor.shape)


def _with_tensors(dump: DumpFile) -> DumpFile:
    """``dump``, or DumpError when its header is empty (its first 8 bytes zeroed: no op name,
    no time, no tensor), a bad file, as the replay says (``diagnose.evidence``). Without the
    replay it was taken for a dump of an op with no output, and the verdict said nothing (a
    review). A header that names its op and holds no tensor (an op with no input dumped in
    input mode) stays a dump."""
    if dump.header_len == 0:
        raise DumpError(dump.path, "the dump holds no tensor")
    return dump


def _values(dump: DumpFile, tensor: DumpTensor) -> np.ndarray:
    """Decoded values as msaccucmp sees them: a tensor with a 0 dimension is an empty float64
    array, a tensor without dimensions is its first element."""
    if 0 in tensor.shape:
        return np.empty(tensor.shape, dtype=np.float64)
    values = dump.array(tensor, copy=False)  # only read: aligned, cast, measured
    if not tensor.shape and tensor.data_type != 0:
        return values.reshape(-1)[:1]
    return values


_DTYPE_NAMES: dict[np.dtype, str] = {}


def _dtype_name(dtype: np.dtype) -> str:
    """``str(dtype)`` (msaccucmp's DataType cell), cached: numpy builds it in Python."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype)
    return name


class GroupComparer:
    """Compares groups of one job; keeps a small cache of fusion-off dump headers."""

    def __init__(self, ctx: JobContext, groups: list[list[RuleOp]] | None = None) -> None:
        """``groups``: ``ctx.merged.ordered_groups()`` when the caller has it already (a
        forked worker gets its parent's: sorting there again wrote to pages it shares)."""
        self.ctx = ctx
        self.groups = groups if groups is not None else ctx.merged.ordered_groups()
        self._headers: OrderedDict[Path, DumpFile | DumpError] = OrderedDict()
        self._header_bytes = 0  # file bytes held by the cached headers
        self.errors: list[str] = []
        self._reported: set[str] = set()
        self._right_is_npy = ctx.right.is_npy  # one file per output; scanning it is not free
        # the direct path (_measure_raw) needs the compiled kernel and whole tensors
        self._raw = not ctx.max_cmp_size and kernel_in_use()
        # bound once: looked up for each of 10,000 tensors at 5,000 ops
        self._resolve = ctx.merged.resolve
        self._right_latest = ctx.right.latest_location  # text: no Path per file
        self._merged: dict[str, str] = {}  # an FFTS+ op's merged dump's path -> the op

    # ------------------------------------------------------------------ files

    def _error(self, error: DumpError | str) -> None:
        """A bad file, said once however many rows read it."""
        text = str(error)
        if text not in self._reported:
            self._reported.add(text)
            self.errors.append(text)

    def _no_values(
        self, dump: DumpFile, tensor: DumpTensor, right_dump: DumpFile, right_tensor: DumpTensor
    ) -> None:
        """One side of a pair has a 0 in its shape, the other has values: msaccucmp's row
        stands (an empty array), and the file is a bad one, a dump the verdict needs. Without
        the replay, which said so, the verdict said nothing of it (a review)."""
        empty_dump, empty = (dump, tensor) if 0 in tensor.shape else (right_dump, right_tensor)
        self._error(
            f"{empty_dump.path}: {empty.name} has a 0 in its shape {list(empty.shape)}: no values"
        )

    def _header(self, path: str) -> DumpFile:
        """A fusion-off dump file's header (or its error), from a small LRU cache: the same
        file serves the neighbouring ops of a group. At most :data:`_HEADER_CACHE_SIZE` files
        and :data:`_HEADER_CACHE_BYTES` of their bytes (the newest one whatever its size)."""
        headers = self._headers
        cached = headers.get(path)
        if cached is None:
            merged = self._merged.get(path)
            try:
                if merged is None:
                    cached = _with_tensors(read_dump(path))
                else:
                    cached = _with_tensors(read_op_dump(self.ctx.right, merged))
            except DumpError as error:
                cached = error
            headers[path] = cached
            self._header_bytes += _held_bytes(cached)
            while len(headers) > 1 and (
                len(headers) > _HEADER_CACHE_SIZE or self._header_bytes > _HEADER_CACHE_BYTES
            ):
                _, dropped = headers.popitem(last=False)
                self._header_bytes -= _held_bytes(dropped)
        else:
            headers.move_to_end(path)
        if isinstance(cached, DumpError):
            self._error(cached)
            raise cached
        return cached

    def _left(self, op: RuleOp) -> DumpFile:
        try:  # its newest file, or its FFTS+ files merged
            dump = read_op_dump(self.ctx.left, op.name)
            if dump is None:
                raise _Failure(no_left_dump_reason(op), missing=True)
            return _with_tensors(dump)
        except DumpError as error:
            self._error(error)
            if getattr(error, "rows", False):  # msaccucmp's words for FFTS+ parts that do not fit
                raise _Failure(no_left_dump_reason(op), missing=False) from None
            raise _Failure(f"[{op.name}] {error}", missing=False) from None

    # ------------------------------------------------------------------ groups

    def compare_groups(self, positions: list[int], chunk: int, stop=None) -> ChunkResult:
        """The rows of the groups at ``positions``, as chunk number ``chunk``."""
        # numpy's error state once per chunk, not per tensor: the kernel calls np.log, and
        # entering np.errstate for each of 5,000 calls was a few percent of the stage. The
        # buffers of very large tensors reuse each other's pages (.array_reuse).
        with np.errstate(all="ignore"), array_reuse.reusing_arrays(array_reuse.ALWAYS_MAPPED_BYTES):
            return self._compare_groups(positions, chunk, stop)

    def _compare_groups(self, positions: list[int], chunk: int, stop) -> ChunkResult:
        result = ChunkResult(chunk)
        for position in positions:
            if stop is not None and stop.is_set():
                result.cancelled = True
                break
            members = self.groups[position]
            try:
                rows, ops = self.compare_group(members)
            except Exception as error:  # a bug must not lose the other groups' rows
                reason = f"internal error while comparing {members[0].name}: {error!r}"
                self.errors.append(reason)
                rows, ops = (
                    [self._op_row(members[0], op_labels(members[0]), [reason])],
                    len(members),
                )
            result.rows.extend(rows)
            result.ops += ops
            SCRATCH.release_if_larger(_SCRATCH_LIMIT)
        result.errors = self.errors
        self.errors = []
        return result

    def compare_group(self, members: list[RuleOp]) -> tuple[list[ResultRow], int]:
        """Rows of one group, in msaccucmp's order, and the number of ops looked at."""
        kind = relation(members)
        if kind in (Relation.ONE_TO_ONE, Relation.MULTI_TO_ONE):
            return self._any_to_one(members), len(members)
        labels = group_labels(members)
        if kind == Relation.L1_FUSION:
            chosen = self._l1_members(members)
            if not chosen:
                return [
                    self._op_row(members[0], labels, ["The fusion operator list is empty"])
                ], len(members)
            return self._any_to_multi(members, chosen, labels, check_inner=False), len(members)
        return self._any_to_multi(members, members, labels, check_inner=True), len(members)

    def _any_to_one(self, members: list[RuleOp]) -> list[ResultRow]:
        rows: list[ResultRow] = []
        for op in members:
            if op.quant_filter:
                continue
            labels = op_labels(op)
            try:
                op_rows = self.compare_op(op, labels)
            except _Failure as failure:
                rows.append(self._op_row(op, labels, [failure.reason]))
                continue
            rows.extend(op_rows or [self._op_row(op, labels, [])])
        return rows

    def _any_to_multi(
        self,
        members: list[RuleOp],
        chosen: list[RuleOp],
        labels: tuple[str, str],
        check_inner: bool,
    ) -> list[ResultRow]:
        rows: list[ResultRow] = []
        reasons: list[str] = []
        produced = False
        for op in chosen:
            if op.quant_filter:
                continue
            if check_inner and op.is_inner_node:
                reasons.append(
                    f"[{op.name}] The op is inner node for multi to multi relation.Skip the op."
                )
                continue
            try:
                op_rows = self.compare_op(op, labels)
            except _Failure as failure:
                reasons.append(failure.reason)
                if failure.missing:
                    continue
                # msaccucmp writes an empty reason for a failure other than a missing file
                op_rows = [self._op_row(op, labels, [])]
                op_rows[0].messages.append(failure.reason)
            produced = True
            reasons.clear()
            rows.extend(op_rows or [self._op_row(op, labels, [])])
        if not produced:
            rows.append(self._op_row(members[0], labels, reasons))
        return rows

    def _l1_members(self, members: list[RuleOp]) -> list[RuleOp]:
        """msaccucmp's choice in an L1 group: the op dumped last, and the one dumped first when
        it stands for other original ops."""
        stamped = []
        for op in members:
            stamp = self.ctx.left.sort_stamp(op.name)  # as msaccucmp reads it from the name
            if stamp is not None:
                stamped.append((stamp, op))
        stamped.sort(key=lambda item: item[0])
        if not stamped:
            return []
        first, last = stamped[0][1], stamped[-1][1]
        chosen = []
        if first.original_names != last.original_names:
            chosen.append(first)
        chosen.append(last)
        return chosen

    def _op_row(self, op: RuleOp, labels: tuple[str, str], reasons: list[str]) -> ResultRow:
        return ResultRow(
            index=op.group,
            op_type=op.type,
            npu_dump=labels[0],
            ground_truth=labels[1],
            op_name=op.name,
            metrics={name: None for name in self.ctx.algorithms},
            metric_text={name: NAN_TEXT for name in self.ctx.algorithms},
            fail_reason=list(reasons),
        )

    # ------------------------------------------------------------------ one op

    def compare_op(self, op: RuleOp, labels: tuple[str, str]) -> list[ResultRow]:
        """Rows for every dumped input and output of one fusion-on op."""
        dump = self._left(op)
        left_path = str(dump.path)
        rows = []
        if not op.is_dequant:
            rows += [self.compare_tensor(op, labels, dump, t, True, left_path) for t in dump.inputs]
        if not op.skips_outputs:
            rows += [
                self.compare_tensor(op, labels, dump, t, False, left_path) for t in dump.outputs
            ]
        return rows

    def compare_tensor(
        self,
        op: RuleOp,
        labels: tuple[str, str],
        dump: DumpFile,
        tensor: DumpTensor,
        is_input: bool,
        left_path: str | None = None,
    ) -> ResultRow:
        kind = "input" if is_input else "output"
        index = tensor.index
        tensor_id = f"{op.name}:{kind}:{index}"
        if left_path is None:
            left_path = str(dump.path)
        shape = (tensor.size,) if tensor.size and tensor.data_type == 0 else tuple(tensor.shape)
        address = tensor.address
        row = ResultRow(
            op.group,
            op.type,
            labels[0],
            labels[1],
            op.name,
            tensor_id,
            kind,
            index,
            shape,  # _msaccucmp_shape() and _address() inline: once per tensor
            left_address=str(address) if address else NAN,
            left_path=left_path,
        )
        try:
            aligned, right_path = self.load_pair(row, op, dump, tensor, is_input, tensor_id, shape)
            if aligned is not None:  # None: the direct path filled the row already
                self.measure_pair(row, aligned, left_path, right_path)
        except _RowFailure as failure:
            _failed(row, self.ctx.algorithms, failure.csv_reason, failure.reason)
        except Exception as error:  # a bug or an unforeseen file: this tensor only (issue 12)
            reason = f"internal error while comparing {tensor_id}: {error!r}"
            self.errors.append(reason)
            _failed(row, self.ctx.algorithms, reason, reason)
        return row

    def load_pair(
        self,
        row: ResultRow,
        op: RuleOp,
        dump: DumpFile,
        tensor: DumpTensor,
        is_input: bool,
        tensor_id: str,
        shape: tuple[int, ...] | None = None,
    ) -> tuple[Aligned | None, str]:
        """Stage ``load``: find the fusion-off tensor paired with ``tensor``, decode both and
        bring them to one layout. Fills the row's pairing cells; raises :class:`_RowFailure`.
        Returns the aligned pair and the fusion-off file's path; no pair when the common case
        was measured straight from the files' bytes (:meth:`_measure_raw`, row filled)."""
        ref = self._resolve(op, tensor.index, is_input)
        if isinstance(ref, Unpaired):
            if ref.no_dump:
                raise _RowFailure(no_right_dump_reason(op.name, tensor_id), ref.reason)
            raise _RowFailure(
                ref.csv_reason if ref.csv_reason is not None else ref.reason, ref.reason
            )
        row.right_op, row.right_output_index = ref.op_name, ref.output_index
        right_path, output_index = self._right_file(ref)
        if right_path is None:
            raise _RowFailure(
                no_right_dump_reason(op.name, tensor_id),
                f"no fusion-off dump file for {ref.op_name} (paired with {tensor_id})",
            )
        right_text = row.right_path = right_path
        try:
            right_dump = self._header(right_path)
        except DumpError as error:  # msaccucmp's own words for an empty file, ours in the notes
            raise _RowFailure(right_dump_reason(error), str(error)) from None
        if output_index >= len(right_dump.outputs):
            raise _RowFailure(
                "",
                f"{right_path}: fusion-off op {ref.op_name} has {len(right_dump.outputs)} "
                f"output(s); output {ref.output_index} was paired with {tensor_id}",
            )
        right_tensor = right_dump.outputs[output_index]
        if (0 in tensor.shape) is not (0 in right_tensor.shape):
            self._no_values(dump, tensor, right_dump, right_tensor)
        if self._raw and self._measure_raw(row, dump, tensor, right_dump, right_tensor):
            return None, right_text
        try:
            left_values = _values(dump, tensor)
            right_values = _values(right_dump, right_tensor)
        except DumpError as error:
            self._error(error)
            raise _RowFailure(str(error), str(error)) from None
        try:
            aligned = align(
                TensorView(
                    tensor.format,
                    _msaccucmp_shape(tensor) if shape is None else shape,
                    left_values,
                    tensor.original_shape,
                    tensor.sub_format,
                ),
                TensorView(right_tensor.format, _msaccucmp_shape(right_tensor), right_values),
                op.name,
            )
        except AlignError as error:
            raise _RowFailure(error.csv_reason, error.reason) from None
        return aligned, right_text

    def _right_file(self, ref: RightRef) -> tuple[str | None, int]:
        """The newest fusion-off dump file of ``ref``'s op, and the output's place in it."""
        if self._right_is_npy:  # one file per output: {op}.{output}.{timestamp}.npy
            return self._right_latest(ref.op_name, ref.output_index), 0
        if self.ctx.right.ffts_mode(ref.op_name) is None:
            return self._right_latest(ref.op_name), ref.output_index
        path = op_dump_location(self.ctx.right, ref.op_name)  # FFTS+ files: merged, by _header
        self._merged[path] = ref.op_name
        return path, ref.output_index

    def op_memory(self, op: RuleOp) -> int | None:
        """Bytes this process holds beyond its base to compare ``op``'s tensors (the largest
        pair's :func:`.worker_memory.pair_need`), from their dump headers and the path each
        pair takes; 0 when nothing of it is compared, None when a header cannot be read
        (the caller keeps its bound from the file's size)."""
        try:
            dump = self._left(op)
        except _Failure as failure:
            return 0 if failure.missing else None
        tensors = [] if op.is_dequant else [(t, True) for t in dump.inputs]
        if not op.skips_outputs:
            tensors += [(t, False) for t in dump.outputs]
        kernel = kernel_in_use()
        most = 0
        for tensor, is_input in tensors:
            ref = self._resolve(op, tensor.index, is_input)
            if isinstance(ref, Unpaired):
                continue
            right_path, output_index = self._right_file(ref)
            if right_path is None:
                continue
            try:
                right_dump = self._header(right_path)  # an op's inputs often share one file
            except DumpError:
                return None
            if output_index >= len(right_dump.outputs):
                continue
            right = right_dump.outputs[output_index]
            direct = self._raw and direct_plan(dump, tensor, right_dump, right) is not None
            held = _held_bytes(dump) + _held_bytes(right_dump)
            most = max(most, held + pair_need(tensor, right, kernel, direct))
        return most

    def measure_pair(
        self, row: ResultRow, aligned: Aligned, left_path: str, right_path: str
    ) -> None:
        """Stage ``measure``: the selected metrics of an aligned pair, into the row's cells."""
        try:
            cells = metric_cells(
                aligned.left,
                aligned.right,
                self.ctx.algorithms,
                scalar=aligned.scalar,
                left_path=left_path,
                right_path=right_path,
                max_cmp_size=self.ctx.max_cmp_size,
            )
        except SizeMismatchError as error:
            raise _RowFailure(str(error), str(error)) from None
        row.shape = aligned.shape
        row.left_dtype = _dtype_name(aligned.left.dtype)
        row.right_dtype = _dtype_name(aligned.right.dtype)
        row.metrics, row.metric_text, row.fail_reason, std = cells
        if std is not None:
            row.std = std

    def _measure_raw(
        self,
        row: ResultRow,
        dump: DumpFile,
        tensor: DumpTensor,
        right_dump: DumpFile,
        right_tensor: DumpTensor,
    ) -> bool:
        """The common case (:func:`direct_plan`) in one kernel call from the files' bytes
        (those read with the headers, else each tensor's own): what :func:`.align` and
        :meth:`measure_pair` would give. False, nothing done, for anything else: the general
        path then runs and writes its usual messages."""
        plan = direct_plan(dump, tensor, right_dump, right_tensor)
        if plan is None:
            return False
        left, right, n, shape, scalar, blocks = plan
        left_path, right_path = row.left_path or "", row.right_path or ""
        opened: list[int] = []
        try:
            cells = cells_from_bytes(
                self.ctx.algorithms,
                (stored_source(dump, left[0], opened), *left[1:3], left_path),
                (stored_source(right_dump, right[0], opened), *right[1:3], right_path),
                n,
                scalar,
                blocks,
            )
        except (TypeError, ValueError, BufferError, OSError):  # bytes the kernel turned down
            return False  # or a file it could not read: the general path reads it, says why
        finally:
            for fd in opened:
                os.close(fd)
        row.shape = shape
        row.left_dtype = left[3]
        row.right_dtype = right[3]
        row.metrics, row.metric_text, row.fail_reason, std = cells
        if std is not None:
            row.std = std
        return True


def direct_plan(
    dump: DumpFile, tensor: DumpTensor, right_dump: DumpFile, right_tensor: DumpTensor
) -> tuple | None:
    """What the direct path needs to measure a pair, when it can: both tensors ND with the
    same element count in a plain dtype the kernel decodes, or a layout it converts (the
    same 4-D layout, NC1HWC0 blocks, FRACTAL_NZ tiles). ``(left, right, n, shape, scalar,
    blocks)``: the two :func:`.stored_tensor` tuples, the element count, the Shape cell and
    the scalar test as :func:`.align` gives them (the flat count for ND), and the layout's
    blocks (None for none); None for anything else."""
    blocks = None
    kept = False  # same 4-D layout and shape: align keeps the shape as it is
    if tensor.format != ND or right_tensor.format != ND:
        kept = _same_layout(tensor, right_tensor)
        if not kept:
            blocks = _nc1hwc0_blocks(tensor, right_tensor) or _nz_tiles(tensor, right_tensor)
            if blocks is None:
                return None
    left = stored_tensor(dump, tensor)
    if left is None:
        return None
    right = stored_tensor(right_dump, right_tensor)
    if right is None or (blocks is None and right[4] != left[4]):
        return None
    n = right[4]
    if kept:
        shape, scalar = tuple(tensor.shape), False  # _same_layout turned scalars down
    elif blocks is None:
        shape, scalar = (n,), n == 1
    else:
        shape = tuple(right_tensor.shape)
        scalar = is_scalar_shape(shape)
    return left, right, n, shape, scalar, blocks


def _held_bytes(cached: DumpFile | DumpError) -> int:
    """The file bytes a cached header keeps in memory (a small file's whole content)."""
    content = getattr(cached, "_content", None)
    return len(content) if content is not None else 0


def _same_layout(tensor: DumpTensor, right: DumpTensor) -> bool:
    """Whether :func:`.align` leaves the pair as it is but for its 4-D shape: both NCHW (or both
    NHWC) of one 4-D shape, not a scalar, and no relabelling of the fusion-off format by the
    fusion-on original shape (``_maybe_swap_nchw``). Its Shape cell is then that 4-D shape."""
    layout = tensor.format
    if layout != right.format or layout not in _KEPT_LAYOUTS:
        return False
    shape = tensor.shape
    if len(shape) != 4 or shape != right.shape or is_scalar_shape(shape):
        return False
    target = tuple(tensor.original_shape) or tuple(right.shape)
    name = _KEPT_LAYOUTS[layout]
    return _maybe_swap_nchw(name, target, tuple(right.shape)) == name


_KEPT_LAYOUTS = {NCHW: "NCHW", NHWC: "NHWC"}


def _nc1hwc0_blocks(tensor: DumpTensor, right: DumpTensor) -> tuple[int, ...] | None:
    """``(N, C1, H, W, C0, C)`` when :func:`.align` would turn the fusion-on ``tensor`` from
    NC1HWC0 into the fusion-off NCHW ``right`` by its transpose and a cut of the padded channels
    alone (N, H, W equal, C <= C1*C0, not a scalar, no group, no NCHW/NHWC relabelling); else
    None, and the general path converts (or explains why not)."""
    if tensor.format != NC1HWC0 or right.format != NCHW or tensor.sub_format >= 2:
        return None
    shape, truth = tensor.shape, right.shape
    if len(shape) != 5 or len(truth) != 4 or is_scalar_shape(shape):
        return None
    n, c1, h, w, c0 = shape
    if truth[0] != n or truth[2] != h or truth[3] != w or not 0 < truth[1] <= c1 * c0:
        return None
    target = tuple(tensor.original_shape) or tuple(truth)
    if _maybe_swap_nchw("NCHW", target, tuple(truth)) != "NCHW":
        return None
    return (n, c1, h, w, c0, truth[1])


def _nz_tiles(tensor: DumpTensor, right: DumpTensor) -> tuple[int, ...] | None:
    """``(B, C1, N1, N0, C0, R, C)`` when :func:`.align` would turn the fusion-on FRACTAL_NZ
    ``tensor`` into the fusion-off ND ``right`` of shape (B, R, C) by ``_nz_to_nd`` alone: a
    3-D target (the original shape, else the fusion-off shape) equal to the fusion-off shape,
    the batch dims' product B, R and C within the padded tiles by less than a tile (align's
    ``_check_nz_target``), not a scalar, no group; else None, and the general path converts
    (or explains why not)."""
    if tensor.format != FRACTAL_NZ or right.format != ND or tensor.sub_format >= 2:
        return None
    shape, truth = tensor.shape, right.shape
    target = tuple(tensor.original_shape) or tuple(truth)
    if len(shape) < 4 or len(truth) != 3 or target != tuple(truth) or is_scalar_shape(shape):
        return None
    c1, n1, n0, c0 = shape[-4:]
    batch, rows, cols = truth
    if len(shape) != 5 or shape[0] != batch:  # origin's leading dims must equal the target's
        return None
    if not (n1 * n0 - 16 < rows <= n1 * n0 and c1 * c0 - 16 < cols <= c1 * c0):
        return None
    return (batch, c1, n1, n0, c0, rows, cols)


def _failed(row: ResultRow, algorithms: list[str], csv_reason: str, reason: str) -> None:
    """Make ``row`` a row without metrics, saying why."""
    row.metrics = dict.fromkeys(algorithms)
    row.metric_text = dict.fromkeys(algorithms, NAN_TEXT)
    row.fail_reason = [csv_reason]
    row.messages.append(reason)
    row.left_dtype = row.right_dtype = NAN


class _RowFailure(Exception):
    def __init__(self, csv_reason: str, reason: str) -> None:
        super().__init__(reason)
        self.csv_reason = csv_reason
        self.reason = reason


# ----------------------------------------------------------------------------- process pool

_COMPARER: GroupComparer | None = None
_STOP = None


def init_worker(
    ctx: JobContext, stop, parent: int | None = None, groups: list[list[RuleOp]] | None = None
) -> None:
    """Process-pool initializer: keep the job context in this process, and never outlive the
    parent (``parent``: its pid). ``groups``: the parent's ``ordered_groups()``."""
    global _COMPARER, _STOP
    # Ctrl-C and a SIGTERM to the whole process group reach us too: the parent cancels through
    # ``stop`` and shuts the pool down instead, so that it can remove its temporary files.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if parent is not None:
        die_with_parent(parent)
    _COMPARER = GroupComparer(ctx, groups)
    _STOP = stop


_WATCH_SECONDS = 0.5


def die_with_parent(parent: int) -> None:
    """End this process as soon as its parent is gone, even when it was killed with SIGKILL
    (which it cannot forward): the kernel's parent-death signal on Linux, and everywhere a
    daemon thread that exits when this process is re-parented. ``parent`` is the job's
    process; with the forkserver start method the direct parent is the fork server, which
    itself ends with the job's process."""
    watched = os.getppid()
    arm_parent_death_signal(signal.SIGKILL)
    if os.getppid() != watched or not alive(parent):  # gone before the signal was armed
        os._exit(1)

    def watch() -> None:
        while os.getppid() == watched:
            time.sleep(_WATCH_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def run_chunk(chunk: int, positions: list[int]) -> ChunkResult:
    """Process-pool task: compare the groups at ``positions`` (of ``ordered_groups()``)."""
    assert _COMPARER is not None, "init_worker was not called"
    return rendered_chunk(_COMPARER, chunk, positions, _STOP)


def rendered_chunk(comparer: GroupComparer, chunk: int, positions: list[int], stop=None):
    """:meth:`GroupComparer.compare_groups`, with the rows' CSV lines rendered here when the
    job asks for them: in a worker process, so that the comparing process, which measures
    chunks too, spends less of its time writing the file (issue 16)."""
    result = comparer.compare_groups(positions, chunk, stop)
    layout = comparer.ctx.csv_layout
    if layout is not None and not result.cancelled:
        result.rendered = render_rows(result.rows, layout)
    return result
