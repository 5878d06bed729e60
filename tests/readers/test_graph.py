"""Graph model from atc JSON: the two real samples, attribute conversion, accessors, errors, and
msaccucmp's FusionRuleParser reading what we write."""

import importlib
import io
import json
import os
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from fusion_switch.readers.dump_write import TensorSpec, encode_dump
from fusion_switch.readers.graph import (
    GraphError,
    Op,
    TensorDesc,
    attr_value,
    graph_from_dict,
    load_graph,
    load_graph_dict,
)
from fusion_switch.readers.graph_text import parse_graph_text, write_graph_text
from fusion_switch.readers.graph_write import check_graph_dict, graph_json_text, write_graph_json
from hypothesis import given, settings
from hypothesis import strategies as st

DATA = Path(__file__).parent.parent / "data" / "graphs"
TDNN = DATA / "msit_tdnn_test.om.json"
SUB_MODEL = DATA / "msit_msquickcmp_sub_model.om.json"


@pytest.fixture(scope="module")
def tdnn():
    return load_graph(TDNN)


@pytest.fixture(scope="module")
def sub_model():
    return load_graph(SUB_MODEL)


def test_samples_load_with_names_counts_and_soc(tdnn, sub_model):
    assert (tdnn.name, len(tdnn.ops), tdnn.model_name) == ("tdnn_NPU_0", 132, "tdnn")
    assert (sub_model.name, len(sub_model.ops), sub_model.soc_version) == (
        "sub_model_NPU_0",
        19,
        "Ascend310",
    )
    assert tdnn.others == [] and tdnn.all_graphs == [tdnn]
    assert tdnn.path == TDNN


@pytest.mark.parametrize(
    ("op_name", "passes", "ub_passes", "first_originals"),
    [
        (
            "BatchNormalization_120_BNInferenceD",
            ["BatchNormPreprocessFusionPass", "BatchNormBnInferFusionPass", "HostBNFusionPass"],
            [],
            ["BatchNormalization_120", "Transpose_115", "Transpose_115"],
        ),
        ("PartitionedCall_Conv_52_Conv2D_12", [], [], ["Conv_52"]),
    ],
)
def test_pass_and_original_names(tdnn, op_name, passes, ub_passes, first_originals):
    op = tdnn.op(op_name)
    assert op is not None
    assert op.pass_names == passes
    assert op.ub_pass_names == ub_passes
    assert op.original_names[: len(first_originals)] == first_originals
    assert op.is_fused


def test_ub_passes_are_collected_in_order(tdnn):
    with_ub = [op for op in tdnn.ops if op.ub_pass_names]
    assert with_ub, "the tdnn sample has UB-fused ops"
    for op in with_ub:
        for name in op.ub_pass_names:
            assert name in op.pass_names
        assert len(op.pass_names) == len(set(op.pass_names))


def test_original_names_present_but_empty(tdnn):
    op = tdnn.op("trans_Cast_0")
    assert op.has_original_names and op.original_names == []
    assert op.msaccucmp_original_names == [""]
    plain = next(o for o in tdnn.ops if not o.has_original_names)
    assert plain.msaccucmp_original_names == [plain.name]


def test_op_fields(tdnn, sub_model):
    first = sub_model.ops[0]
    assert (first.name, first.type, first.id, first.has_id) == ("boxes_all", "Data", 0, False)
    assert first.inputs == [""] and first.data_inputs == []
    desc = first.output_descs[0]
    assert (desc.dtype, desc.layout, desc.format, desc.shape) == (
        "DT_FLOAT",
        "NCHW",
        "NCHW",
        (1000, 80, 4),
    )
    assert desc.origin_shape == (1000, 80, 4) and desc.origin_format == "NCHW"
    assert desc.has_attr and desc.attrs["_is_zero_copy_block"] is True
    bn = tdnn.op("BatchNormalization_120_BNInferenceD")
    assert bn.id == 58 and bn.has_id
    out = bn.output_descs[0]
    assert (out.origin_name, out.origin_output_index, out.origin_format) == (
        "BatchNormalization_120",
        0,
        "NCHW",
    )


def test_control_inputs_are_kept_raw_and_filtered_on_request():
    op = Op.from_dict({"name": "a", "input": ["x:0", "y:-1", "", "z:1"]})
    assert op.inputs == ["x:0", "y:-1", "", "z:1"]
    assert op.data_inputs == ["x:0", "z:1"]


