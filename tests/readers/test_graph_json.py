"""The typed JSON reading (``readers.graph_json``, msgspec) against the general one (``json`` then
``graph_from_dict``): the same Graph, field by field and type by type, or the typed reading
declines and the general one runs, with its errors worded as before (issue 16: the JSON
graphs were read up to four times per run, 0.3-0.5 s each at 5,000 ops)."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

import pytest
from fusion_switch.readers import graph as graph_module
from fusion_switch.readers import graph_json
from fusion_switch.readers.graph import (
    GraphError,
    Op,
    graph_from_dict,
    load_graph,
    load_graph_dict,
)
from fusion_switch.readers.graph_write import _atc_floats
from fusion_switch.synth.generator import generate_case
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_graph_fast import REAL_GRAPHS, _anything, _good_op, _op, _perturbed_op, snapshot

DATA = Path(__file__).parent.parent / "data"
ATC_JSON = sorted((DATA / "graphs").glob("*.json"))  # real atc output (formats.md, SOURCES.md)


def general(data: bytes, path: str = "g.json") -> Any:
    """What the general reading makes of a file's bytes: a snapshot, or the error."""
    try:
        return snapshot(graph_from_dict(json.loads(data.decode("utf-8-sig")), path))
    except Exception as error:  # GraphError, JSON errors, UnicodeDecodeError...
        return ("raises", type(error).__name__, str(error))


def fast(data: bytes, path: str = "g.json") -> Any:
    graph = graph_json.graph_from_json(data, path)
    return None if graph is None else snapshot(graph)


def assert_same_or_declined(data: bytes) -> bool:
    """The typed reading gives exactly the general reading's Graph, or declines. True if taken."""
    taken = fast(data)
    if taken is not None:
        assert taken == general(data)
    return taken is not None


# ----------------------------------------------------------------------------- real graphs


@pytest.mark.parametrize("path", ATC_JSON, ids=lambda p: p.name)
def test_real_atc_json_takes_the_typed_reading_and_reads_the_same(path):
    data = path.read_bytes()
    assert fast(data) is not None, "a real atc JSON must not be declined"
    assert fast(data) == general(data)
    graph = graph_json.graph_from_json(data)
    assert graph.ops and any(op.raw_attrs for op in graph.ops)


def _as_json(model: dict, atc: bool) -> bytes:
    """A graph dict as JSON: in atc's conventions (sorted keys, float attrs as strings) or as
    ``json.dumps`` writes it (floats as numbers, the file's key order)."""
    if atc:
        return json.dumps(_atc_floats(model), sort_keys=True, indent=1).encode()
    return json.dumps(model).encode()


# Text graphs hold bytes fields (weights) as strings with lone surrogates; as JSON these are
# escapes msgspec refuses ("\udc80"): the typed reading declines those graphs, rightly.
_DECLINED_AS_JSON = {"ge_proto_00000062_Build.txt"}


