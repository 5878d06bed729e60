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
    assert ub["section_source"] == "fusion_result.json"  # found next to the graph
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
