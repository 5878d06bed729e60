"""Memory one comparing worker needs, for ``compare --memory-budget`` (issue 16).

A worker holds one tensor pair at a time: both sides' values, the aligned copy, and float32
work buffers for the metrics (numpy's metrics add their temporaries). Per element of the pair,
measured in a fresh process (``tests/compare/test_worker_memory.py``, one tensor of 1M
elements): with the compiled kernel 14-18 bytes (int8, float16, float32; NCHW or NC1HWC0) and
23 for a float16 tensor against a float64 one, with numpy's metrics 30-35 and 39-40. Counted
here as the fusion-on value's bytes, the fusion-off one's (its op is not paired yet: as the
fusion-on one, float32, or the fusion-off graph's widest dtype, whichever is widest), and the
work bytes below; the number of elements is the op's dump bytes over its narrowest dtype's
size, as the graph names the dtypes (an upper bound: a dump holds every input and output of
the op). A group of several ops needs its largest op's share, not their sum.

That bound counts the whole dump as one tensor, and the general path's work for it. The plan
(``engine.pair``) narrows it for the ops whose bound could be the largest: their dump headers
and the fusion-off tensors they pair with give each pair's element count, dtypes and path
(:func:`pair_need`). The direct path holds the two float32 vectors and the kernel's pieces,
~8 bytes an element: on a real network's activations a quarter of the bound, so a budget that
fitted one worker by the bound fits two.

Each comparing process starts with the pages of the process that plans (forked from it: the
graphs, the dump indexes, numpy), so a process is counted as what that one holds when it plans
(:func:`resident_bytes`), not as a fixed base: at 15,017 ops it holds ~180 MB, and two
processes counted at 96 MiB each took the tree to 434 MB under a 300 MiB budget. The planning
process also gathers the rows, :data:`ROW_BYTES` per row. Before any plan, the two graphs are
read side by side (the fusion-off one in a helper process) only when the budget holds both
(:func:`graphs_fit_together`).

The replay's fit (``diagnose.replay_budget``) counts the comparing process the same way, with
the need by the bound: it is decided before the tensors are paired. Both take that bound and
the rows from one :class:`ComparingBound`, worked out once per job (``Inputs.comparing_bound``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..readers.dtypes import data_type_code, decode_dtype
from ..readers.graph_model import ref_name

# A forked worker's own pages: interpreter, numpy, caches (~58 MB measured), where what the
# planning process holds is not known.
WORKER_BASE_BYTES = 96 << 20
# Beside what the planning process held: a comparing process's caches (headers, scratch).
PROCESS_MARGIN_BYTES = 4 << 20
# A graph read into objects, per byte of its JSON file: 3.2x (fusion on, with its dump indexes)
# and 2.6-3.0x (fusion off, in its helper) measured at 15,017 ops.
GRAPH_BYTES_PER_FILE_BYTE = 4
# The comparing process's rows and their judged index, per row (:func:`row_count`): 9,888
# rows and ~30,000 made it grow by 24 and 72 MB (5,018 and 15,017 ops), 2.4 KB a row.
ROW_BYTES = 2560
# Work bytes per element beside the two sides' values: three float32 buffers with the
# kernel and a layout conversion's copy; numpy's metrics add float32 copies and temporaries.
KERNEL_WORK_BYTES = 14
NUMPY_WORK_BYTES = 32
# The direct path (``workers.direct_plan``): the pair's two float32 vectors, and the kernel's
# pieces (64K values of each side as stored and widened) with the process's small buffers:
# 8.2-8.5 bytes an element measured on pairs of 1M elements.
DIRECT_BYTES = 8
DIRECT_PIECE_BYTES = 16  # per element of a piece: 64K at most
DIRECT_PIECE = 1 << 16
EXACT_LIMIT = 64  # ops whose headers narrow the bound, at most (0.1-0.5 ms each)
_WIDEST_ASSUMED = 4  # the fusion-off side's value: at least as the fusion-on one, or float32
_UNKNOWN_BITS = 8  # a dtype the graph does not name: as one byte per value


def dump_dtypes(op: Any, graph: Any) -> list[str]:
    """The dtypes an op's dump holds: its outputs', and its inputs' as their producers in
    ``graph`` write them (the fusion-on graph is read without input descs)."""
    dtypes = [desc.dtype for desc in op.output_descs]
    for ref in op.data_inputs:
        name, index = ref_name(ref)
        producer = graph.op(name)
        if producer is not None and 0 <= index < len(producer.output_descs):
            dtypes.append(producer.output_descs[index].dtype)
    return dtypes


def narrowest_bits(dtypes: Iterable[str]) -> int:
    """Bits per value of the narrowest of ``dtypes`` (8 for none, or one not known)."""
    return min((_bits(dtype) for dtype in dtypes), default=_UNKNOWN_BITS)


def widest_bits(dtypes: Iterable[str]) -> int:
    """Bits per value of the widest of ``dtypes`` the tool knows (0 for none)."""
    return max((_bits(dtype, 0) for dtype in dtypes), default=0)


def _bits(dtype: str, unknown: int = _UNKNOWN_BITS) -> int:
    code = data_type_code(dtype) if dtype else None
    return _code_bits(code, unknown) if code is not None else unknown


def _code_bits(code: int, unknown: int = _UNKNOWN_BITS) -> int:
    info = decode_dtype(code)
    return info.bits if info.bits > 0 else unknown


def op_need(dump_bytes: int, dtypes: Iterable[str], kernel: bool, off_bits: int = 0) -> int:
    """Bytes a worker holds beyond its base to compare an op whose dump has ``dump_bytes``
    and holds ``dtypes``; ``kernel``: the compiled metrics kernel is in use; ``off_bits``:
    the fusion-off side's widest dtype (:func:`widest_bits`, 0 when not known)."""
    if dump_bytes <= 0:
        return 0
    bits = narrowest_bits(dtypes)
    elements = dump_bytes * 8 // bits
    item = max(1, bits // 8)  # sub-byte values are unpacked to a byte each
    off_item = max(item, _WIDEST_ASSUMED, off_bits // 8)
    work = KERNEL_WORK_BYTES if kernel else NUMPY_WORK_BYTES
    return elements * (item + off_item + work)


def pair_need(left: Any, right: Any, kernel: bool, direct: bool) -> int:
    """Bytes a worker holds beyond its base to compare the dump tensors ``left`` (fusion on)
    and ``right`` (``DumpTensor``: shape, size and dtype as their headers give them) on the
    direct path, or on the general one (``direct`` False), counted as :func:`op_need` counts
    an op but with the pair's own element count and dtypes."""
    elements = max(_elements(left), _elements(right))
    if direct:
        return elements * DIRECT_BYTES + min(elements, DIRECT_PIECE) * DIRECT_PIECE_BYTES
    item = _item(left)
    off_item = max(item, _WIDEST_ASSUMED, _item(right))
    work = KERNEL_WORK_BYTES if kernel else NUMPY_WORK_BYTES
    return elements * (item + off_item + work)


def _elements(tensor: Any) -> int:
    """Values read for a dump tensor: its shape's, at most what its bytes hold (a header
    claiming more fails to read); its byte count for raw bytes (DT_UNDEFINED)."""
    size = max(0, tensor.size)
    if tensor.data_type == 0:
        return size
    held = size * 8 // _code_bits(tensor.data_type)
    return min(math.prod(tensor.shape), held) if tensor.shape else min(1, held)


def _item(tensor: Any) -> int:
    return max(1, _code_bits(tensor.data_type) // 8) if tensor.data_type else 1


def largest_op_need(
    graph: Any,
    folder: Any,
    kernel: bool,
    off_bits: int = 0,
    exact: Callable[[str], int | None] | None = None,
) -> int:
    """:func:`op_need` of the op of ``graph`` that needs most, by its newest dump in
    ``folder`` (a ``DumpDir``) and its dtypes, against a fusion-off side whose widest dtype
    has ``off_bits``; 0 when none is dumped.

    ``exact(op name)``: the op's need from its dump headers (``GroupComparer.op_memory``;
    None: not known), which narrows its bound, never widens it. Asked for the ops in
    decreasing bound, until the next bound is below the largest need found, or
    :data:`EXACT_LIMIT` of them were (the next bound then stands)."""
    bounds = []
    for op in graph.ops:
        size = folder.latest_bytes(op.name)
        if size:
            bounds.append((op_need(size, dump_dtypes(op, graph), kernel, off_bits), op.name))
    if exact is None:
        return max((bound for bound, _ in bounds), default=0)
    bounds.sort(reverse=True)
    most = 0
    for asked, (bound, name) in enumerate(bounds):
        if bound <= most:
            break
        if asked == EXACT_LIMIT:  # many ops of nearly one size: the rest by their bounds
            return bound
        need = exact(name)
        most = max(most, bound if need is None else min(need, bound))
    return most


def resident_bytes() -> int:
    """This process's resident memory now (0 where ``/proc`` does not tell it)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def worker_bytes(largest_need: int, held: int = 0) -> int:
    """Memory one comparing process needs when its largest op needs ``largest_need``: what
    the planning process ``held`` (a forked worker starts with its pages) and a margin, and
    at least :data:`WORKER_BASE_BYTES` (all of it when ``held`` is not known: 0)."""
    return max(WORKER_BASE_BYTES, held + PROCESS_MARGIN_BYTES) + largest_need


def row_count(graph: Any, dumps: Any) -> int:
    """The rows the comparison of ``graph`` (fusion on) against dumps indexed in ``dumps``
    gives, from above: a row per input and output of an op with a dump, one (its reason) for
    an op without. 11,102 at 5,018 ops for 9,888 rows, 33,221 at 15,017 for ~30,000; the
    fusion-on ops alone, counted at 8 KiB each, were 1.5-1.7x the rows' measured bytes."""
    rows = 0
    for op in graph.ops:
        if op.name in dumps:
            rows += max(1, len(op.data_inputs) + len(op.output_descs))
        else:
            rows += 1
    return rows


@dataclass(frozen=True)
class ComparingBound:
    """The comparing process's share beyond what the planning process holds, by the graph,
    the dump sizes and the dtypes alone (before the tensors are paired): its op that needs
    most (:func:`largest_op_need`) and its rows (:func:`row_count`)."""

    largest_need: int
    rows: int

    def process_bytes(self, held: int) -> int:
        """One comparing process that starts from ``held`` bytes, with the rows."""
        return worker_bytes(self.largest_need, held) + rows_bytes(self.rows)


def comparing_bound(
    graph: Any, dumps: Any, off_dtypes: Iterable[str], kernel: bool
) -> ComparingBound:
    """:class:`ComparingBound` of the fusion-on ``graph`` against ``dumps`` (a ``DumpDir``),
    with a fusion-off side whose ops output ``off_dtypes``."""
    need = largest_op_need(graph, dumps, kernel, widest_bits(off_dtypes))
    return ComparingBound(need, row_count(graph, dumps))


def rows_bytes(rows: int) -> int:
    """What the comparing process adds for ``rows`` rows (:func:`row_count`)."""
    return max(0, rows) * ROW_BYTES


def workers_within(budget: int, largest_need: int, held: int = 0, rows: int = 0) -> int:
    """How many comparing processes fit in ``budget`` bytes, each counted by
    :func:`worker_bytes`, the ``rows`` once (at least one: a budget below one process's need
    still runs, on one)."""
    return max(1, (budget - rows_bytes(rows)) // worker_bytes(largest_need, held))


def graphs_fit_together(budget: int, on_file_bytes: int, off_file_bytes: int) -> bool:
    """Whether the two graphs, read side by side (the fusion-off one in its helper process),
    fit in ``budget`` with one process's base: else the helper reads its graph, answers and
    ends before the fusion-on one is read (at 15,017 ops the two processes held 308 MB
    together while the graphs were read, over a 300 MiB budget)."""
    graphs = GRAPH_BYTES_PER_FILE_BYTE * (max(0, on_file_bytes) + max(0, off_file_bytes))
    return WORKER_BASE_BYTES + graphs <= budget
