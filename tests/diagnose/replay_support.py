"""Hand-made replay inputs shared by the replay's unit tests: a graph from a list of ops, a
chain of ops fused into one, and an evidence store holding given arrays."""

from __future__ import annotations

from fusion_switch.diagnose.evidence import MissingEvidence
from fusion_switch.diagnose.subgraph import GraphIndex, build_subgraph
from fusion_switch.readers.graph import graph_from_dict


def one_graph(ops: list[dict]):
    """A model of one graph named g holding ``ops`` (GE's JSON dump layout)."""
    return graph_from_dict({"graph": [{"name": "g", "op": ops}], "name": "g"})


def float_desc(shape, origin: str = "", index: int = 0) -> dict:
    """A float32 ND output desc; with ``origin``, the original op output (``index``) it
    stands for."""
    attrs = []
    if origin:
        attrs = [
            {"key": "_datadump_origin_name", "value": {"s": origin}},
            {"key": "_datadump_origin_output_index", "value": {"i": index}},
        ]
    return {"dtype": "DT_FLOAT", "layout": "ND", "shape": {"dim": list(shape)}, "attr": attrs}


def fused_op(inputs, members, output_descs, *, op_type: str = "Fused", ub: bool = False) -> dict:
    """A fusion-on op named "fused" reading ``inputs``, fused from the original ops
    ``members`` by pass G (and, with ``ub``, pass_name_ub U), with ``output_descs``."""
    return {
        "name": "fused",
        "type": op_type,
        "input": list(inputs),
        "attr": [
            {"key": "_datadump_original_op_names", "value": {"list": {"s": list(members)}}},
            {"key": "pass_name", "value": {"list": {"s": ["G"]}}},
            *([{"key": "pass_name_ub", "value": {"s": "U"}}] if ub else []),
        ],
        "output_desc": list(output_descs),
    }


def chain(types, shape, outputs, *, prefix: str = "m", ub: bool = True, reads=None):
    """x -> {prefix}1 -> {prefix}2 -> ..., one op per type, fused into one op named "fused"
    whose outputs stand for ``outputs``; pass_name G and, with ``ub``, pass_name_ub U.
    ``reads``: another input for some members (name -> "op:index"). Returns the sub-graph
    and the fusion-off graph's index."""
    ops = [{"name": "x", "type": "Data", "output_desc": [float_desc(shape)]}]
    for i, kind in enumerate(types, 1):
        name = f"{prefix}{i}"
        source = (reads or {}).get(name, ops[-1]["name"] + ":0")
        ops.append(
            {"name": name, "type": kind, "input": [source], "output_desc": [float_desc(shape)]}
        )
    names = [op["name"] for op in ops[1:]]
    fused = fused_op(["x:0"], names, [float_desc(shape, o) for o in outputs], ub=ub)
    on = GraphIndex.of(one_graph([ops[0], fused]))
    off = GraphIndex.of(one_graph(ops))
    return build_subgraph(on.ops["fused"], on, off), off


class MemoryStore:
    """The evidence store's ``tensor`` over a dict (side, op, kind, index) -> array; a missing
    key is missing evidence, as a dump not found is."""

    def __init__(self, tensors):
        self.tensors, self.files_read, self.unreadable = tensors, set(), {}

    def has(self, side, op):
        return any(key[:2] == (side, op) for key in self.tensors)

    def output_origin(self, side, op, index):
        return None  # no dump header here

    def dtype_code(self, side, op, kind, index):
        return None

    def tensor(self, side, op, kind, index):
        try:
            return self.tensors[(side, op, kind, index)]
        except KeyError:
            raise MissingEvidence(f"no fusion-{side} dump of {op}") from None
