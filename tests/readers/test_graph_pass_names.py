"""``Op.pass_names`` answers [] at once for an op without any pass-name key (issue 16: two
thirds of a model's ops, read by the attribution for every op). Checked against the reading
it shortcuts (pass_name, then the UB names, duplicates and empties dropped) on real graphs,
generated ones and hand-made edge cases (keys present but empty, converted attrs)."""

from __future__ import annotations

import pytest
from fusion_switch.readers.graph import (
    PASS_NAME,
    Op,
    _string_list,
    graph_from_dict,
    load_graph,
)
from fusion_switch.synth.generator import generate_case
from real_samples import graph_files

REAL_GRAPHS = graph_files()


def _full_reading(op: Op) -> list[str]:
    names = _string_list(op.attr(PASS_NAME)) + op.ub_pass_names
    return list(dict.fromkeys(n for n in names if n))


def _check(ops) -> int:
    fused = 0
    for op in ops:
        assert op.pass_names == _full_reading(op), op.name
        fused += bool(op.pass_names)
    return fused


@pytest.mark.parametrize("path", REAL_GRAPHS, ids=lambda p: p.name)
def test_real_graphs(path):
    graph = load_graph(path)
    _check(op for part in graph.all_graphs for op in part.ops)


def test_a_generated_graph_has_fused_and_plain_ops(tmp_path):
    case = generate_case(tmp_path / "case", n_ops=30, faults=["dropped_scale"], graph_text=False)
    graph = load_graph(case.on_graph)
    fused = _check(graph.ops)
    assert 0 < fused < len(graph.ops)


def _op(attrs: list[dict]) -> Op:
    model = {"graph": [{"name": "g", "op": [{"name": "x", "type": "Conv2D", "attr": attrs}]}]}
    return graph_from_dict(model).ops[0]


@pytest.mark.parametrize(
    ("attrs", "expected"),
    [
        ([], []),
        ([{"key": "other", "value": {"s": "A"}}], []),
        ([{"key": "pass_name", "value": {"list": {"s": ["A", "", "B", "A"]}}}], ["A", "B"]),
        ([{"key": "pass_name", "value": None}], []),
        ([{"key": "pass_name_ub", "value": {"s": "U"}}], ["U"]),
        ([{"key": "_single_op_ub_pass_name", "value": {"s": "S"}}], ["S"]),
        (
            [
                {"key": "pass_name", "value": {"s": "A"}},
                {"key": "pass_name_ub", "value": {"s": "A"}},
                {"key": "_single_op_ub_pass_name", "value": {"s": "S"}},
            ],
            ["A", "S"],
        ),
    ],
)
def test_edge_cases_before_and_after_conversion(attrs, expected):
    op = _op(attrs)
    assert op.pass_names == _full_reading(op) == expected
    assert isinstance(op.attrs, dict)  # converted: attr() reads the converted map now
    assert op.pass_names == _full_reading(op) == expected
    op.attrs = {}  # a map replaced by a caller: the keys looked for are its keys
    assert op.pass_names == [] == _full_reading(op)