@pytest.mark.parametrize(
    ("attr_def", "value"),
    [
        (None, None),
        ({}, None),
        ({"s": "abc"}, "abc"),
        ({"i": 7}, 7),
        ({"i": "9007199254740993"}, 9007199254740993),
        ({"f": "0.01"}, 0.01),
        ({"f": 1.5}, 1.5),
        ({"f": "inf"}, float("inf")),
        ({"f": "1.5f"}, 1.5),
        ({"i": "x"}, "x"),  # a malformed value is kept, not fatal
        ({"f": None}, None),
        ({"b": True}, True),
        ({"dt": 1}, 1),
        ({"list": {"s": ["a", "b"], "val_type": "VT_LIST_STRING"}}, ["a", "b"]),
        ({"list": {"val_type": "VT_LIST_STRING"}}, []),
        ({"list": {"i": [1, 2]}}, [1, 2]),
        ({"list": {"b": [False, True], "val_type": "VT_LIST_BOOL"}}, [False, True]),
        ({"list": {"f": ["0.5", 2]}}, [0.5, 2.0]),
        ({"list_list_int": {"list_list_i": [{"list_i": [1, 2]}, {}]}}, [[1, 2], []]),
        ({"list_list_float": {"list_list_f": [{"list_f": [0.5]}]}}, [[0.5]]),
        (
            {"func": {"name": "f", "attr": [{"key": "Pad", "value": {"list": {"i": [0, 96]}}}]}},
            {"name": "f", "attr": {"Pad": [0, 96]}},
        ),
    ],
)
def test_attr_conversion(attr_def, value):
    assert attr_value(attr_def) == value


def test_tensor_attr_values():
    desc = {"dtype": "DT_FLOAT16", "layout": "FRACTAL_NZ", "shape": {"dim": [2, 32, 16, 16]}}
    assert attr_value({"t": {"desc": desc}}) == {"desc": TensorDesc.from_dict(desc)}
    assert attr_value({"td": desc}).shape == (2, 32, 16, 16)


def test_numeric_dtype_reads_as_its_name():
    assert TensorDesc.from_dict({"dtype": 2}).dtype == "DT_FLOAT16"


def test_every_op_attribute_of_the_samples_converts(tdnn, sub_model):
    for graph in (tdnn, sub_model):
        for op in graph.ops:
            assert set(op.attrs) == set(op.raw_attrs)


def test_bare_graph_and_several_graphs():
    bare = graph_from_dict({"name": "g", "op": [{"name": "a", "type": "Relu"}]})
    assert bare.name == "g" and [op.name for op in bare.ops] == ["a"]
    model = {
        "name": "m",
        "attr": [{"key": "soc_version", "value": {"s": "Ascend910B1"}}],
        "graph": [{"name": "main", "op": []}, {"name": "sub", "op": [{"name": "x"}]}],
    }
    graph = graph_from_dict(model)
    assert graph.name == "main" and graph.soc_version == "Ascend910B1"
    assert [g.name for g in graph.all_graphs] == ["main", "sub"]
    assert graph.others[0].op("x") is not None and "x" in graph.others[0]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"graph": [', "invalid JSON"),
        ('{"name": "m"}', "no 'graph' list"),
        ('{"graph": [5]}', "graph[0] is not an object"),
        ('{"graph": [{"op": {"name": "a"}}]}', "graph[0].op is not a list"),
        ('{"graph": [{"op": [{"name": "a", "id": "x"}]}]}', "op 'a'"),
        ('{"graph": [{"op": [7]}]}', "graph[0].op[0] is not an object"),
    ],
)
def test_bad_json_names_the_file(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(GraphError) as info:
        load_graph(path)
    assert message in str(info.value) and str(path) in str(info.value)


def _dump_file_bytes() -> bytes:
    return encode_dump("conv", [TensorSpec(np.ones((2, 2), np.float32))], [])


def _npy_bytes() -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.arange(6, dtype=np.float32))
    return buffer.getvalue()


EMPTY = "empty file; is this an atc/GE graph file?"
ARRAY = "not an atc graph JSON: the top level is an array (expected an object with a 'graph' list"
BINARY = "binary file, not a graph (did you pass a dump file as -f/-cf?)"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", EMPTY),
        (b" \n\t\r\n", EMPTY),
        (b"\xef\xbb\xbf\n", EMPTY),
        (b"[]", ARRAY),
        (b'[{"graph": [{"name": "g", "op": []}]}]', ARRAY),
        (b"  [1, 2]\n", ARRAY),
        (_dump_file_bytes(), BINARY),
        (_npy_bytes(), BINARY),
        (bytes(range(1, 32)) * 4, BINARY),  # control bytes, no NUL
        ('{"graph": []}'.encode("utf-16"), "UTF-16 text; save the graph as UTF-8"),
    ],
    ids=[
        "empty",
        "blank",
        "bom-only",
        "array",
        "wrapped-model",
        "numbers",
        "dump",
        "npy",
        "controls",
        "utf16",
    ],
)
def test_files_that_are_no_graph_say_what_they_are(tmp_path, content, message):
    path = tmp_path / "graph.json"
    path.write_bytes(content)
    with pytest.raises(GraphError) as info:
        load_graph(path)
    assert info.value.message.startswith(message), info.value.message
    assert str(info.value).startswith(f"{path}: ")  # names the file; no line for these
    assert info.value.line == 0


