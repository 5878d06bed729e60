"""Every surface of one comparison says the same thing: the CLI's verdict and exit status,
summary.json, report.html, the editor's diagnostics, fixes and changes, and `apply`. A review
(thirty-fifth round of issue 16) found them apart wherever the verdict was not a plain proof."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fusion_switch import cfg
from fusion_switch.diagnose.exit_status import exit_status
from fusion_switch.synth.generator import generate_case
from fusion_switch.workflow import annotate
from fusion_switch.workflow.verdicts import rule_verdicts

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from compare_cli import compare_summary
from verdict_cases import undecided_fault

FORBIDDEN = "AABiasaddConvFusion"  # GraphFusion, on CANN's forbidden-close list


def _renamed(case, old: str, new: str) -> None:
    """The fusion-on graph and fusion_result.json with one pass renamed."""
    for path in (case.on_graph, case.fusion_result):
        path.write_text(path.read_text().replace(f'"{old}"', f'"{new}"'))


def _green(out: Path) -> bool:
    return 'class="verdict ok"' in (out / "report.html").read_text()


def test_a_rule_cann_will_not_switch_off_is_never_offered_for_switching_off(tmp_path):
    """The CLI said 'add "AABiasaddConvFusion": "off"' and the editor's preferred quick fix
    wrote it, while `apply` refused it and `check` warned that it has no effect."""
    case = generate_case(tmp_path / "case", faults=["dropped_scale"])  # AConv2dMulFusion
    _renamed(case, "AConv2dMulFusion", FORBIDDEN)
    done, summary = compare_summary(case, tmp_path / "out")
    top = summary["suspects"][0]
    assert top["rule"] == FORBIDDEN and top.get("cannot_switch_off") is True, top
    assert done.returncode == 1
    assert f'"{FORBIDDEN}": "off"' not in done.stdout, done.stdout
    assert "forbidden-close" in done.stdout and "forbidden-close" in summary["verdict"]
    summary = annotate.compact_summary(summary)  # what the editor keeps and reads
    assert annotate.suspect_changes(summary) == []
    doc = cfg.parse(json.dumps({"Switch": {"GraphFusion": {FORBIDDEN: "on"}}}))
    found = [f for f in annotate.findings(doc, summary) if f.data.get("rule") == FORBIDDEN]
    assert found and "forbidden-close" in found[0].message, found
    assert annotate.fixes(doc, found) == []
    assert "forbidden-close" in annotate.verdict_message(summary)


def test_an_undecided_split_is_neither_green_nor_no_suspect(tmp_path, monkeypatch):
    case = generate_case(tmp_path / "case", faults=[undecided_fault(monkeypatch)])
    done, summary = compare_summary(case, tmp_path / "out")
    assert done.returncode == 1 and summary["verdict"].startswith("undecided")
    assert not _green(tmp_path / "out")
    report = (tmp_path / "out" / "report.html").read_text()
    assert "No fused op introduces error." not in report
    not_proven = report.split("<h2>Not proven")[1].split("<h2>")[0]
    assert "ConvBatchnormFusionPass" in not_proven and "undecided" in not_proven
    message = annotate.verdict_message(summary)
    assert "no fusion rule is suspect" not in message and "undecided" in message, message


def test_a_heuristic_guess_with_the_replay_exits_as_without_it(tmp_path):
    """The same rows' guess exited 0 with the replay on, 1 with --no-replay."""
    case = generate_case(tmp_path / "case", faults=["inverted_gate"], custom_ops=True)
    done, summary = compare_summary(case, tmp_path / "out")
    assert "heuristic" in summary["verdict"], summary["verdict"]
    assert done.returncode == 1 == exit_status(summary)
    assert not _green(tmp_path / "out")
    plain, _ = compare_summary(case, tmp_path / "plain", "--no-replay")
    assert plain.returncode == 1


@pytest.mark.parametrize("how", ["--no-replay", "--memory-budget=40M"])
def test_a_heuristic_suspect_reaches_the_editor_when_the_replay_did_not_run(tmp_path, how):
    """The editor dropped the suspects the replay did not run for, while `apply
    --include-unverified` switched them off."""
    case = generate_case(tmp_path / "case", faults=["dropped_scale"])
    _, written = compare_summary(case, tmp_path / "out", how)
    assert written.get("replay") is None, "the replay ran: the case needs a smaller budget"
    assert [s["verdict"] for s in written["suspects"]][:1] == ["heuristic"]
    summary = annotate.compact_summary(written)  # what the editor keeps and reads (a review)
    assert [s["verdict"] for s in summary["suspects"]][:1] == ["heuristic"]
    rule = summary["suspects"][0]["rule"]
    assert (summary["suspects"][0]["section"], rule, "off") in annotate.suspect_changes(
        summary, include_unverified=True
    )
    assert annotate.suspect_changes(summary) == []
    doc = cfg.parse(json.dumps({"Switch": {"GraphFusion": {rule: "on"}}}))
    codes = {f.code for f in annotate.findings(doc, summary) if f.data.get("rule") == rule}
    assert codes == {annotate.UNVERIFIED_CODE}
    assert "no fusion rule is suspect" not in annotate.verdict_message(summary)
    assert not _green(tmp_path / "out")


