"""The fast reading of output descs in the fusion rule (``pairing._origin_desc_fast``) against the
general one (``_origin_desc``), and ``Op.has_pass_names`` against ``bool(Op.pass_names)``: the same
rule and the same fusion marks on real graphs, the 5,000-op bench graph and generated values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fusion_switch.compare import pairing
from fusion_switch.readers.graph import Op, load_graph
from fusion_switch.readers.graph_kind import sniff_graph
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec.structs import astuple

DATA = Path(__file__).parent.parent / "data"
REAL_GRAPHS = [
    path
    for path in sorted((DATA / "real" / "graphs").glob("*")) + sorted((DATA / "graphs").glob("*"))
    if sniff_graph(path).is_graph
]
BENCH = sorted(Path("/tmp/bench5k/case").glob("fusion_*/ge_proto_*.json"))


def _general_only(attrs, position, dtype):
    raise TypeError("fast reading switched off")


def typed(desc: pairing.OriginDesc) -> str:
    """Field values with their types (``True`` is not ``1`` here)."""
    return repr(astuple(desc))


def rule_snapshot(rule: pairing.FusionRule) -> Any:
    ops = [repr(astuple(op)) for op in rule.ops]
    groups = [(repr(key), [op.name for op in members]) for key, members in rule.groups.items()]
    return ops, groups, [(name, repr(key)) for name, key in rule.group_of.items()], rule.warnings


def both_rules(graph) -> tuple[Any, Any]:
    fast = rule_snapshot(pairing.fusion_rule(graph))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pairing, "_origin_desc_fast", _general_only)
        general = rule_snapshot(pairing.fusion_rule(graph))
    return fast, general


@pytest.mark.parametrize(
    "path", [*REAL_GRAPHS, *BENCH], ids=lambda p: f"{p.parent.name}/{p.name}"
)  # BENCH: the generated 5,000-op case when this machine has it
def test_real_graphs_give_the_same_rule_both_ways(path):
    graph = load_graph(path)
    fast, general = both_rules(graph)
    assert fast == general
    for op in graph.ops:
        assert op.has_pass_names == bool(op.pass_names)


def test_the_fast_reading_is_taken_for_atc_descs():
    graph = load_graph(DATA / "graphs" / "msit_tdnn_test.om.json")
    counted = [desc for op in graph.ops for desc in op.output_descs if desc.has_attr]
    assert counted
    for position, desc in enumerate(counted):
        made = pairing._origin_desc_fast(desc.raw_attrs, position, desc.dtype)  # no raise
        assert made == pairing._origin_desc(desc.raw_attrs, position, desc.dtype)


_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=False),
    st.sampled_from(["", "ND", "3", "-1", "x"]),
    st.builds(dict),
    st.builds(list),
)
_valid = st.one_of(  # what atc writes: most examples, so that the fast reading is exercised
    st.fixed_dictionaries({"s": st.sampled_from(["", "ND", "NCHW"])}),
    st.fixed_dictionaries({"i": st.integers(-1, 3)}),
    st.fixed_dictionaries({"list": st.fixed_dictionaries({"i": st.lists(st.integers(-1, 9))})}),
    st.builds(lambda: {"list": {"val_type": "VT_LIST_INT"}}),
)
_members = st.one_of(
    _valid,
    _valid,
    _valid,
    st.fixed_dictionaries({"s": _values}),
    st.fixed_dictionaries({"i": _values}),
    st.fixed_dictionaries({"list": st.fixed_dictionaries({"i": st.lists(_values, max_size=3)})}),
    st.fixed_dictionaries({"list": _values}),
    st.dictionaries(st.sampled_from(["s", "i", "list", "b"]), _values, max_size=2),
    _values,
)
_keys = st.sampled_from(
    [
        "_datadump_origin_output_index",
        "_datadump_origin_format",
        "origin_format",
        "_datadump_origin_name",
        "origin_shape",
        "other",
    ]
)


@settings(max_examples=500, deadline=None)
@given(attrs=st.dictionaries(_keys, _members, max_size=5), position=st.integers(0, 3))
def test_generated_desc_attrs_read_the_same_both_ways(attrs, position):
    general = pairing._origin_desc(attrs, position, "DT_FLOAT")
    try:
        fast = pairing._origin_desc_fast(attrs, position, "DT_FLOAT")
    except Exception:
        return  # bailed out: the general reading is used
    assert typed(fast) == typed(general)


@pytest.mark.parametrize(
    "attrs",
    [
        {"_datadump_origin_output_index": {"i": True}},  # a bool is no index
        {"_datadump_origin_output_index": {"i": "2"}},
        {"_datadump_origin_output_index": {}},
        {"origin_shape": {"list": {"i": [True, 2]}}},
        {"origin_shape": {"list": {"i": [2.0]}}},
        {"origin_shape": {"list": {}}},
        {"_datadump_origin_format": {"s": 5}, "origin_format": {"s": "ND"}},
        {"_datadump_origin_format": {"s": "NCHW"}, "origin_format": {"s": 5}},
        {"_datadump_origin_name": {"s": None}},
        {"_datadump_origin_format": {"s": "NCHW"}},
        {"_datadump_origin_format": {"s": "NCHW"}, "origin_format": {"s": "ND"}},
        {"_datadump_origin_format": {"s": ""}, "origin_format": {"s": "ND"}},
    ],
)
def test_look_alike_desc_attrs_read_the_same_both_ways(attrs):
    general = pairing._origin_desc(attrs, 1, "DT_FLOAT")
    try:
        fast = pairing._origin_desc_fast(attrs, 1, "DT_FLOAT")
    except Exception:
        return
    assert typed(fast) == typed(general)


@settings(max_examples=300, deadline=None)
@given(
    raw=st.dictionaries(
        st.sampled_from(["pass_name", "pass_name_ub", "_single_op_ub_pass_name", "k"]),
        st.one_of(
            st.none(),
            st.fixed_dictionaries({"s": st.sampled_from(["", "P"])}),
            st.fixed_dictionaries({"list": st.fixed_dictionaries({"s": st.lists(st.text())})}),
        ),
        max_size=3,
    ),
    converted=st.booleans(),
)
def test_has_pass_names_is_bool_of_pass_names(raw, converted):
    op = Op("a", raw_attrs=raw)
    if converted:
        op.attrs  # noqa: B018  converted first: then attr() reads the converted map
    assert op.has_pass_names == bool(op.pass_names)
    made = Op("b", attrs={key: "P" for key in raw})  # converted values only (hand-made ops)
    assert made.has_pass_names == bool(made.pass_names)
