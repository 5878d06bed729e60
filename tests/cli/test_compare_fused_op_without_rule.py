"""A fused op whose graph names no fusion rule (its original ops only: real Build graphs carry
such ops, readers/fused_ops.py) and that introduces the error (found by a review).

The replay proved it wrong (score 896 against a tolerance of 1.12), and every surface said the
opposite: "no fused op introduces error: every fused op agrees with its replay; error starts at
ops no fusion rule produced", exit 0, a green report, and "no fusion rule is suspect" in the
editor. Without the replay the rows blamed it as an op "no fusion rule produced"."""

from __future__ import annotations

import json

import pytest
from fusion_switch.cli import main
from fusion_switch.diagnose.exit_status import exit_status
from fusion_switch.synth.generator import generate_case
from fusion_switch.workflow import annotate

PASS_KEYS = ("pass_name", "pass_name_ub", "_single_op_ub_pass_name")


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    """The inverted-gate fault in a fused Sigmoid+Mul (GLU) whose pass names are dropped."""
    made = generate_case(
        tmp_path_factory.mktemp("norule") / "case",
        n_ops=40,
        faults=["inverted_gate"],
        graph_text=False,
    )
    graph = json.loads(made.on_graph.read_text())
    stripped = []
    for part in graph["graph"]:
        for op in part["op"]:
            keys = {a["key"] for a in op.get("attr", [])}
            if "_glu" in op["name"] and keys & set(PASS_KEYS):
                op["attr"] = [a for a in op["attr"] if a["key"] not in PASS_KEYS]
                stripped.append(op["name"])
    assert stripped  # the generator's GLUs are fused ops with pass names
    made.on_graph.write_text(json.dumps(graph))
    return made


def _compare(case, out, *extra) -> tuple[int, dict]:
    status = main(
        [
            *("compare", "-m", str(case.on_dump), "-g", str(case.off_dump)),
            *("-f", str(case.on_graph), "-cf", str(case.off_graph)),
            *("-out", str(out), "--no-progress", *extra),
        ]
    )
    return status, json.loads((out / "summary.json").read_text())


def test_a_fused_op_the_replay_proves_wrong_is_named_though_its_rule_is_unknown(case, tmp_path):
    status, summary = _compare(case, tmp_path / "out")
    (found,) = summary["fused_ops_without_rule"]
    assert found["op"].endswith("_glu") and found["verdict"] == "introduces"
    assert found["original_ops"] and found["replay_score"] > 1
    verdict = summary["verdict"]
    assert verdict.startswith(f"proven by replay: fused op {found['op']} introduces the error")
    assert "names no fusion rule" in verdict
    assert "every fused op agrees" not in verdict and "no fusion rule produced" not in verdict
    assert status == 1 == exit_status(summary)
    report = (tmp_path / "out" / "report.html").read_text()
    assert 'class="verdict ok"' not in report and found["op"] in report
    editor = annotate.compact_summary(summary)
    message = annotate.verdict_message(editor)
    assert found["op"] in message and "no fusion rule is suspect" not in message
    assert exit_status(editor) == 1


def test_without_the_replay_it_is_a_guess_about_a_fused_op(case, tmp_path):
    status, summary = _compare(case, tmp_path / "out", "--no-replay")
    (found,) = summary["fused_ops_without_rule"]
    assert found["verdict"] == "heuristic"
    verdict = summary["verdict"]
    assert verdict.startswith("most likely (heuristic, not proven by replay): fused op ")
    assert found["op"] in verdict and "no fusion rule produced" not in verdict
    assert status == 1 == exit_status(summary)
    assert "no fusion rule is suspect" not in annotate.verdict_message(
        annotate.compact_summary(summary)
    )


def test_a_replay_with_no_fused_op_to_replay_gives_the_rows_verdict(tmp_path):
    """A review: a fusion-on graph in which no op is recognisably fused (no attributes) gave,
    with the replay (0 fused ops, 0 replayed), "every fused op agrees with its replay", exit 0
    and a green report, where the same run without the replay said "not proven clean", exit 3:
    an empty replay proves nothing and leaves the verdict to the rows."""
    made = generate_case(tmp_path / "case", n_ops=40, faults=["dropped_scale"], graph_text=False)
    graph = json.loads(made.on_graph.read_text())
    for op in graph["graph"][0]["op"]:
        op.pop("attr", None)
        op.pop("type", None)
    made.on_graph.write_text(json.dumps(graph))
    rows_status, rows = _compare(made, tmp_path / "rows", "--no-replay")
    status, summary = _compare(made, tmp_path / "replay")
    assert summary["replay"]["fused_ops"] == 0
    assert "agrees with its replay" not in summary["verdict"]
    assert summary["verdict"] == rows["verdict"]
    assert status == rows_status == exit_status(summary) == 3