def test_a_rule_nothing_blames_is_offered_by_neither_apply_nor_the_editor(tmp_path):
    """A rule whose ops only lack a kernel (no row blames them) was switched off by `apply
    --include-unverified`, while the editor offered nothing."""
    case = generate_case(tmp_path / "case", faults=[], custom_ops=True)
    done, summary = compare_summary(case, tmp_path / "out")
    plain = [r["rule"] for r in summary.get("unverified_rules", []) if r["verdict"] == "unverified"]
    assert plain, summary.get("unverified_rules")
    assert done.returncode == 0 and summary["suspects"] == []
    assert [v.rule for v in rule_verdicts(summary)] == []
    assert annotate.suspect_changes(summary, include_unverified=True) == []


def test_a_section_the_run_does_not_record_is_said_to_be_assumed(tmp_path):
    """A UB pass the catalogue does not know, named only in pass_name (as real graphs do),
    with no fusion_result.json: its section was taken to be GraphFusion, said nowhere but in
    summary.json's section_source, and `apply` wrote it there without a word."""
    case = generate_case(tmp_path / "case", faults=["dropped_scale"])
    _renamed(case, "AConv2dMulFusion", "TbeNotInTheCatalogueFusionPass")
    case.fusion_result.unlink()
    done, summary = compare_summary(case, tmp_path / "out")
    top = summary["suspects"][0]
    assert top["section_source"].startswith("assumed"), top["section_source"]
    assert "section is assumed" in done.stdout and "--fusion-result" in done.stdout
    cfg_path = tmp_path / "fusion_switch.cfg"
    cfg_path.write_text('{"Switch": {"GraphFusion": {}, "UBFusion": {}}}\n')
    applied = subprocess.run(
        [sys.executable, "-m", "fusion_switch", "apply", str(tmp_path / "out"), str(cfg_path)],
        capture_output=True,
        text=True,
        input="n\n",
        timeout=120,
    )
    assert "section is assumed" in applied.stdout + applied.stderr, applied
    doc = cfg.parse(cfg_path.read_text())
    (found,) = [f for f in annotate.findings(doc, summary) if f.code == annotate.SUSPECT_CODE]
    assert "section is assumed" in found.message, found.message


def test_a_ub_pass_named_only_in_pass_name_is_still_told_from_the_graph_pass(tmp_path):
    """Real graphs record UB passes in pass_name only (49 of 49 in a real ge_proto dump). The
    split between a graph pass and a UB pass read pass_name_ub alone: without it, "undecided
    between ConvBatchnormFusionPass and TbeCommonRules0FusionPass" although fusion_result.json
    puts the second in UBFusion (a review)."""
    case = generate_case(tmp_path / "case", faults=["dropped_relu"])
    graph = json.loads(case.on_graph.read_text())
    for part in graph["graph"]:
        for op in part.get("op", []):
            op["attr"] = [a for a in op.get("attr", []) if a["key"] != "pass_name_ub"]
    case.on_graph.write_text(json.dumps(graph))
    done, summary = compare_summary(case, tmp_path / "out")
    assert summary["verdict"].startswith("proven by replay: TbeCommonRules0FusionPass"), summary[
        "verdict"
    ]
    assert done.returncode == 1


def test_a_heuristic_guess_lists_the_ops_the_rows_blame(tmp_path):
    """A review: the CLI printed "TbeEltwiseFusionPass heuristic ... b0_sigb0_glu,
    b1_sigb1_glu" where the rows blame b1_sigb1_glu alone (every unverified op was listed)."""
    case = generate_case(tmp_path / "case", faults=["inverted_gate"], custom_ops=True)
    _, summary = compare_summary(case, tmp_path / "out")
    (guess,) = [r for r in summary["unverified_rules"] if r["verdict"] == "heuristic"]
    rows = {f["op"]: f for f in summary["ops"]}
    assert guess["ops"] and all(rows[op]["verdict"] == "introduces" for op in guess["ops"]), (
        guess["ops"],
        {op: rows[op]["verdict"] for op in guess["ops"]},
    )


