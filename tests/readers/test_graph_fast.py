"""The fast reading of ops (``readers.graph._op_fast``) against the general one (``Op.from_dict``):
the same Graph, field by field, or the same error, on real graphs and on generated ops of every
shape, well-formed or not (issue 16: reading a 5,000-op graph was mostly object building)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fusion_switch.readers import graph as graph_module
from fusion_switch.readers.graph import (
    GraphError,
    Op,
    TensorDesc,
    graph_from_dict,
    load_graph,
    load_graph_dict,
)
from fusion_switch.readers.graph_kind import sniff_graph
from fusion_switch.synth.generator import generate_case
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

DATA = Path(__file__).parent.parent / "data"
# tests/data/real is the byte copy of samples/real (test_real_samples_copy.py checks it)
REAL_GRAPHS = [
    path
    for path in sorted((DATA / "real" / "graphs").glob("*")) + sorted((DATA / "graphs").glob("*"))
    if sniff_graph(path).is_graph  # ONNX text, Caffe, an empty file: refused before any op
]


def _general_only(op: Any) -> Op:
    raise TypeError("fast reading switched off")


def snapshot(value: Any) -> Any:
    """Every field of a Graph/Op/TensorDesc (also those ``==`` ignores: raw attrs, has_id,
    subgraph names, whether attrs were converted eagerly), types kept (1 vs True vs 1.0)."""
    if isinstance(value, graph_module.Graph):
        fields = ("name", "soc_version", "attrs", "path", "model_name", "model_attrs", "inputs")
        return {
            "type": "Graph",
            **{f: snapshot(getattr(value, f)) for f in fields},
            "ops": [snapshot(op) for op in value.ops],
            "others": [snapshot(g) for g in value.others],
            "by_name": sorted(value._by_name),
        }
    if isinstance(value, (Op, TensorDesc)):
        out = {"type": type(value).__name__, "eager": value._attrs is not None}
        for slot in type(value).__slots__:
            if slot != "_attrs":
                out[slot] = snapshot(getattr(value, slot))
        try:
            out["attrs"] = snapshot(value.attrs)
        except Exception as error:  # a lazily converted map that fails: the same on both
            out["attrs"] = f"raises {type(error).__name__}: {error}"
        return out
    if isinstance(value, dict):
        return ("dict", [(snapshot(k), snapshot(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [snapshot(v) for v in value])
    if isinstance(value, Path):
        return ("path", str(value))
    return (type(value).__name__, repr(value))


def read_both(model: Any) -> tuple[Any, Any]:
    """(fast, general) outcome of ``graph_from_dict``: a snapshot or the error text."""
    outcomes = []
    for fast in (True, False):
        with pytest.MonkeyPatch.context() as patch:
            if not fast:
                patch.setattr(graph_module, "_op_fast", _general_only)
            try:
                outcomes.append(snapshot(graph_from_dict(model, "g.json")))
            except GraphError as error:
                outcomes.append(("GraphError", str(error), error.line, error.column))
    return outcomes[0], outcomes[1]


@pytest.mark.parametrize("path", REAL_GRAPHS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_graphs_read_the_same_both_ways(path):
    model = load_graph_dict(path)
    fast, general = read_both(model)
    assert fast == general
    if isinstance(fast, dict):
        assert fast["ops"] or fast["others"] or not model.get("graph")


@pytest.mark.parametrize(
    "path",
    [
        DATA / "graphs" / "msit_tdnn_test.om.json",
        DATA / "real" / "graphs" / "ge_proto_00000001_Build.txt",
    ],
    ids=["json", "real-text"],
)
def test_the_fast_reading_is_taken_for_a_well_formed_graph(monkeypatch, path):
    """The differential tests prove nothing if the fast path always bailed out."""
    model = load_graph_dict(path)
    calls = {"general": 0}
    general = Op.from_dict

    def counting(op):
        calls["general"] += 1
        return general(op)

    monkeypatch.setattr(Op, "from_dict", staticmethod(counting))
    graph = graph_from_dict(model, path)
    assert graph.ops and calls["general"] == 0


def test_a_5000_op_generated_graph_reads_the_same_both_ways(tmp_path):
    """The benchmark's size (issue 16), generated here with the smallest tensors the generator
    makes (~9 s): the graphs are what is read, not the dumps."""
    case = generate_case(tmp_path / "case", n_ops=5000, spatial=4, graph_text=False)
    for graph in (case.on_graph, case.off_graph):
        fast, general = read_both(json.loads(Path(graph).read_text()))
        assert isinstance(fast, dict) and len(fast["ops"]) > 3000, fast
        assert fast == general


# ----------------------------------------------------------------------------- generated ops

_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.integers(2**62, 2**65),
    st.floats(allow_nan=False, width=32),
    st.sampled_from(["", "x", "7", "-2", "1.5", "1.5f", "true", "DT_FLOAT", "ND", " 3 "]),
    st.builds(list),  # fresh objects: the perturbation below changes values in place
    st.builds(dict),
)
_member = st.sampled_from(
    [
        *("s", "i", "f", "b", "bt", "dt", "td", "t", "func", "g", "na", "list", "expression"),
        *("list_list_int", "list_list_float", "val_type"),
    ]
)


def _containers(children):
    return st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(_member, children, max_size=3),
    )


_nested = st.recursive(_scalar, _containers, max_leaves=6)
_attr_def = st.one_of(
    st.none(),
    st.dictionaries(_member, _nested, max_size=2),
    st.fixed_dictionaries(
        {"list": st.dictionaries(st.sampled_from(["s", "i", "f", "b", "td", "val_type"]), _nested)}
    ),
    _scalar,
)
_entry = st.one_of(
    st.fixed_dictionaries(
        {"key": st.sampled_from(["a", "b", "_datadump_original_op_names", "pass_name"])},
        optional={"value": _attr_def},
    ),
    st.fixed_dictionaries({"value": _attr_def}),
    st.fixed_dictionaries({"key": st.builds(lambda: ["unhashable"]), "value": _attr_def}),
    _scalar,
)
_attrs = st.one_of(
    st.lists(_entry, max_size=4), _scalar, st.dictionaries(st.text(max_size=1), _scalar)
)
_shape = st.one_of(
    st.fixed_dictionaries({}, optional={"dim": st.one_of(st.lists(_scalar, max_size=3), _scalar)}),
    _scalar,
)
_desc = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "dtype": st.one_of(_scalar, st.integers(0, 40)),
            "layout": _scalar,
            "shape": _shape,
            "name": _scalar,
            "attr": _attrs,
        },
    ),
    _scalar,
)
_op = st.fixed_dictionaries(
    {"name": st.one_of(st.sampled_from(["a", "b/c", ""]), _scalar)},
    optional={
        "type": _scalar,
        "id": st.one_of(_scalar, st.integers(0, 100)),
        "input": st.one_of(st.lists(_scalar, max_size=3), _scalar),
        "attr": _attrs,
        "input_desc": st.one_of(st.lists(_desc, max_size=3), _scalar),
        "output_desc": st.one_of(st.lists(_desc, max_size=3), _scalar),
        "stream_id": _scalar,
        "subgraph_name": _scalar,
    },
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(_op, min_size=1, max_size=3))
def test_generated_ops_read_the_same_both_ways(ops):
    fast, general = read_both({"graph": [{"name": "g", "op": ops}]})
    assert fast == general


# Well-formed ops, then one value somewhere replaced by anything: most examples stay on the
# fast reading up to that one value, which is where a difference would hide.
_good_value = st.one_of(
    st.fixed_dictionaries({"s": st.sampled_from(["", "x", "ND"])}),
    st.fixed_dictionaries({"i": st.integers(-3, 3)}),
    st.fixed_dictionaries({"b": st.booleans()}),
    st.fixed_dictionaries({"f": st.sampled_from(["0.5", "1e-3", 2.0])}),
    st.fixed_dictionaries({"dt": st.integers(0, 30)}),
    st.fixed_dictionaries(
        {"list": st.fixed_dictionaries({"i": st.lists(st.integers(0, 9), max_size=3)})}
    ),
    st.fixed_dictionaries({"list": st.fixed_dictionaries({"s": st.lists(st.text(max_size=2))})}),
    st.fixed_dictionaries({"td": st.fixed_dictionaries({"dtype": st.just("DT_FLOAT")})}),
    st.builds(lambda: {"list_list_int": {"list_list_i": [{"list_i": [1, 2]}]}}),
    st.none(),
)
_good_entries = st.lists(
    st.fixed_dictionaries(
        {
            "key": st.sampled_from(["_datadump_original_op_names", "pass_name", "k", "k"]),
            "value": _good_value,
        }
    ),
    max_size=4,
)
_good_desc = st.fixed_dictionaries(
    {
        "dtype": st.sampled_from(["DT_FLOAT", "DT_INT8"]),
        "layout": st.sampled_from(["ND", "NC1HWC0"]),
        "shape": st.fixed_dictionaries({"dim": st.lists(st.integers(-1, 9), max_size=4)}),
    },
    optional={"attr": _good_entries, "name": st.just("t")},
)
_good_op = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["a", "b"]),
        "type": st.sampled_from(["Conv2D", "Cast"]),
        "input": st.lists(st.sampled_from(["a:0", "b:1", "c:-1", ""]), max_size=3),
        "attr": _good_entries,
        "input_desc": st.lists(_good_desc, max_size=2),
        "output_desc": st.lists(_good_desc, max_size=2),
    },
    optional={"id": st.integers(0, 9), "stream_id": st.integers(0, 2)},
)
_anything = st.one_of(_scalar, _nested, _attr_def, st.integers(0, 40), st.just(True))


def _paths(value: Any, at: tuple = ()):
    """Every place inside ``value`` (dict keys and list positions), outermost first."""
    yield at
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*at, index))


@st.composite
def _perturbed_op(draw):
    op = draw(_good_op)
    places = [at for at in _paths(op) if at]
    at = draw(st.sampled_from(places))
    holder = op
    for step in at[:-1]:
        holder = holder[step]
    holder[at[-1]] = draw(_anything)
    return op


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(st.one_of(_good_op, _perturbed_op()), min_size=1, max_size=2))
def test_nearly_well_formed_ops_read_the_same_both_ways(ops):
    fast, general = read_both({"graph": [{"name": "g", "op": ops}]})
    assert fast == general


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(op=_good_op)
def test_well_formed_generated_ops_take_the_fast_reading(op):
    made = graph_module._op_fast(op)  # raises if it bailed out
    assert snapshot(made) == snapshot(Op.from_dict(op))


def _base_op() -> dict:
    desc = {"dtype": "DT_FLOAT", "layout": "ND", "shape": {"dim": [1, 2]}, "attr": []}
    return {
        "name": "a",
        "type": "Conv2D",
        "id": 3,
        "input": ["b:0"],
        "attr": [{"key": "k", "value": {"s": "x"}}],
        "input_desc": [dict(desc)],
        "output_desc": [dict(desc, shape={"dim": [4]})],
    }


_TRICKY = {  # (path into the op, value): the look-alikes a type check must not let through
    "bool id": (("id",), True),
    "float id": (("id",), 3.0),
    "string id": (("id",), "3"),
    "bool stream": (("stream_id",), True),
    "bool dim": (("output_desc", 0, "shape", "dim", 0), True),
    "float dim": (("output_desc", 0, "shape", "dim", 0), 4.0),
    "string dim": (("output_desc", 0, "shape", "dim", 0), " 4 "),
    "dims not a list": (("output_desc", 0, "shape", "dim"), {"0": 4}),
    "shape a list": (("output_desc", 0, "shape"), [4]),
    "dtype a number": (("output_desc", 0, "dtype"), 1),
    "dtype false": (("output_desc", 0, "dtype"), False),
    "layout a number": (("output_desc", 0, "layout"), 0),
    "name a number": (("name",), 7),
    "desc null": (("input_desc", 0), None),
    "descs an object": (("input_desc",), {"a": 1}),
    "attr an object": (("attr",), {"k": 1}),
    "entry without key": (("attr", 0), {"value": {"s": "x"}}),
    "entry without value": (("attr", 0), {"key": "k"}),
    "td in an attr": (("attr", 0, "value"), {"td": {"shape": {"dim": ["x"]}}}),
    "list of td": (("attr", 0, "value"), {"list": {"td": [{"dtype": 1}]}}),
    "list not a dict": (("attr", 0, "value"), {"list": [1]}),
    "list member not a list": (("attr", 0, "value"), {"list": {"i": 5}}),
    "value a string": (("attr", 0, "value"), "x"),
    "input a string": (("input",), "b:0"),
}


@pytest.mark.parametrize("case", sorted(_TRICKY))
def test_look_alike_values_read_the_same_both_ways(case):
    at, value = _TRICKY[case]
    op = _base_op()
    holder = op
    for step in at[:-1]:
        holder = holder[step]
    holder[at[-1]] = value
    fast, general = read_both({"graph": [{"name": "g", "op": [op, _base_op()]}]})
    assert fast == general


def test_a_malformed_op_keeps_its_error_text(tmp_path):
    """The fast reading bails out; the general one words the error as before."""
    bad = {"graph": [{"op": [{"name": "ok", "id": 1}, {"name": "bad", "id": "x1"}]}]}
    path = tmp_path / "g.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(GraphError) as caught:
        load_graph(path)
    assert str(caught.value) == f"{path}: op 'bad': invalid literal for int() with base 10: 'x1'"
    bad["graph"][0]["op"][1] = {"name": "bad", "output_desc": [{"shape": {"dim": ["?"]}}]}
    path.write_text(json.dumps(bad))
    with pytest.raises(GraphError, match=r"op 'bad': invalid literal for int\(\)"):
        load_graph(path)
