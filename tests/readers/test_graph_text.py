"""ge_proto text format: reading into the atc JSON shape, writing, round trips, errors."""

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from fusion_switch.readers.dump_write import TensorSpec, encode_dump
from fusion_switch.readers.graph import GraphError, graph_from_dict, load_graph
from fusion_switch.readers.graph_text import (
    escape,
    parse_graph_text,
    parse_graph_text_file,
    unescape,
    write_graph_text,
)
from hypothesis import given, settings
from hypothesis import strategies as st

DATA = Path(__file__).parent.parent / "data" / "graphs"
SAMPLES = [DATA / "msit_tdnn_test.om.json", DATA / "msit_msquickcmp_sub_model.om.json"]

GE_PROTO = """\
name: "ge_default_20240613143502_1"
version: 2
graph {
  name: "ge_default_20240613143502_1"
  op {
    name: "atomic_addr_clean0_71"
    type: "AtomicAddrClean"
    attr {
      key: "_fe_imply_type"
      value {
        i: 6
      }
    }
  }
  op {
    name: "conv1/BiasAdd"
    type: "Conv2D"
    input: "x:0"
    input: "w:0"
    input: "init:-1"
    attr {
      key: "_datadump_original_op_names"
      value {
        list {
          s: "conv1"
          s: "bias\\344\\275\\240"
          val_type: VT_LIST_STRING
        }
      }
    }
    attr {
      key: "_datadump_origin_format"
      value {
      }
    }
    attr {
      key: "epsilon"
      value {
        f: 1e-05
      }
    }
    id: 7
    output_desc {
      dtype: DT_FLOAT16
      shape {
        dim: 1
        dim: 1
        dim: 4
        dim: 4
        dim: 16
      }
      layout: "NC1HWC0"
      attr {
        key: "origin_shape"
        value {
          list {
            i: 1
            i: 3
            i: 4
            i: 4
            val_type: VT_LIST_INT
          }
        }
      }
    }
  }
}
attr {
  key: "soc_version"
  value {
    s: "Ascend910B1"
  }
}
"""


def test_parses_ge_proto_into_the_json_shape():
    model = parse_graph_text(GE_PROTO.splitlines(True))
    assert model["name"] == "ge_default_20240613143502_1" and model["version"] == 2
    graph = model["graph"][0]
    first, conv = graph["op"]
    assert first["attr"] == [{"key": "_fe_imply_type", "value": {"i": 6}}]
    assert conv["input"] == ["x:0", "w:0", "init:-1"]
    assert conv["attr"][0]["value"] == {
        "list": {"s": ["conv1", "bias你"], "val_type": "VT_LIST_STRING"}
    }
    assert conv["attr"][1] == {"key": "_datadump_origin_format", "value": None}
    assert conv["attr"][2]["value"] == {"f": 1e-05}
    assert conv["id"] == 7
    desc = conv["output_desc"][0]
    assert desc["dtype"] == "DT_FLOAT16" and desc["shape"] == {"dim": [1, 1, 4, 4, 16]}


def test_graph_model_from_text():
    graph = graph_from_dict(parse_graph_text(GE_PROTO.splitlines(True)))
    assert graph.name == "ge_default_20240613143502_1" and graph.soc_version == "Ascend910B1"
    conv = graph.op("conv1/BiasAdd")
    assert conv.original_names == ["conv1", "bias你"]
    assert conv.data_inputs == ["x:0", "w:0"]
    assert conv.output_descs[0].origin_shape == (1, 3, 4, 4)
    assert conv.attrs["epsilon"] == 1e-05 and conv.attrs["_datadump_origin_format"] is None


def test_single_repeated_field_is_a_list():
    model = parse_graph_text(['graph { op { name: "a" input: "b:0" } }'])
    assert model["graph"][0]["op"][0]["input"] == ["b:0"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('graph { name: "a" "b" }', {"graph": [{"name": "ab"}]}),  # adjacent literals join
        ("graph < name: 'x' >", {"graph": [{"name": "x"}]}),
        ('graph: { name: "x" }', {"graph": [{"name": "x"}]}),
        ("graph { input: ['a', \"b\"] }", {"graph": [{"input": ["a", "b"]}]}),
        ('graph { name: "x"; input: "y", }', {"graph": [{"name": "x", "input": ["y"]}]}),
        ("# comment\nversion: 0x10 # trailing\n", {"version": 16}),
        (
            "graph { op { id: -3 has_out_attr: True } }",
            {"graph": [{"op": [{"id": -3, "has_out_attr": True}]}]},
        ),
        ("future_field: 5 future_field: 6 future_field: 7", {"future_field": [5, 6, 7]}),
        ("unknown { a: 1 } unknown { a: 2 }", {"unknown": [{"a": 1}, {"a": 2}]}),
        (
            "unknown_flag: true unknown_enum: SOME_ENUM",
            {"unknown_flag": True, "unknown_enum": "SOME_ENUM"},
        ),
    ],
)
def test_text_format_syntax(text, expected):
    assert parse_graph_text(text.splitlines(True)) == expected


