"""readers.fusion_result on every real fusion_result.json (all six layouts) and on bad input."""

from __future__ import annotations

import pytest
from fusion_switch.readers.fusion_result import (
    FusionResultError,
    read_fusion_result,
)
from real_samples import REAL, expectations, files_under

SECTION = {"graph_fusion": "GraphFusion", "ub_fusion": "UBFusion"}
FILES = files_under("fusion_result")


def test_all_eleven_files_and_six_layouts_are_covered():
    assert len(FILES) == 11
    assert {expectations()[f]["layout"] for f in FILES} == {
        "session_keyed",
        "record_list",
        "record",
        "record_stream",
        "graphId_record",
        "graphId_stream",
    }


@pytest.mark.parametrize("name", FILES)
def test_layout_graphs_and_every_count_match_the_file(name):
    facts = expectations()[name]
    result = read_fusion_result(REAL / name)
    assert result.layout == facts["layout"]
    assert ["_".join(g) for g in result.graphs()] == [g["graph"] for g in facts["graphs"]]
    got: dict[tuple[str, str, str], dict] = {}
    for r in result.records:
        counts = {"match_times": r.match_times, "effect_times": r.effect_times}
        if r.repository_hit_times is not None:
            counts["repository_hit_times"] = r.repository_hit_times
        got[(f"{r.session}_{r.graph}", r.section, r.name)] = counts
    want = {
        (g["graph"], SECTION[key], rule): counts
        for g in facts["graphs"]
        for key in SECTION
        for rule, counts in g[key].items()
    }
    assert got == want


@pytest.mark.parametrize("name", FILES)
def test_fired_rules_and_totals_match_the_file(name):
    facts = expectations()[name]
    result = read_fusion_result(REAL / name)
    assert sorted({rule for _, rule in result.fired()}) == facts["rules_fired"]
    totals = result.totals()
    assert len(totals) == facts["rules_total"]
    assert {(s, rule): n for (s, rule), n in totals.items()} == {
        (SECTION[t["section"]], rule): t["effect_times"] for rule, t in facts["totals"].items()
    }
    assert {rule: n for (_, rule), n in result.match_totals().items()} == {
        rule: t["match_times"] for rule, t in facts["totals"].items()
    }


def test_session_keyed_file_splits_session_and_graph():
    result = read_fusion_result(REAL / "fusion_result/SLAM-LLM-fusion_result.json")
    assert result.graphs() == [("0", "0"), ("1", "1"), ("2", "2")]
    fired = [r for r in result.records if r.name == "TransdataFz2FzgFusionPass" and r.effect_times]
    assert [(r.session, r.graph, r.section) for r in fired] == [("2", "2", "GraphFusion")]


def test_old_graphid_stream_keeps_session_and_graph():
    result = read_fusion_result(REAL / "fusion_result/mztf-MUZERO-fusion_result.json")
    assert result.graphs() == [("0", "11"), ("0", "31")]
    assert result.totals()[("UBFusion", "AutomaticUbFusion")] == 22
    assert result.fired() == [("UBFusion", "AutomaticUbFusion")]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty file"),
        (b"   \n", "empty file"),
        (b"\x00\x01\xff\xfe", "binary data"),
        (b'{"Switch": {"GraphFusion": {"ALL": "off"}}}', "none of graph_fusion"),
        (b'{"graph_fusion": {\n  "A": ,}}', "line 2 column 8"),
        (b'{"graph_fusion": {"A": {"effect_times": "x"}}}', "graph_fusion.A.effect_times"),
        (b'{"graph_fusion": []}', "graph_fusion is a JSON list"),
        (b'{"session_and_graph_id_0_0": 3}', "session_and_graph_id_0_0: a JSON int"),
        (b"[1, 2]", "record 1: a JSON int"),
        (b"42", "a JSON int, not a fusion_result.json"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deep"),  # RecursionError (a review)
    ],
)
def test_bad_files_are_refused_naming_file_and_problem(tmp_path, content, message):
    path = tmp_path / "fusion_result.json"
    path.write_bytes(content)
    with pytest.raises(FusionResultError, match=r"fusion_result\.json") as info:
        read_fusion_result(path)
    assert message in str(info.value)
    assert str(path) in str(info.value)


def test_missing_file_and_folder_are_refused(tmp_path):
    with pytest.raises(FusionResultError, match="no such file"):
        read_fusion_result(tmp_path / "absent.json")
    with pytest.raises(FusionResultError, match="is a folder"):
        read_fusion_result(tmp_path)


def test_a_record_with_no_rule_still_names_its_graph(tmp_path):
    path = tmp_path / "fusion_result.json"
    path.write_text(
        '{"session_and_graph_id": "3_7"}{"session_and_graph_id": "3_8", "ub_fusion": {}}'
    )
    result = read_fusion_result(path)
    assert (result.layout, result.graphs(), result.records) == (
        "record_stream",
        [("3", "7"), ("3", "8")],
        [],
    )
