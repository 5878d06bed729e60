"""share_equal_attrs (issue 16, memory): equal one-member scalar attribute values of a graph become
one object, and nothing read from the graph changes: raw maps, converted attributes, every
accessor, on the real graphs and on a generated one, as the fusion-off helper reads it."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from fusion_switch.readers.graph import Graph, Op, TensorDesc, load_graph
from fusion_switch.readers.graph_model import share_equal_attrs
from fusion_switch.synth.generator import generate_case

GRAPHS = Path(__file__).resolve().parents[1] / "data" / "real" / "graphs"  # copy of shared/
REAL = sorted(p for p in GRAPHS.glob("ge_proto_*.txt") if p.stat().st_size > 1000)


def _facts(graph) -> list:
    """Everything a reader of the graph gets from its ops and descs."""
    out = []
    for op in graph.ops:
        descs = [*op.input_descs, *op.output_descs]
        out.append(
            (
                op.raw_attrs,
                op.attrs,
                op.original_names,
                op.msaccucmp_original_names,
                op.pass_names,
                op.is_fused,
                op.fusion_scope,
                [
                    (d.raw_attrs, d.attrs, d.origin_name, d.origin_output_index, d.origin_shape)
                    for d in descs
                ],
                [(d.origin_format, d.origin_data_type) for d in descs],
            )
        )
    return out


def _fresh(graph) -> Graph:
    """The graph as read, with no attribute converted yet (the accessors convert lazily)."""
    return copy.deepcopy(graph)


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_sharing_changes_nothing_a_reader_gets_from_a_real_graph(path):
    graph = load_graph(path)
    before = _facts(_fresh(graph))
    shared = share_equal_attrs(graph.ops)
    assert _facts(graph) == before
    if path.stat().st_size > 500_000:
        assert shared > 100


def test_equal_values_become_one_object_and_the_json_reading_too(tmp_path):
    case = generate_case(tmp_path / "case", n_ops=40, graph_text=False)
    graph = load_graph(case.off_graph)
    before = _facts(_fresh(graph))
    assert share_equal_attrs(graph.ops) > 0
    assert _facts(graph) == before
    seen: dict = {}
    for op in graph.ops:
        for desc in op.output_descs:
            value = desc.raw_attrs.get("_datadump_origin_data_type")
            if value is not None:
                assert seen.setdefault(value["s"], value) is value  # one dict per value
    assert share_equal_attrs(graph.ops) == 0  # nothing left to share


def test_floats_lists_and_wider_values_are_left_alone():
    minus, plus = {"f": -0.0}, {"f": 0.0}
    listed = [{"list": {"i": [1, 2]}}, {"list": {"i": [1, 2]}}]
    flags = [{"b": True}, {"i": 1}]
    op = Op(
        "a",
        "Conv2D",
        raw_attrs={"x": minus, "y": plus, "l1": listed[0], "l2": listed[1], "b": flags[0]},
        output_descs=[TensorDesc(raw_attrs={"i": flags[1], "w": {"s": "A", "i": 1}})],
    )
    other = Op("b", "Relu", raw_attrs={"b": {"b": True}, "i": {"i": 1}})
    assert share_equal_attrs([op, other]) == 2  # {"b": True} and {"i": 1} of the second op
    assert op.raw_attrs["x"] is minus and op.raw_attrs["y"] is plus  # -0.0 stays -0.0
    assert op.raw_attrs["l2"] is listed[1]
    assert other.raw_attrs["b"] is flags[0] and other.raw_attrs["i"] is flags[1]
    assert flags[0] is not flags[1]  # True and 1 are equal, but not the same value here