@pytest.mark.parametrize(
    ("literal", "data"),
    [
        (r'"plain"', b"plain"),
        (r'"a\nb\tc\\d\"e\'f"', b"a\nb\tc\\d\"e'f"),
        (r'"\344\275\240"', "你".encode()),
        (r'"\0\12"', b"\x00\n"),
        (r'"\x41\x4a"', b"AJ"),
        (r'"\u00e9"', "é".encode()),
        ('"héllo"', "héllo".encode()),
    ],
)
def test_unescape(literal, data):
    assert unescape(literal) == data


@pytest.mark.parametrize("literal", [r'"\q"', r'"\x"', r'"\u12"'])
def test_bad_escapes(literal):
    with pytest.raises(ValueError):
        unescape(literal)


def test_escape_matches_textformat():
    assert escape('a"b\\c\n你') == r'"a\"b\\c\n\344\275\240"'


@pytest.mark.parametrize(
    ("value", "text"),
    [(float("inf"), "inf"), (float("-inf"), "-inf"), (1e-05, "1e-05"), (2.0, "2")],
)
def test_float_writing(value, text):
    written = write_graph_text(
        {"graph": [{"op": [{"attr": [{"key": "k", "value": {"f": value}}]}]}]}
    )
    assert f"f: {text}\n" in written
    back = parse_graph_text(written.splitlines(True))
    assert back["graph"][0]["op"][0]["attr"][0]["value"]["f"] == value


def test_nan_round_trip():
    written = write_graph_text({"attr": [{"key": "k", "value": {"f": float("nan")}}]})
    assert math.isnan(parse_graph_text(written.splitlines(True))["attr"][0]["value"]["f"])


@pytest.mark.parametrize(
    ("text", "message", "line", "column"),
    [
        ('graph {\n  name: "x"\n', "'}' never closes this message", 1, 7),
        ('graph {\n  name: "x"\n}}\n', "unexpected '}'", 3, 2),
        ('graph {\n  name "x"\n}', "expected ':' after 'name'", 2, 8),
        ("graph {\n  op: 5\n}", "'op' is a message", 2, 7),
        ("graph {\n  name { }\n}", "'name' is a string, not a message", 2, 8),
        ('graph { op { id: "seven" } }', "'id' expects a number", 1, 18),
        ("graph { op { has_out_attr: maybe } }", "expects true or false", 1, 28),
        ("graph {\n  5: 1\n}", "expected a field name, found '5'", 2, 3),
        ("version: 1 $", "unexpected character '$'", 1, 12),
        ('graph { name: "bad\\q" }', "bad string for 'name'", 1, 15),
        ('graph { input: ["a", ', "unexpected end of file", 1, 20),
        ("version:", "unexpected end of file, expected a value for 'version'", 1, 8),
    ],
)
def test_errors_give_line_and_column(tmp_path, text, message, line, column):
    path = tmp_path / "ge_proto_00000001_graph_1_Build.txt"
    path.write_text(text)
    with pytest.raises(GraphError) as info:
        parse_graph_text_file(path)
    assert message in info.value.message
    assert (info.value.line, info.value.column) == (line, column)
    assert str(info.value).startswith(f"{path}:{line}:{column}: ")


@pytest.mark.parametrize(
    ("content", "message", "line", "column"),
    [
        (b"version: 1 \x01\n", "unexpected control character '\\x01' (binary data?", 1, 12),
        (b'graph {\n  name: "x" \xe9\n}', "unexpected byte 0xE9: not UTF-8 text", 2, 13),
        (b"", "empty file", 0, 0),
        (b"\n\n", "empty file", 0, 0),
        (
            encode_dump("op", [TensorSpec(np.zeros(3, np.float16))]),
            "binary file, not a graph",
            0,
            0,
        ),
    ],
    ids=["control", "latin1", "empty", "blank", "dump"],
)
def test_unreadable_bytes_say_what_they_are(tmp_path, content, message, line, column):
    path = tmp_path / "ge_proto_00000001_graph_1_Build.txt"
    path.write_bytes(content)
    with pytest.raises(GraphError) as info:
        parse_graph_text_file(path)
    assert message in info.value.message, info.value.message
    assert (info.value.line, info.value.column) == (line, column)
    assert str(info.value).startswith(f"{path}:")


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_json_sample_round_trips_through_text(tmp_path, sample):
    model = json.loads(sample.read_text())
    path = tmp_path / "ge_proto_00000001_Build.txt"
    path.write_text(write_graph_text(model))
    assert load_graph(path) == load_graph(sample)
    again = write_graph_text(parse_graph_text_file(path))
    assert again == path.read_text()


