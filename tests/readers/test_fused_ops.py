"""readers.fused_ops and the graph reader on every real GE graph: every graph of the model, every
fused op (with and without pass names), sub-graph references; foreign formats recognised."""

from __future__ import annotations

from collections import Counter

import pytest
from fusion_switch.readers.fused_ops import derived_ops, fused_ops, subgraph_refs
from fusion_switch.readers.graph import GraphError, load_graph, load_graph_dict
from fusion_switch.readers.graph_kind import sniff_graph
from real_samples import REAL, expectations, files_under

GRAPHS = [f for f in files_under("graphs") if expectations()[f]["kind"] == "ge_model_def"]
FOREIGN = [f for f in files_under("graphs") if expectations()[f]["kind"] != "ge_model_def"]


def test_the_samples_hold_seven_graphs_and_four_foreign_files():
    assert (len(GRAPHS), len(FOREIGN)) == (7, 4)


@pytest.fixture(scope="module", params=GRAPHS)
def real(request):
    return request.param, expectations()[request.param], load_graph(REAL / request.param)


def test_every_graph_of_the_model_is_read(real):
    _, facts, graph = real
    assert [
        {"name": g.name, "ops": len(g.ops), "root": g is graph} for g in graph.all_graphs
    ] == facts["graphs"]
    assert [op.name for g in graph.all_graphs for op in g.ops] == facts["op_names"]


def test_subgraph_references_name_their_subgraph(real):
    _, facts, graph = real
    assert [
        {"op": r.op, "type": r.type, "subgraph": r.subgraph, "in_file": r.in_file}
        for r in subgraph_refs(graph)
    ] == facts["subgraph_references"]


def test_every_fused_op_with_and_without_pass_name(real):
    _, facts, graph = real
    found = fused_ops(graph)
    assert len(found) == facts["fused_ops"]
    assert sum(not f.has_pass_name for f in found) == facts["fused_without_pass_name"]
    assert [
        {
            "op": f.op,
            "type": f.type,
            "graph": f.graph,
            "original_op_names": list(f.original_names),
            "pass_name": list(f.pass_name),
            "pass_name_ub": list(f.pass_name_ub),
            "_single_op_ub_pass_name": list(f.single_op_ub_pass_name),
        }
        for f in found
    ] == facts["fused_op_list"]
    per_pass = Counter(rule for f in found for rule in dict.fromkeys(f.pass_name))
    assert dict(per_pass) == facts["pass_op_counts"]


def test_resnet50_fe_dumps_have_53_fused_ops_without_pass_name():
    for name in (
        "graphs/ge_proto_00017_OptimizeOriginalGraph_FeGraphFusionAfter.txt",
        "graphs/ge_proto_00026_afterUBMatch.txt",
    ):
        found = fused_ops(load_graph(REAL / name))
        assert len(found) == 53 and not any(f.has_pass_name for f in found)
        assert all(f.rules == [] and len(f.original_names) == 3 for f in found)


def test_multiop_with_one_original_name_is_derived_not_fused():
    graph = load_graph(REAL / "graphs/ge_proto_00015_OptimizeQuantGraph_FeGraphFusionAfter.txt")
    assert [f.op for f in fused_ops(graph)] == ["conv1"]
    derived = derived_ops(graph)
    assert len(derived) == 42 and derived[0] == "RequantHostCpuOp_107"


def test_repeated_op_names_carry_their_graph(tmp_path):
    path = tmp_path / "ge_proto_00000009_Build.txt"
    fused = (
        '  op { name: "x" type: "Conv2D" attr { key: "_datadump_original_op_names" value { '
        'list { s: "a" s: "b" } } } }\n'
    )
    path.write_text(
        'graph {\n  name: "root"\n  op { name: "call" type: "PartitionedCall" '
        'subgraph_name: "sub" subgraph_name: "gone" }\n' + fused + "}\n"
        'graph {\n  name: "sub"\n' + fused + "}\n"
    )
    graph = load_graph(path)
    assert [(f.label, f.graph) for f in fused_ops(graph)] == [("root/x", "root"), ("sub/x", "sub")]
    assert [(r.subgraph, r.in_file) for r in subgraph_refs(graph)] == [
        ("sub", True),
        ("gone", False),
    ]


@pytest.mark.parametrize("name", FOREIGN)
def test_foreign_formats_are_refused_saying_what_they_are(name):
    facts = expectations()[name]
    kind = sniff_graph(REAL / name)
    assert not kind.is_graph and kind.is_foreign
    with pytest.raises(GraphError) as info:
        load_graph_dict(REAL / name)
    message = str(info.value)
    assert message.startswith(str(REAL / name))
    assert "not a GE graph" in message and "pass " in message
    word = {
        "Caffe": "Caffe",
        "ONNX": "ONNX",
        "TensorFlow": "TensorFlow GraphDef",
        "not protobuf": "1-byte file",
    }
    assert any(key in facts["why"] and value in message for key, value in word.items())


def test_onnx_text_dump_points_at_its_ge_proto_twin():
    with pytest.raises(GraphError, match=r"pass \S*ge_proto_00000000_Build\.txt"):
        load_graph(REAL / "graphs/ge_onnx_00000000_graph_1_Build.pbtxt")


@pytest.mark.parametrize(
    ("folder", "kind"),
    [
        ("dumps/Sayout-adversial_poison/exception_info.1026.147.1730796695373243", "dump"),
        ("fusion_result/SLAM-LLM-fusion_result.json", "fusion_result"),
        ("fusion_result/mztf-MUZERO-fusion_result.json", "fusion_result"),
        ("cann_config/CANN_910b_stub-fusion_config.json", "fusion_switch_cfg"),
        ("cfg/ge-fixture-fusion_switch_old_format", "fusion_switch_cfg"),
        ("cfg/ge-fixture-fusion_switch_empty", "empty"),
        ("stats_dumps/msinsight-mnist/dump_data0/rank_0/mnist/0/0/statistic.csv", "stats_csv"),
    ],
)
def test_other_sample_files_given_as_a_graph_are_named(folder, kind):
    assert sniff_graph(REAL / folder).kind == kind
    with pytest.raises(GraphError):
        load_graph(REAL / folder)