def test_tabs_and_line_ends_are_text_not_binary(tmp_path):
    path = tmp_path / "g.json"
    path.write_bytes(b'{\t"graph":\r\n\t[{"name": "g", "op": [{"name": "a"}]}]}\r\n')
    assert load_graph(path).op("a") is not None


def test_graph_from_dict_refuses_a_top_level_array():
    with pytest.raises(GraphError, match="top level is an array") as info:
        graph_from_dict([{"graph": []}], "x.json")
    assert info.value.path == "x.json"


def test_json_syntax_error_has_line_and_column(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{\n  "graph": [,]\n}')
    with pytest.raises(GraphError) as info:
        load_graph(path)
    assert (info.value.line, info.value.column) == (2, 13)
    assert f"{path}:2:13" in str(info.value)


def test_json_with_byte_order_mark(tmp_path):
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"graph": [{"name": "g", "op": [{"name": "a"}]}]}')
    assert load_graph(path).op("a") is not None


def test_not_utf8(tmp_path):
    path = tmp_path / "latin.json"
    path.write_bytes(b'{"graph": [{"name": "\xe9"}]}')
    with pytest.raises(GraphError, match="cannot read"):
        load_graph(path)


def test_missing_file(tmp_path):
    with pytest.raises(GraphError, match="cannot read"):
        load_graph(tmp_path / "none.json")


def test_content_decides_the_reader(tmp_path):
    text_file = tmp_path / "graph.json"  # text format despite the suffix
    text_file.write_text('graph { name: "g" op { name: "a" type: "Relu" id: 3 } }\n')
    graph = load_graph(text_file)
    assert graph.op("a").id == 3


# ----------------------------------------------------------------------------- writing


def test_write_graph_json_follows_atc_conventions(tmp_path):
    model = {
        "name": "m",
        "graph": [
            {
                "name": "g",
                "op": [
                    {
                        "name": "a",
                        "type": "LeakyRelu",
                        "id": 1,
                        "attr": [{"key": "negative_slope", "value": {"f": 0.01}}],
                    }
                ],
            }
        ],
    }
    path = write_graph_json(model, tmp_path / "g.json")
    data = json.loads(path.read_text())
    assert data["graph"][0]["op"][0]["attr"][0]["value"] == {"f": "0.01"}
    assert list(data) == sorted(data)
    assert load_graph(path).op("a").attrs["negative_slope"] == 0.01
    assert graph_json_text(model, indent=None).startswith('{"graph": [')


@pytest.mark.parametrize(
    ("op", "problem"),
    [
        ({"name": "a", "type": "T", "id": "1"}, "'id' must be a JSON integer"),
        ({"name": "a", "type": "T", "id": True}, "'id' must be a JSON integer"),
        ({"name": "a"}, "'name' and 'type' must be strings"),
        ({"name": "a", "type": "T", "input": "x:0"}, "'input' must be a list"),
        ({"name": "a", "type": "T", "output_desc": [{"dtype": "DT_FLOAT"}]}, "has no 'attr' key"),
        ({"name": "a", "type": "T", "attr": [{"value": {}}]}, "without a string 'key'"),
        (
            {
                "name": "a",
                "type": "T",
                "attr": [{"key": "_datadump_original_op_names", "value": None}],
            },
            "must hold a 'list'",
        ),
        (
            {
                "name": "a",
                "type": "T",
                "output_desc": [
                    {"attr": [{"key": "_datadump_origin_output_index", "value": {"s": "0"}}]}
                ],
            },
            "must hold an integer 'i'",
        ),
    ],
)
def test_check_graph_dict_problems(op, problem):
    problems = check_graph_dict({"graph": [{"op": [op]}]})
    assert any(problem in p for p in problems), problems


def test_samples_pass_the_check():
    for path in (TDNN, SUB_MODEL):
        assert check_graph_dict(load_graph_dict(path)) == []


# ----------------------------------------------------------------------------- msaccucmp


def _fusion_rule_parser():
    msaccucmp = importlib.import_module("msprobe.msaccucmp")  # the oracle: never skipped
    root = os.path.dirname(msaccucmp.__file__)
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        import google.protobuf.message  # noqa: F401
    except ImportError:
        message = types.ModuleType("google.protobuf.message")
        message.DecodeError = type("DecodeError", (Exception,), {})
        sys.modules.setdefault("google", types.ModuleType("google"))
        sys.modules.setdefault("google.protobuf", types.ModuleType("google.protobuf"))
        sys.modules["google.protobuf.message"] = message
    from vector_cmp.fusion_manager.fusion_rule_parser import FusionRuleParser

    return FusionRuleParser