def test_the_parent_localises_what_the_replay_hands_over_with_the_ub_rules(monkeypatch):
    """A review of the fix above: the sub-graphs the replay hands to the waiting parent (on a
    real network, the end of the measuring) were localised without fusion_result.json's UB
    rules, so one op came out undecided or guilty by which process measured it."""
    from types import SimpleNamespace

    from fusion_switch.diagnose import replay_background

    seen = {}
    monkeypatch.setattr(replay_background, "dump_dirs", lambda outcome: (None, None))
    monkeypatch.setattr(replay_background, "EvidenceStore", lambda *dirs: None)
    monkeypatch.setattr(
        replay_background,
        "measure_handed",
        lambda subs, off, store, judge: seen.setdefault("judge", judge),
    )
    table = {"TbeU": {"section": "UBFusion"}, "GraphG": {"section": "GraphFusion"}}
    parent = SimpleNamespace(outcome=None, table=table)
    replay_background.BackgroundReplay._measure_handed(parent, [], {}, judging=(None, {}))
    assert seen["judge"].localise.keywords["ub_rules"] == frozenset({"TbeU"})


@pytest.mark.parametrize("missing", ["fused op", "clean run"])
def test_an_unverified_op_where_the_outputs_diverge_is_never_exit_0(tmp_path, missing):
    """A review: the faulty fused op not dumped on the fusion-on side ended "no replayed fused
    op introduces error; 1 of 34 fused ops unverified: not proven clean" with exit 0, the
    status of a clean run, and the editor's "no fusion rule is suspect". Where the outputs
    diverge and a fused op could not be verified, the run exits 3 (never clean); a clean run
    whose custom op has no kernel still exits 0."""
    if missing == "fused op":
        case = generate_case(tmp_path / "case", faults=["dropped_scale"])
        for dump in case.on_dump.iterdir():
            if dump.name.split(".")[1] == "b1_conv2":
                dump.unlink()
    else:
        case = generate_case(tmp_path / "case", faults=[], custom_ops=True)
    done, summary = compare_summary(case, tmp_path / "out")
    expected = 3 if missing == "fused op" else 0
    said = "not proven clean" if expected == 3 else "every output agrees"
    assert said in summary["verdict"], summary["verdict"]
    assert done.returncode == expected == exit_status(summary), summary["verdict"]
    message = annotate.verdict_message(annotate.compact_summary(summary))
    if expected == 3:
        assert "not proven clean" in message and "no fusion rule is suspect" not in message


def test_a_clean_run_with_ops_no_kernel_covers_is_green_and_lists_them(tmp_path):
    """The report is green exactly when the run exits 0: a clean network whose custom ops
    the replay cannot verify lists them under "Not proven" without alarm."""
    case = generate_case(tmp_path / "case", faults=[], custom_ops=True)
    done, _ = compare_summary(case, tmp_path / "out")
    report = (tmp_path / "out" / "report.html").read_text()
    assert done.returncode == 0 and _green(tmp_path / "out")
    assert "<h2>Not proven" in report and "unverified" in report.split("<h2>Not proven")[1]


def test_a_summary_from_before_the_replay_is_applied_by_neither_apply_nor_the_editor(tmp_path):
    """A ``last-compare.json`` written before the replay existed lists suspects without a
    verdict (kept across an upgrade). `apply` counted them heuristic and refused them, while
    the editor's applySuspects took a missing verdict for a proof and switched the rule off (a
    review)."""
    old = {
        "suspects": [
            {"rule": "SoftmaxFusionPass", "section": "GraphFusion", "ops": ["softmax_1"]},
        ]
    }
    assert [v.verdict for v in rule_verdicts(old)] == ["heuristic"]
    for summary in (old, annotate.compact_summary(old)):
        assert annotate.suspects(summary) == []
        assert annotate.suspect_changes(summary) == []
        assert annotate.suspect_changes(summary, include_unverified=True) == [
            ("GraphFusion", "SoftmaxFusionPass", "off")
        ]
        doc = cfg.parse(json.dumps({"Switch": {"GraphFusion": {"SoftmaxFusionPass": "on"}}}))
        codes = {f.code for f in annotate.findings(doc, summary)}
        assert codes == {annotate.UNVERIFIED_CODE}, codes
    cfg_path = tmp_path / "fusion_switch.cfg"
    cfg_path.write_text('{"Switch": {"GraphFusion": {"SoftmaxFusionPass": "on"}}}\n')
    summary_path = tmp_path / "summary.json"
    summary_path.write_text(json.dumps(old))
    done = subprocess.run(
        [sys.executable, "-m", "fusion_switch", "apply", str(summary_path), str(cfg_path), "--yes"],
        capture_output=True,
        text=True,
    )
    assert "SoftmaxFusionPass" in done.stdout + done.stderr
    assert '"SoftmaxFusionPass": "on"' in cfg_path.read_text()