@pytest.mark.parametrize("atc", [True, False], ids=["atc-style", "json.dumps"])
@pytest.mark.parametrize("path", REAL_GRAPHS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_graphs_as_json_read_the_same_both_ways(path, atc):
    data = _as_json(load_graph_dict(path), atc)
    assert assert_same_or_declined(data) == (path.name not in _DECLINED_AS_JSON)


def _without_input_descs(graph) -> Any:
    """A snapshot of ``graph`` with every op's input descs emptied."""
    for part in graph.all_graphs:
        for op in part.ops:
            op.input_descs = []
    return snapshot(graph)


@pytest.mark.parametrize("path", [*ATC_JSON, *REAL_GRAPHS], ids=lambda p: p.name)
def test_a_graph_read_without_input_descs_is_the_graph_without_them(path):
    """``input_descs=False`` (the comparison's fusion-on graph, issue 16) leaves out the ops'
    input descs and nothing else, and says so; the general reading, for a file the typed one
    declines (or a text graph), gives them all."""
    lite = load_graph(path, input_descs=False)
    full = load_graph(path)
    assert full.input_descs_read
    if graph_json.graph_from_json(path.read_bytes()) is None or path.suffix != ".json":
        assert lite.input_descs_read and snapshot(lite) == snapshot(full)
        return
    assert not lite.input_descs_read and all(not g.input_descs_read for g in lite.all_graphs)
    assert all(not op.input_descs for g in lite.all_graphs for op in g.ops)
    assert snapshot(lite) == _without_input_descs(full)


@pytest.fixture(scope="module")
def synth_cases(tmp_path_factory):
    root = tmp_path_factory.mktemp("synth")
    return [
        generate_case(root / "a", n_ops=40, seed=1),
        generate_case(root / "b", n_ops=40, seed=2, formats="host", faults=()),
        generate_case(root / "c", n_ops=30, seed=3, custom_ops=True, faults=("wrong_perm",)),
    ]


def test_generated_graphs_take_the_typed_reading_and_read_the_same(synth_cases):
    for case in synth_cases:
        for path in (case.on_graph, case.off_graph):
            data = path.read_bytes()
            assert fast(data) is not None, path
            assert fast(data) == general(data, "g.json")
            graph = load_graph(path)  # through the file: the same, path included
            assert snapshot(graph) == snapshot(graph_from_dict(load_graph_dict(path), path))


def test_generated_graphs_read_without_input_descs_lose_only_them(synth_cases):
    for case in synth_cases:
        for path in (case.on_graph, case.off_graph):
            full = load_graph(path)
            assert any(op.input_descs for op in full.ops), path
            lite = load_graph(path, input_descs=False)
            assert not lite.input_descs_read
            assert snapshot(lite) == _without_input_descs(full)


def test_input_descs_left_out_are_not_read_at_all(tmp_path):
    """Skipped unread: an input desc the typed reading would decline (a number where a desc
    is) does not send the file to the general reading, which rejects it."""
    model = {
        "name": "m",
        "graph": [
            {
                "name": "g",
                "op": [
                    {"name": "a", "type": "Data", "output_desc": [{"dtype": "DT_FLOAT"}]},
                    {"name": "b", "type": "Relu", "input": ["a:0"], "input_desc": [7]},
                ],
            }
        ],
    }
    path = tmp_path / "g.json"
    path.write_text(json.dumps(model))
    lite = load_graph(path, input_descs=False)
    assert [op.name for op in lite.ops] == ["a", "b"] and not lite.input_descs_read
    with pytest.raises(GraphError):
        load_graph(path)


def test_load_graph_takes_the_typed_reading_for_json(monkeypatch, synth_cases):
    """The differential tests prove nothing if load_graph never used the typed reading."""
    path = synth_cases[0].on_graph
    monkeypatch.setattr(graph_module, "_json_dict", lambda p: pytest.fail("general reading"))
    monkeypatch.setattr(Op, "from_dict", staticmethod(lambda op: pytest.fail("general op")))
    assert load_graph(path).ops


# ----------------------------------------------------------------------------- generated JSON

_float_text = st.builds(
    lambda sign, whole, frac, exp: f"{sign}{whole}{frac}{exp}",
    st.sampled_from(["", "-"]),
    st.one_of(st.just("0"), st.from_regex(r"[1-9][0-9]{0,24}", fullmatch=True)),
    st.one_of(st.just(""), st.from_regex(r"\.[0-9]{1,25}", fullmatch=True)),
    st.one_of(st.just(""), st.from_regex(r"[eE][+-]?[0-9]{1,3}", fullmatch=True)),
)
_odd_strings = st.sampled_from(
    ["\ud800", "a\udc80b", "\U0001f600", "\x00", "\u2028", "é", "\\", '"', "\t", "\ufeff"]
)
_odd_value = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(2**80), 2**80),
    _odd_strings,
    st.text(max_size=3),
)


@st.composite
def _json_text(draw, value: Any) -> str:
    """``value`` as JSON text with the freedoms JSON allows and the liberties ``json.loads``
    takes: spacing, escaped keys, a repeated key, other spellings of a number, a number's
    text replaced by any decimal, NaN/Infinity, strings escaped or not. ``wild``: how often
    a liberty that may change the value or its type is taken (0: never; every other freedom
    keeps the value, so most such examples stay on the typed reading)."""
    space = st.sampled_from(["", " ", "\n", "\t", "\r\n  "])
    wild = draw(st.sampled_from([0, 0, 8, 3]))

    def now() -> bool:
        return wild > 0 and draw(st.integers(0, wild)) == 0

    def emit(item: Any) -> str:
        if isinstance(item, dict):
            pairs = list(item.items())
            if pairs and now():  # a key twice: json keeps the last
                key = draw(st.sampled_from([k for k, _ in pairs]))
                at = draw(st.integers(0, len(pairs)))
                pairs.insert(at, (key, draw(st.one_of(_anything, _odd_value))))
            parts = []
            for key, member in pairs:
                text = json.dumps(key)
                if draw(st.integers(0, 9)) == 0:
                    text = '"' + "".join(f"\\u{ord(c):04x}" for c in key) + '"'
                parts.append(f"{text}{draw(space)}:{draw(space)}{emit(member)}")
            return "{" + draw(space) + ("," + draw(space)).join(parts) + draw(space) + "}"
        if isinstance(item, list):
            return "[" + ",".join(draw(space) + emit(member) for member in item) + "]"
        if isinstance(item, bool) or item is None:
            return json.dumps(item)
        if isinstance(item, float):
            if math.isnan(item) or math.isinf(item):
                return json.dumps(item)  # NaN, Infinity, -Infinity
            if draw(st.integers(0, 3)) == 0:  # a float stays a float, whatever its text
                return draw(_float_text)
            return draw(st.sampled_from([repr(item), f"{item:.17g}", f"{item:.20E}"]))
        if isinstance(item, int):
            if now():
                return draw(_float_text)
            return str(item)
        return json.dumps(item, ensure_ascii=draw(st.booleans()))

    return emit(value)