@pytest.mark.oracle
@pytest.mark.parametrize("sample", [TDNN, SUB_MODEL])
@pytest.mark.parametrize("via_text", [False, True])
def test_msaccucmp_reads_what_we_write_like_we_do(tmp_path, sample, via_text):
    model = load_graph_dict(sample)
    if via_text:  # JSON -> ge_proto text -> our reader -> JSON
        model = parse_graph_text(write_graph_text(model).splitlines(True))
    path = write_graph_json(model, tmp_path / "graph.json")
    parser = _fusion_rule_parser()(str(path))
    parser.analysis_fusion_rule()
    theirs = {op.op_name: op for op in parser.op_list}
    ours = load_graph(path)
    assert set(theirs) == {op.name for op in ours.ops}
    for op in ours.ops:
        their = theirs[op.name]
        assert their.attr.original_op_names == op.msaccucmp_original_names
        assert their.input_list == op.data_inputs
        assert their.attr.get_op_sequence() == op.id
        descs = [d for d in op.output_descs if d.has_attr]
        if not descs:
            continue
        assert len(their.output_desc) == len(descs)
        for position, (their_desc, desc) in enumerate(zip(their.output_desc, descs, strict=True)):
            index = desc.origin_output_index
            assert their_desc.origin_output_index == (position if index is None else index)
            assert their_desc.origin_format == desc.origin_format
            assert list(their_desc.origin_shape) == list(desc.origin_shape or [])
            if desc.origin_name:
                assert their_desc.origin_name == desc.origin_name


# ----------------------------------------------------------------------------- robustness

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=False)
    | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "name",
                    "type",
                    "id",
                    "input",
                    "attr",
                    "key",
                    "value",
                    "s",
                    "i",
                    "f",
                    "b",
                    "list",
                    "op",
                    "graph",
                    "output_desc",
                    "input_desc",
                    "shape",
                    "dim",
                    "dtype",
                    "layout",
                    "list_list_int",
                    "t",
                    "td",
                    "func",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=25,
)


def _model_like(values):
    """Dicts shaped like a ModelDef at the top (so the deeper levels get exercised)."""
    graph = st.fixed_dictionaries(
        {},
        optional={
            "name": values,
            "attr": values,
            "input": values,
            "op": st.lists(
                st.dictionaries(
                    st.sampled_from(
                        ["name", "type", "id", "input", "attr", "output_desc", "input_desc"]
                    ),
                    values,
                    max_size=5,
                ),
                max_size=3,
            )
            | values,
        },
    )
    return values | st.fixed_dictionaries(
        {"graph": st.lists(graph | values, max_size=2) | values},
        optional={"attr": values, "name": values},
    )


@settings(max_examples=300, deadline=None)
@given(_model_like(json_values))
def test_any_json_gives_a_graph_or_a_graph_error(data):
    try:
        graph = graph_from_dict(data, "x.json")
    except GraphError as error:
        assert error.path == "x.json"
        return
    for op in graph.ops:  # accessors never raise either
        assert isinstance(op.pass_names, list) and isinstance(op.original_names, list)
        assert isinstance(op.msaccucmp_original_names, list) and isinstance(op.is_fused, bool)
        for desc in op.output_descs + op.input_descs:
            assert isinstance(desc.origin_format, str)
            assert desc.origin_shape is None or isinstance(desc.origin_shape, tuple)
            assert desc.origin_output_index is None or isinstance(desc.origin_output_index, int)


def test_the_collector_is_paused_while_a_graph_is_built_then_it_is_frozen(tmp_path, monkeypatch):
    import gc

    from fusion_switch.readers import graph as graph_module

    seen = []
    real = graph_module.read_graph  # every reading of a file, JSON fast path or not

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(graph_module, "read_graph", spy)
    path = tmp_path / "g.json"
    path.write_text(json.dumps({"name": "m", "graph": [{"name": "g", "op": [{"name": "a"}]}]}))
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    graph_module.load_graph(path)
    assert gc.get_freeze_count() > frozen  # the graph is out of the collector's walks
    gc.unfreeze()
    path.write_text("{ not json")
    with pytest.raises(graph_module.GraphError):
        graph_module.load_graph(path)  # an error leaves the collector as it was too
    assert seen == [False, False]
    assert gc.isenabled()
    gc.disable()
    try:
        path.write_text('{"name": "m", "graph": [{"name": "g", "op": []}]}')
        frozen = gc.get_freeze_count()
        graph_module.load_graph(path)
        assert not gc.isenabled()  # a caller that had it off keeps it off
        assert gc.get_freeze_count() == frozen
    finally:
        gc.enable()
