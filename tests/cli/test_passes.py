"""`fusion-switch passes GRAPH`: fused ops grouped by pass, from JSON or text graphs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fusion_switch.synth.generator import generate_case

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "graphs" / "msit_tdnn_test.om.json"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fusion_switch", *args], capture_output=True, text=True, timeout=60
    )


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    return generate_case(tmp_path_factory.mktemp("passes"), n_ops=40, faults=[])


def test_json_listing_groups_ops_by_pass_with_sections(case):
    result = cli("passes", str(case.on_graph), "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    passes = {p["rule"]: p for p in data["passes"]}
    blocks = case.truth["n_blocks"]
    conv_bn = passes["ConvBatchnormFusionPass"]
    assert conv_bn["section"] == "GraphFusion" and len(conv_bn["ops"]) == blocks
    op = conv_bn["ops"][0]
    assert op == {
        "op": "b0_conv1b0_relu1",
        "type": "Conv2D",
        "original_ops": ["b0_conv1", "b0_bn1", "b0_relu1"],
        "passes": ["TbeCommonRules0FusionPass", "ConvBatchnormFusionPass"],  # most recent first
    }
    ub = passes["TbeCommonRules0FusionPass"]
    assert ub["section"] == "UBFusion" and len(ub["ops"]) == blocks + 1  # + the stem
    assert ub["section_source"] == "pass_name_ub"  # the op's own mark, before fusion_result.json
    counts = [len(p["ops"]) for p in data["passes"]]
    assert counts == sorted(counts, reverse=True)
    assert data["soc_version"] == "Ascend910B1"
    assert data["fused_ops"] == len({o["op"] for p in data["passes"] for o in p["ops"]})


def test_text_graph_gives_the_same_listing(case):
    from_json = json.loads(cli("passes", str(case.on_graph), "--format", "json").stdout)
    from_txt = json.loads(cli("passes", str(case.on_graph_txt), "--format", "json").stdout)
    assert from_txt["passes"] == from_json["passes"]


def test_text_output_reads_like_list_by_pass():
    result = cli("passes", str(SAMPLE))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("tdnn_NPU_0: 16 fused ops, 10 passes, target Ascend310")
    assert "PassName: BatchNormBnInferFusionPass  [GraphFusion]  7 ops" in out
    assert "  BatchNormalization_60_BNInferenceD (BNInferenceD)" in out
    assert "      also: HostBNFusionPass, BatchNormPreprocessFusionPass" in out
    assert "PassName: TbeReduceElemwiseFusionPass  [UBFusion]" in out  # _single_op_ub_pass_name


def test_unreadable_graph_exits_2(tmp_path):
    bad = tmp_path / "g.json"
    bad.write_text("{not json")
    result = cli("passes", str(bad))
    assert result.returncode == 2
    assert str(bad) in result.stderr and "Traceback" not in result.stderr
    missing = cli("passes", str(tmp_path / "none.json"))
    assert missing.returncode == 2 and "none.json" in missing.stderr


def test_json_listing_gives_absolute_paths_for_scripts(case, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "fusion_switch", "passes", case.on_graph.name, "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=case.on_graph.parent,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["graph"] == str(case.on_graph.resolve())
    assert data["fusion_result"] == str(case.fusion_result.resolve())  # found next to it


# --- real GE graphs and fusion_result.json files (tests/data/real, facts in expectations.json) ---

REAL = Path(__file__).resolve().parents[1] / "data" / "real"
FACTS = json.loads((REAL / "expectations.json").read_text(encoding="utf-8"))["files"]
REAL_GRAPHS = sorted(n for n, f in FACTS.items() if f["kind"] == "ge_model_def")
FOREIGN = sorted(n for n, f in FACTS.items() if n.startswith("graphs/") and n not in REAL_GRAPHS)
FUSION_RESULTS = sorted(n for n in FACTS if n.startswith("fusion_result/"))
SECTION = {"graph_fusion": "GraphFusion", "ub_fusion": "UBFusion"}


@pytest.mark.parametrize("name", REAL_GRAPHS)
def test_real_graph_lists_every_fused_op(name):
    facts = FACTS[name]
    result = cli("passes", str(REAL / name), "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["fused_ops"] == facts["fused_ops"]
    assert data["fused_without_pass_name"] == facts["fused_without_pass_name"]
    assert data["graphs"] == facts["graphs"]
    assert data["subgraph_references"] == facts["subgraph_references"]
    listed = {p["rule"]: len(p["ops"]) for p in data["passes"]}
    want = dict(facts["pass_op_counts"])
    if facts["fused_without_pass_name"]:
        want["unknown"] = facts["fused_without_pass_name"]
    assert listed == want
    every_op = {o["op"] for p in data["passes"] for o in p["ops"]}
    assert every_op == {f["op"] for f in facts["fused_op_list"]}


def test_resnet50_without_pass_names_text_says_unknown():
    name = "graphs/ge_proto_00017_OptimizeOriginalGraph_FeGraphFusionAfter.txt"
    result = cli("passes", str(REAL / name))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ResNet-50: 53 fused ops, 0 passes\n")
    assert "53 fused ops carry no pass name" in result.stdout
    assert "PassName: unknown  53 ops" in result.stdout
    assert "  conv1 (Conv2D)\n      original: conv1, bn_conv1, scale_conv1\n" in result.stdout


@pytest.mark.parametrize("name", FOREIGN)
def test_foreign_graph_formats_exit_2_saying_what_they_are(name):
    result = cli("passes", str(REAL / name))
    assert result.returncode == 2
    assert result.stdout == "" and "Traceback" not in result.stderr
    assert str(REAL / name) in result.stderr and "not a GE graph" in result.stderr
    assert "pass " in result.stderr  # what to pass instead


@pytest.mark.parametrize("name", FUSION_RESULTS)
def test_fusion_result_lists_fired_rules_per_graph_and_in_total(name):
    facts = FACTS[name]
    result = cli("passes", str(REAL / name), "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["layout"] == facts["layout"]
    assert sorted({f["rule"] for f in data["fired"]}) == facts["rules_fired"]
    assert [f"{g['session']}_{g['graph']}" for g in data["graphs"]] == [
        g["graph"] for g in facts["graphs"]
    ]
    for got, want in zip(data["graphs"], facts["graphs"], strict=True):
        assert {(r["section"], r["rule"]): r["effect_times"] for r in got["rules"]} == {
            (SECTION[key], rule): c["effect_times"]
            for key in SECTION
            for rule, c in want[key].items()
        }
    assert {t["rule"]: (t["effect_times"], t["match_times"]) for t in data["totals"]} == {
        rule: (t["effect_times"], t["match_times"]) for rule, t in facts["totals"].items()
    }


def test_fusion_result_text_shows_counts_per_graph():
    result = cli("passes", str(REAL / "fusion_result/mztf-MUZERO-fusion_result.json"))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "layout graphId_stream, 2 graphs, 2 rules listed, 1 took effect" in out
    assert "session 0 graph 11: 1 of 2 rules took effect" in out
    assert "  AutomaticUbFusion  [UBFusion]  effect 22, match 22" in out


def test_session_keyed_fusion_result_gives_sections_to_a_graph(tmp_path):
    """The loader before readers.fusion_result read no rule from this layout."""
    graph = tmp_path / "ge_proto_00000001_Build.txt"
    graph.write_text(
        'graph { name: "g"\n  op { name: "ab" type: "Conv2D" attr { key: "pass_name" value {'
        ' list { s: "MyOwnFusionPass" } } } }\n}\n'
    )
    (tmp_path / "fusion_result.json").write_text(
        '{"session_and_graph_id_0_1": {"ub_fusion": {"MyOwnFusionPass": '
        '{"effect_times": "1", "match_times": "1"}}}}'
    )
    data = json.loads(cli("passes", str(graph), "--format", "json").stdout)
    (entry,) = data["passes"]
    assert (entry["rule"], entry["section"], entry["section_source"]) == (
        "MyOwnFusionPass",
        "UBFusion",
        "fusion_result.json",
    )


def test_fused_op_without_pass_name_gets_an_inferred_rule(tmp_path):
    graph = tmp_path / "ge_proto_00000002_Build.txt"
    graph.write_text(
        'graph { name: "g"\n  op { name: "conv" type: "Conv2D" attr { key: '
        '"_datadump_original_op_names" value { list { s: "conv" s: "bias" } } } }\n}\n'
    )
    (tmp_path / "fusion_result.json").write_text(
        '[{"session_and_graph_id": "0_1", "graph_fusion": {'
        '"AABiasaddConvFusion": {"effect_times": "1", "match_times": "1"},'
        '"ConstToAttrPass": {"effect_times": "5", "match_times": "5"}}}]'
    )
    result = cli("passes", str(graph), "--format", "json")
    data = json.loads(result.stdout)
    (entry,) = data["passes"]
    assert entry["rule"] == "unknown"
    assert entry["ops"][0]["inferred"] == ["AABiasaddConvFusion"]
    text = cli("passes", str(graph)).stdout
    assert "inferred (not recorded): AABiasaddConvFusion" in text


def test_a_folder_given_to_passes_says_what_to_pass(tmp_path):
    result = cli("passes", str(tmp_path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{tmp_path} is a folder; pass a graph file" in result.stderr