def _model(ops: list) -> dict:
    return {
        "name": "m",
        "attr": [{"key": "soc_version", "value": {"s": "Ascend910B1"}}],
        "graph": [{"name": "g", "input": ["a:0"], "op": ops}],
    }


def _encoded(text: str, bom: bool) -> bytes:
    data = text.encode("utf-8", "surrogatepass")  # a raw lone surrogate: invalid UTF-8
    return (b"\xef\xbb\xbf" if bom else b"") + data


_any_op = st.one_of(_good_op, _perturbed_op(), _op)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), ops=st.lists(_any_op, min_size=1, max_size=3), bom=st.booleans())
def test_generated_json_reads_the_same_or_is_declined(data, ops, bom):
    text = data.draw(_json_text(_model(ops)))
    assert_same_or_declined(_encoded(text, bom))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(_good_op, min_size=1, max_size=3))
def test_well_formed_generated_json_takes_the_typed_reading(ops):
    data = json.dumps(_model(ops)).encode()
    assert fast(data) is not None
    assert fast(data) == general(data)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), ops=st.lists(_any_op, min_size=1, max_size=2), bom=st.booleans())
def test_generated_json_files_load_the_same_or_fail_the_same(data, ops, bom):
    """Through ``load_graph``: the same Graph, or the same GraphError (text, line, column)."""
    raw = _encoded(data.draw(_json_text(_model(ops))), bom)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "g.json"
        path.write_bytes(raw)
        assert _outcome(lambda: load_graph(path)) == _outcome(
            lambda: graph_from_dict(load_graph_dict(path), path)
        )


def _outcome(read) -> Any:
    try:
        return snapshot(read())
    except GraphError as error:
        return ("GraphError", str(error), error.line, error.column)


# ----------------------------------------------------------------------------- edge cases

_OP = '{"name": "a", "type": "Conv2D", "id": 1, "attr": [{"key": "k", "value": %s}]}'
_EDGES = {  # what the typed reading must decline (or read exactly): value of attr "k"
    "NaN literal": '{"f": NaN}',
    "Infinity literal": '{"f": -Infinity}',
    "float overflow": '{"f": 1e400}',
    "huge int": '{"i": 123456789012345678901234567890}',
    "int of 4301 digits": '{"i": %s}' % ("7" * 4301),
    "lone surrogate": '{"s": "\\ud800"}',
    "escaped pair": '{"s": "\\ud83d\\ude00"}',
    "tensor": '{"t": {"desc": {"dtype": "DT_FLOAT", "shape": {"dim": [2]}}, "data": "AAA="}}',
    "bad tensor": '{"t": {"desc": {"shape": {"dim": ["x"]}}}}',
    "graph": '{"g": {"name": "sub", "op": []}}',
    "bytes": '{"bt": "AAEC"}',
    "func": '{"func": {"name": "f", "attr": [{"key": "x", "value": {"i": 1}}]}}',
    "list of tensors": '{"list": {"td": [{"dtype": "DT_FLOAT"}], "val_type": "VT_LIST_TD"}}',
    "list_list_int": '{"list_list_int": {"list_list_i": [{"list_i": [1, 2]}]}}',
    "unknown kind": '{"expression": "x+1"}',
    "string value": '"x"',
    "null value": "null",
    "duplicate member": '{"s": "a", "s": "b"}',
    "duplicate field": '{"s": "a"}, "key": "other"',
    "escaped field name": '{"\\u0073": "a"}',
    "f as int": '{"f": 1}',
    "f as -0": '{"f": -0.0}',
}


@pytest.mark.parametrize("case", sorted(_EDGES))
def test_edge_values_read_the_same_or_are_declined(case):
    text = '{"graph": [{"name": "g", "op": [%s]}]}' % (_OP % _EDGES[case])
    assert_same_or_declined(text.encode())


