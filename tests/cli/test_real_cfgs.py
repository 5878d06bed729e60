"""`fusion-switch check` on the 63 real configurations of samples/real/cfg: the verdict (accepted
= no error) agrees with what CANN's FE parser does with each file and with every GE test."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REAL = Path(__file__).resolve().parents[1] / "data" / "real"
FACTS = json.loads((REAL / "expectations.json").read_text(encoding="utf-8"))["files"]
CFGS = sorted(n for n in FACTS if n.startswith("cfg/"))


@pytest.fixture(scope="module")
def verdicts() -> dict[str, list[str]]:
    result = subprocess.run(
        [sys.executable, "-m", "fusion_switch", "check", "--format", "json"]
        + [str(REAL / n) for n in CFGS],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode in (0, 1), result.stderr
    out = {}
    for item in json.loads(result.stdout):
        name = Path(item["file"]).relative_to(REAL).as_posix()
        out[name] = [d["code"] for d in item["diagnostics"] if d["severity"] == "error"]
    return out


def test_all_63_cfgs_are_checked(verdicts):
    assert len(CFGS) == 63 and sorted(verdicts) == CFGS


@pytest.mark.parametrize("name", CFGS)
def test_verdict_agrees_with_cann_fe_parser(verdicts, name):
    reading = FACTS[name]["cann_fe_parser_reading"]
    assert (not verdicts[name]) == reading["accepted"], (reading["why"], verdicts[name])


def test_verdicts_agree_with_the_7_ge_tests(verdicts):
    tested = {n: FACTS[n]["ge_test"]["accepted"] for n in CFGS if "ge_test" in FACTS[n]}
    assert len(tested) == 7
    assert {n: not verdicts[n] for n in tested} == tested
