"""What the replay's child hands over to the waiting parent with sub-graphs (:mod:`.replay_share`).

The parent measures and localises handed sub-graphs exactly as the child would, from light
copies of the ops involved (:class:`OpRead`): what measuring and the localisation read of an
op, and only that. The graph's ops themselves, with their raw attributes, made the pickles
~5x larger (issue 16).
"""

from __future__ import annotations

import math
from typing import Any

from .replay_kernels import kernel_attrs
from .subgraph import GraphIndex, Subgraph, ref_name

# The attributes the localisation reads of a fused op (:func:`.localise.localise`).
FUSED_MARKS = ("pass_name_ub", "_single_op_ub_pass_name")


class DescRead:
    """What the replay reads of a tensor desc: its dtype names, shapes and layout."""

    __slots__ = ("dtype", "layout", "origin_data_type", "origin_format", "origin_shape", "shape")

    def __init__(self, desc: Any) -> None:
        self.dtype = desc.dtype
        self.origin_data_type = desc.origin_data_type
        self.origin_shape = desc.origin_shape
        self.shape = desc.shape
        self.origin_format = getattr(desc, "origin_format", "")
        self.layout = getattr(desc, "layout", "")

    def __reduce__(self) -> tuple:
        # its values in one tuple, not pickle's default for slotted objects (a dict of them per
        # object): a handover pickles in ~40% less time and loads in ~20% less, both while
        # the parent waits for it (issue 16)
        values = (self.dtype, self.layout, self.origin_data_type, self.origin_format)
        return (_desc_read, (*values, self.origin_shape, self.shape))


class OpRead:
    """What measuring a sub-graph and localising it read of an op: its name, type, data
    inputs (and, of a member, its raw inputs: an absent optional one's place), output descs,
    the attributes its kernel gets (:func:`kernel_attrs`, ``format`` included, so that
    ``kernel_attrs`` of this gives the same) and a member's input descs (a variant's axes
    range over its rank; the layout its data is dumped in); of a fused op, the
    :data:`FUSED_MARKS`."""

    __slots__ = (
        "_marks", "attrs", "data_inputs", "input_descs", "inputs", "name", "output_descs", "type"
    )  # fmt: skip

    def __init__(self, op: Any, run: bool, fused: bool = False) -> None:
        self.name = op.name
        self.type = op.type
        self.data_inputs = list(op.data_inputs)
        self.inputs = list(getattr(op, "inputs", ())) if run else []
        self.attrs = kernel_attrs(op) if run else {}  # only members are run
        descs = (getattr(op, "input_descs", None) or []) if run else []
        self.input_descs = [DescRead(desc) for desc in descs]
        self.output_descs = [DescRead(desc) for desc in op.output_descs]
        attr = getattr(op, "attr", None) if fused else None
        self._marks = {key: attr(key) for key in FUSED_MARKS} if attr is not None else {}

    def attr(self, key: str) -> Any:
        return self._marks.get(key)

    def __reduce__(self) -> tuple:  # as DescRead's
        values = (self.name, self.type, self.data_inputs, self.attrs, self.input_descs)
        return (_op_read, (*values, self.output_descs, self._marks, self.inputs))


def _desc_read(
    dtype: str, layout: str, origin_data_type: str, origin_format: str, origin_shape, shape
) -> DescRead:
    desc = DescRead.__new__(DescRead)
    desc.dtype, desc.layout, desc.shape = dtype, layout, shape
    desc.origin_data_type, desc.origin_format = origin_data_type, origin_format
    desc.origin_shape = origin_shape
    return desc


def _op_read(name, op_type, data_inputs, attrs, input_descs, output_descs, marks, inputs) -> OpRead:
    op = OpRead.__new__(OpRead)
    op.name, op.type, op.data_inputs, op.attrs = name, op_type, data_inputs, attrs
    op.inputs = inputs
    op.input_descs, op.output_descs, op._marks = input_descs, output_descs, marks
    return op


def handed_over(subs: list[Subgraph], off: GraphIndex) -> tuple[list[Subgraph], dict[str, Any]]:
    """``subs`` and the fusion-off ops their measuring looks up (:func:`looked_up`), as
    :class:`OpRead`: what :func:`.replay.measure_handed` needs, and only that."""
    seen: dict[int, OpRead] = {}

    def read(op: Any, run: bool = False, fused: bool = False) -> OpRead:
        if id(op) not in seen:
            seen[id(op)] = OpRead(op, run, fused)
        return seen[id(op)]

    members = [[read(m, run=True) for m in sub.members] for sub in subs]  # first: with attrs
    light = [
        Subgraph(
            read(sub.fused, fused=True), ops, sub.boundary, sub.outputs, sub.absent, sub.sources
        )
        for sub, ops in zip(subs, members, strict=True)
    ]
    return light, {name: read(op) for name, op in looked_up(off, subs).items()}


def looked_up(off: GraphIndex, subs: list[Subgraph]) -> dict[str, Any]:
    """The fusion-off ops a :class:`.replay.Replayer` looks up for ``subs``: the producers of
    their members' inputs and of their outputs (an op absent here is absent from the graph)."""
    names = set()
    for sub in subs:
        for member in sub.members:
            names.update(ref_name(ref)[0] for ref in member.data_inputs)
        names.update(ref_name(origin)[0] for _, origin in sub.outputs)
    return {name: off.ops[name] for name in names if name in off.ops}


def output_values(subs: list[Subgraph]) -> int:
    """Values the fused outputs of ``subs`` hold, by their descs: how heavy measuring them is."""
    total = 0
    for sub in subs:
        for desc in sub.fused.output_descs:
            shape = getattr(desc, "shape", ()) or ()
            if shape and all(isinstance(d, int) and d > 0 for d in shape):
                total += math.prod(shape)
    return total
