"""What the replay reads of the fusion-on graph, as plain values to send to another process.

The replay can run in the fusion-off graph's helper (:func:`.replay_background.serve_kept`),
which never read the fusion-on graph. Sending it that graph's ops would cost more than reading
the file again (slotted objects pickle slowly: 0.25 s for 5,000 ops), and most of it is never
looked at. :func:`on_view` keeps only the ops the replay looks up, with only the attributes
it reads, as tuples, lists and dicts; :func:`graph_of_view` rebuilds them as graph :class:`Op`
objects, so that every accessor (``original_names``, ``pass_names``, ``origin_name``...)
gives what it gives on the graph read from the file.

The ops kept: every fused op (:func:`.subgraph.is_fused`), and the producers of their inputs,
following GE's pass-through ops (TransData, Cast) to the op before them, as
:func:`.subgraph.origin_of_input` walks them; with their positions in the whole graph, which
the report's order uses. Fused ops are never run, so input descs are left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..readers.graph_model import (
    ORIGINAL_OP_NAMES,
    PASS_NAME,
    PASS_NAME_UB,
    SINGLE_OP_UB_PASS_NAME,
    Op,
    TensorDesc,
)
from .subgraph import PASS_THROUGH_TYPES, is_fused, ref_name

# the attributes the replay reads of fused ops and of their output descs
OP_KEYS = frozenset((ORIGINAL_OP_NAMES, PASS_NAME, PASS_NAME_UB, SINGLE_OP_UB_PASS_NAME))
DESC_KEYS = frozenset(
    (
        "origin_shape",
        "_datadump_origin_format",
        "origin_format",
        "_datadump_origin_name",
        "_datadump_origin_output_index",
        "_datadump_origin_data_type",
        "origin_data_type",
    )
)


class OriginDesc:
    """What the replay reads of a producer's output desc: the original tensor it stands for."""

    __slots__ = ("origin_name", "origin_output_index")

    def __init__(self, origin_name: str, origin_output_index: int | None) -> None:
        self.origin_name = origin_name
        self.origin_output_index = origin_output_index


class Producer:
    """What the replay reads of an op that is not fused but feeds a fused op
    (:func:`.subgraph.origin_of_input`): the values of those accessors of the graph's
    :class:`Op`, taken when the view was made. Not fused (:func:`.subgraph.is_fused`), so
    never run or attributed."""

    __slots__ = (
        "data_inputs",
        "has_original_names",
        "msaccucmp_original_names",
        "name",
        "original_names",
        "output_descs",
        "type",
    )
    is_fused = False
    pass_names: list[str] = []  # noqa: RUF012  (read only)

    def __init__(self, row: tuple) -> None:
        _, self.name, self.type, inputs, self.has_original_names, originals, listed, origins = row
        self.data_inputs = list(inputs)
        self.original_names = list(originals)
        # None: absent, which msaccucmp reads as the op's own name
        self.msaccucmp_original_names = [self.name] if listed is None else list(listed)
        # (name, index, name, index...): one flat tuple, fewer objects to pickle
        self.output_descs = [
            OriginDesc(origins[i], origins[i + 1]) for i in range(0, len(origins), 2)
        ]


@dataclass
class OnGraphView:
    """Some ops of a graph, in its order, each with its position in the whole graph
    (:meth:`.subgraph.GraphIndex.of` reads ``positions``)."""

    name: str
    path: Path | None
    ops: list[Any] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)


def on_view(graph: Any) -> tuple | None:
    """The parts of ``graph`` the replay reads, as plain values (see the module docstring);
    None for a graph built in memory with converted attributes only (no file's raw ones)."""
    ops = list(getattr(graph, "ops", []) or [])
    fused: list[bool] = []
    walk: list[str] = []
    through: dict[str, list[str]] = {}  # pass-through op name -> its first inputs' producers
    for op in ops:
        is_it = is_fused(op)
        fused.append(is_it)
        if is_it:
            if _converted_only(op):
                return None
            walk.append(op.name)
            walk.extend(ref_name(ref)[0] for ref in op.data_inputs)
        if op.type in PASS_THROUGH_TYPES:
            inputs = op.data_inputs
            if inputs:
                through.setdefault(op.name, []).append(ref_name(inputs[0])[0])
    wanted: set[str] = set()
    while walk:
        name = walk.pop()
        if name not in wanted:
            wanted.add(name)
            walk.extend(through.get(name, ()))
    rows = [
        (_fused_row if fused[position] else _producer_row)(position, op)
        for position, op in enumerate(ops)
        if op.name in wanted
    ]
    path = getattr(graph, "path", None)
    return (getattr(graph, "name", ""), None if path is None else str(path), rows)


def _converted_only(op: Op) -> bool:
    """Attributes given converted, without the raw ones the view carries."""
    return any(not item.raw_attrs and item._attrs for item in (op, *op.output_descs))


def _fused_row(position: int, op: Op) -> list:
    """A fused op: rebuilt as an :class:`Op` (a list, where a producer's row is a tuple)."""
    raw = op.raw_attrs
    return [
        position,
        op.name,
        op.type,
        list(op.inputs),
        {key: raw[key] for key in OP_KEYS if key in raw},
        [_desc_row(desc) for desc in op.output_descs],
    ]


def _desc_row(desc: TensorDesc) -> tuple:
    raw = desc.raw_attrs
    trimmed = {key: raw[key] for key in DESC_KEYS if key in raw}
    return (desc.dtype, desc.layout, desc.shape, desc.has_attr, desc.name, trimmed)


def _producer_row(position: int, op: Op) -> tuple:
    # data inputs are walked through pass-through ops only
    inputs = op.data_inputs if op.type in PASS_THROUGH_TYPES else ()
    if op._attrs is None and ORIGINAL_OP_NAMES not in op.raw_attrs:
        names: tuple = (False, (), None)  # what the accessors give then, without them
    else:
        listed = op.msaccucmp_original_names
        names = (
            op.has_original_names,
            tuple(op.original_names),
            None if listed == [op.name] else tuple(listed),
        )
    origins = tuple(
        value for desc in op.output_descs for value in (desc.origin_name, desc.origin_output_index)
    )
    return (position, op.name, op.type, tuple(inputs), *names, origins)


def graph_of_view(view: tuple) -> OnGraphView:
    """The :class:`OnGraphView` of what :func:`on_view` gave."""
    name, path, rows = view
    graph = OnGraphView(name, None if path is None else Path(path))
    for row in rows:
        graph.ops.append(_fused_op(row) if type(row) is list else Producer(row))
        graph.positions.append(row[0])
    return graph


def _fused_op(row: list) -> Op:
    _, name, op_type, inputs, raw, outputs = row
    descs = [
        TensorDesc(dtype, layout, tuple(shape), None, has_attr, desc_name, desc_raw)
        for dtype, layout, shape, has_attr, desc_name, desc_raw in outputs
    ]
    return Op(name, op_type, inputs=inputs, raw_attrs=raw, output_descs=descs)
