"""How `bisect --metric` judges one run of the user's job (workflow/trials.Judge)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from fusion_switch.workflow.trials import Judge

LOSS = Judge(re.compile(r"loss=(\S+)"), 1.0, lower_is_better=True)
ACCURACY = Judge(re.compile(r"acc=(\S+)"), 0.5)


@pytest.mark.parametrize(
    ("judge", "output", "bad"),
    [
        (LOSS, "loss=0.3", False),
        (LOSS, "loss=2.5", True),
        (LOSS, "loss=inf", True),
        (ACCURACY, "acc=0.9", False),
        (ACCURACY, "acc=0.1", True),
        # a review: NaN compares False with any threshold, so a NaN loss, the classic sign of
        # a fusion bug, was a good run and bisect found "nothing to bisect"
        (LOSS, "loss=nan", True),
        (ACCURACY, "acc=nan", True),
        (LOSS, "loss=0.2 ... loss=NaN", True),
    ],
)
def test_a_run_is_bad_when_its_metric_is_worse_or_not_a_number(judge, output, bad, tmp_path):
    found, value = judge.verdict(0, output, tmp_path / "log")
    assert found is bad
    assert value is not None and (math.isnan(value) or value == float(output.split("=")[-1]))


def test_a_failing_run_is_bad_whatever_its_metric(tmp_path: Path):
    assert LOSS.verdict(1, "loss=0.1", tmp_path / "log")[0] is True