_FRAMES = {  # the frame around the ops: (JSON, taken by the typed reading)
    "bare GraphDef": ('{"name": "g", "op": [{"name": "a"}]}', False),
    "top-level array": ('[{"graph": []}]', False),
    "no graph": ('{"name": "m"}', False),
    "empty graph list": ('{"graph": []}', False),
    "null op list": ('{"graph": [{"name": "g", "op": null}]}', True),
    "id as string": ('{"graph": [{"op": [{"name": "a", "id": "3"}]}]}', False),
    "id as bool": ('{"graph": [{"op": [{"name": "a", "id": true}]}]}', False),
    "id as float": ('{"graph": [{"op": [{"name": "a", "id": 3.0}]}]}', False),
    "dim as float": ('{"graph": [{"op": [{"output_desc": [{"shape": {"dim": [2.0]}}]}]}]}', False),
    "desc null": ('{"graph": [{"op": [{"name": "a", "input_desc": [null]}]}]}', False),
    "dtype as number": ('{"graph": [{"op": [{"output_desc": [{"dtype": 1}]}]}]}', False),
    "attr null in desc": ('{"graph": [{"op": [{"output_desc": [{"attr": null}]}]}]}', True),
    "no attr in desc": ('{"graph": [{"op": [{"output_desc": [{"dtype": "DT_FLOAT"}]}]}]}', True),
    "name null": ('{"graph": [{"op": [{"name": null, "type": null}]}]}', True),
    "unknown fields": ('{"v": 1, "graph": [{"x": [1], "op": [{"dst_name": ["b"]}]}]}', True),
    "entry without key": ('{"graph": [{"op": [{"attr": [{"value": {"i": 1}}]}]}]}', True),
    "entry key a number": ('{"graph": [{"op": [{"attr": [{"key": 1, "value": {}}]}]}]}', False),
    "model attr a td": (
        '{"attr": [{"key": "x", "value": {"td": {"shape": {"dim": [1]}}}}], "graph": [{}]}',
        True,
    ),
    "graph attr a bad td": (
        '{"graph": [{"attr": [{"key": "x", "value": {"td": {"shape": {"dim": ["?"]}}}}]}]}',
        False,
    ),
    "subgraphs": ('{"graph": [{"name": "main"}, {"name": "sub", "op": [{"name": "b"}]}]}', True),
}


@pytest.mark.parametrize("case", sorted(_FRAMES))
def test_frames_read_the_same_or_are_declined(case):
    text, taken = _FRAMES[case]
    assert assert_same_or_declined(text.encode()) == taken


_BAD_FILES = {  # file bytes → the GraphError text the general reading gives (after "path: ")
    "not JSON": (b"{ not json", "1:3: invalid JSON: Expecting property name enclosed in double"),
    "array": (b"[1, 2]", "not an atc graph JSON: the top level is an array"),
    "no graph": (b'{"name": "m", "x": 1}', "no 'graph' list in the model"),
    "bad id": (b'{"graph": [{"op": [{"name": "bad", "id": "x1"}]}]}', "op 'bad': invalid literal"),
    "long number": (b'{"graph": [{"op": [{"id": ' + b"9" * 5000 + b"}]}]}", "5000 digits"),
    "not UTF-8": (b'{"graph": [{"name": "\xff"}]}', "cannot read: 'utf-8' codec can't decode"),
    "deep": (b'{"graph": [' + b"[" * 100000 + b"]" * 100000 + b"]}", "JSON nested too deeply"),
    "bad td": (
        b'{"graph": [{"op": [{"name": "t", "attr": [{"key": "k", "value": '
        b'{"td": {"shape": {"dim": ["?"]}}}}]}]}]}',
        "op 't': invalid literal",
    ),
}


@pytest.mark.parametrize("case", sorted(_BAD_FILES))
def test_errors_are_worded_as_before(tmp_path, case):
    """A file the typed reading declines fails with the general reading's GraphError, word
    for word (the general reading is the one that words errors)."""
    data, wording = _BAD_FILES[case]
    path = tmp_path / "g.json"
    path.write_bytes(data)
    assert graph_json.read_graph_json(path) is None
    with pytest.raises(GraphError) as caught:
        load_graph(path)
    with pytest.raises(GraphError) as expected:
        graph_from_dict(load_graph_dict(path), path)
    assert (str(caught.value), caught.value.line, caught.value.column) == (
        str(expected.value),
        expected.value.line,
        expected.value.column,
    )
    assert str(caught.value).startswith(f"{path}:") and wording in str(caught.value)


def test_a_bom_is_skipped_like_the_general_reading_does(tmp_path):
    path = tmp_path / "g.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(_model([{"name": "a", "id": 2}])).encode())
    graph = graph_json.read_graph_json(path)
    assert graph is not None and graph.ops[0].id == 2
    assert snapshot(graph) == snapshot(graph_from_dict(load_graph_dict(path), path))