attr_values = st.one_of(
    st.none(),
    st.builds(lambda s: {"s": s}, st.text(max_size=12)),
    st.builds(lambda i: {"i": i}, st.integers(-(2**63), 2**63 - 1)),
    st.builds(lambda f: {"f": f}, st.floats(allow_nan=False)),
    st.builds(lambda b: {"b": b}, st.booleans()),
    st.builds(
        lambda xs: {"list": {"i": xs, "val_type": "VT_LIST_INT"}},
        st.lists(st.integers(-5, 5), min_size=1, max_size=4),
    ),
    st.builds(
        lambda xs: {"list": {"s": xs, "val_type": "VT_LIST_STRING"}},
        st.lists(st.text(max_size=5), min_size=1, max_size=4),
    ),
    st.just({"list": {"val_type": "VT_LIST_STRING"}}),
)
ops = st.builds(
    lambda name, inputs, attrs, op_id: {
        "name": name,
        "type": "Conv2D",
        **({"input": inputs} if inputs else {}),
        **({"id": op_id} if op_id else {}),
        **({"attr": [{"key": k, "value": v} for k, v in attrs]} if attrs else {}),
    },
    st.text(min_size=1, max_size=10),
    st.lists(st.text(max_size=6), max_size=3),
    st.lists(st.tuples(st.text(max_size=8), attr_values), max_size=4),
    st.integers(0, 2**40),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(ops, max_size=4), st.text(max_size=10))
def test_random_models_round_trip(op_list, name):
    graph = {"op": op_list} if op_list else {}
    model = {"name": name, "graph": [{"name": name, **graph}]} if name else {"graph": [graph]}
    back = parse_graph_text(write_graph_text(model).splitlines(True))
    assert back == model


text_pieces = st.sampled_from(
    [
        "graph",
        "op",
        "attr",
        "key",
        "value",
        "list",
        "s",
        "i",
        "f",
        "b",
        "name",
        "dim",
        "id",
        "{",
        "}",
        "<",
        ">",
        "[",
        "]",
        ":",
        ",",
        ";",
        "\n",
        " ",
        '"x"',
        '"\\q"',
        "'y'",
        "7",
        "-1",
        "0x1F",
        "1.5e3",
        "inf",
        "true",
        "VT_LIST_INT",
        "DT_FLOAT",
        "#c\n",
        "$",
        "\\",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(text_pieces, max_size=40))
def test_any_text_gives_a_model_or_a_located_graph_error(pieces):
    text = "".join(pieces)
    try:
        model = parse_graph_text(text.splitlines(True), "g.txt")
    except GraphError as error:
        assert error.path == "g.txt" and error.line >= 1 and error.column >= 1
        return
    assert isinstance(model, dict)
    try:
        graph = graph_from_dict(model, "g.txt")
    except GraphError as error:  # e.g. no graph in the text
        assert error.path == "g.txt"
    else:
        assert isinstance(graph.ops, list)


# ----------------------------------------------------------------------------- fast unescaping

_ESCAPE_PIECES = st.one_of(
    st.sampled_from(["\\", "\\\\", "\\0", "\\000", "\\377", "\\400", "\\777", "\\12", "\\1"]),
    st.sampled_from(["\\n", '\\"', "\\'", "\\?", "\\x4", "\\x41", "\\u00e9", "\\U0001F600"]),
    st.sampled_from(["\\q", "\\8", "\\x", "\\u12", "a", "7", " ", "é", "\udcff", '"']),
    st.text(max_size=3),
)


@settings(max_examples=800, deadline=None)
@given(pieces=st.lists(_ESCAPE_PIECES, max_size=12))
def test_unescape_fast_paths_match_the_general_reading(pieces):
    """The C-speed paths of unescape (plain, one-character escapes, Python's escape decoder)
    give the bytes the escape-by-escape reading gives, or the same error."""
    from fusion_switch.readers.graph_text import _unescape_general, unescape

    body = "".join(pieces)
    outcomes = []
    for read in (lambda: unescape(f'"{body}"'), lambda: _unescape_general(body)):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # Python's decoder warns on \777: not taken then
                outcomes.append(read())
        except ValueError as error:
            outcomes.append(f"ValueError: {error}")
    assert outcomes[0] == outcomes[1]


def test_unescape_of_octal_constants_takes_the_python_decoder(monkeypatch):
    from fusion_switch.readers import graph_text

    def refused(body):
        raise AssertionError("the general reading was used")

    monkeypatch.setattr(graph_text, "_unescape_general", refused)
    body = '\\177ELF\\002\\\\ \\005\\000x\\"\\n' * 3
    assert graph_text.unescape(f'"{body}"') == b'\x7fELF\x02\\ \x05\x00x"\n' * 3
