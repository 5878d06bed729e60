"""`fusion-switch demo`: the whole workflow end to end, as a new user first runs it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from fusion_switch.cli.demo import caret_lines


def test_demo_runs_the_workflow_and_names_the_injected_rule(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "fusion_switch", "demo", "--out", str(tmp_path), "--no-progress"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    # 1. the CANN documentation sample: a trailing comma, shown with its line and a caret
    assert "cann_doc_sample.cfg: 1 problem(s)" in out
    assert "5:39: error [trailing-comma]" in out
    assert '      5 |             "SoftmaxFusionPass": "off",\n        |' in out
    assert "[unknown-rule] Unknown rule 'ConvBatchNormFusionPass'" in out
    # 2-3. generated case, comparison and verdict
    assert "injected: the scalar Mul (x0.125)" in out
    assert "verdict: proven by replay: AConv2dMulFusion (GraphFusion)" in out
    assert f"report:  {tmp_path / 'result' / 'report.html'}" in out
    assert (tmp_path / "result" / "report.html").is_file()
    # 4. a fusion_switch.cfg that switches the guilty rule off, and is accepted
    cfg = json.loads((tmp_path / "case" / "fusion_switch.cfg").read_text())
    assert cfg == {"Switch": {"GraphFusion": {"AConv2dMulFusion": "off"}, "UBFusion": {}}}
    assert "check: no errors" in out
    assert "OK: the top suspect AConv2dMulFusion is the injected rule" in out


def test_demo_with_another_fault(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "fusion_switch",
            "demo",
            "--out",
            str(tmp_path),
            "--fault",
            "wrong_axis",
            "--ops",
            "40",
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # SoftmaxV2 is also compiled by a single-op UB pass, which could have gone wrong as well:
    # the op is proven wrong, the two passes undecided (fortieth round)
    assert "OK: the replay proves" in result.stdout, result.stdout
    assert "SoftmaxFusionPass and TbeReduceElemwiseFusionPass" in result.stdout


@pytest.mark.parametrize(
    ("text", "start", "end", "expected"),
    [
        ("abc", 1, 2, (1, 2, "abc", " ^")),
        ("ab\n  xyz\n", 5, 8, (2, 3, "  xyz", "  ^~~")),
        ("ab\r\nxy", 4, 4, (2, 1, "xy", "^")),
        ("a\nb", 1, 3, (1, 2, "a", " ^")),  # a span over a line end is cut at it
    ],
)
def test_caret_lines(text, start, end, expected):
    assert caret_lines(text, start, end) == expected


def test_demo_leaves_a_fusion_switch_cfg_in_its_folder_alone(tmp_path):
    """`demo --out DIR` wrote DIR/fusion_switch.cfg, through a link to a team's shared file,
    with no history (a review). It writes into its generated case's folder, never through a
    link."""
    shared = tmp_path / "shared_team.cfg"
    shared.write_text('{"Switch": {"GraphFusion": {"MyRule": "off"}}}\n')
    before = shared.read_bytes()
    out = tmp_path / "job"
    out.mkdir()
    (out / "fusion_switch.cfg").symlink_to(shared)
    command = [sys.executable, "-m", "fusion_switch", "demo", "--out", str(out), "--no-progress"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert shared.read_bytes() == before
    assert (out / "fusion_switch.cfg").is_symlink()
    assert "AConv2dMulFusion" in (out / "case" / "fusion_switch.cfg").read_text()
    # a link planted where the demo writes is refused, not followed
    (out / "case" / "fusion_switch.cfg").unlink()
    (out / "case" / "fusion_switch.cfg").symlink_to(shared)
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert shared.read_bytes() == before
    assert result.returncode == 2 and "cannot write" in result.stderr, result.stderr
