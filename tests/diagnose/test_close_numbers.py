"""Numbers close to a threshold, or far beyond one, shown for what they are (a review): a
strict `--threshold cos=0.99999` printed "CosineSimilarity 1 <= 1" for a cosine of 0.99997, the
report's chart said "in band above 1" for 0.9999999 and its table 1.000000 for a failing
0.9999996, the replay table showed a finite 3.2e12 as "inf" and sorted "–" above the worst
score, and the editor showed a failing cosine of 0.9896 as "cosine 0.99" beside a 0.99 limit."""

from __future__ import annotations

import pytest
from fusion_switch.diagnose.report import render_report
from fusion_switch.diagnose.thresholds import Threshold
from fusion_switch.workflow import annotate


@pytest.mark.parametrize(
    ("limit", "value", "expected"),
    [
        (0.99999, 0.99997, "CosineSimilarity 0.99997 <= 0.99999"),
        (0.99999, 0.1587, "CosineSimilarity 0.1587 <= 0.99999"),
        (0.9999999, 0.9999996, "CosineSimilarity 0.9999996 <= 0.9999999"),
        (0.99, 0.62, "CosineSimilarity 0.62 <= 0.99"),  # the usual case, as before
        (0.99, 0.989996, "CosineSimilarity 0.989996 <= 0.99"),
    ],
)
def test_a_crossed_threshold_reads_crossed(limit, value, expected):
    assert Threshold("CosineSimilarity", limit, True).describe(value) == expected


def _report(**extra) -> str:
    summary = {
        "verdict": "v",
        "thresholds": {"CosineSimilarity": {"limit": 0.9999999, "in_band": ">"}},
        "ops": [{"op": "a", "order": 1, "verdict": "introduces", "cosine": 0.9999996}],
        **extra,
    }
    return render_report(summary)


def test_the_report_shows_a_strict_limit_and_a_value_just_under_it():
    page = _report()
    assert "in band above 0.9999999" in page
    assert ">1.000000<" not in page and "0.9999996" in page


def test_the_replay_table_shows_a_large_finite_score_and_sorts_missing_ones_last():
    fused = [
        {"op": "u", "order": 1, "verdict": "unverified", "replay_score": None},
        {"op": "p", "order": 2, "verdict": "introduces", "replay_score": 3.2e12},
    ]
    page = _report(replay={"replayed": 1, "fused_ops": 2}, fused_ops=fused)
    table = page[page.index("<h2>Replay") :]
    assert ">inf<" not in table
    assert '<td data-v="3200000000000.0">3.2e+12</td>' in table
    assert '<td data-v="">–</td>' in table  # no value: sorted last, as in the ops table


def test_the_editor_shows_a_failing_cosine_on_the_failing_side_of_its_limit():
    summary = {
        "thresholds": {"CosineSimilarity": {"limit": 0.99, "in_band": ">"}},
        "suspects": [
            {
                "rule": "RuleA",
                "section": "GraphFusion",
                "verdict": "introduces",
                "ops": ["x"],
                "evidence": [{"op": "x", "outputs": [{"metrics": {"CosineSimilarity": 0.9896}}]}],
            }
        ],
        "rules": [],
    }
    assert annotate.cosine_text(0.9896, summary) == "0.9896"
    assert annotate.cosine_text(0.8705, summary) == "0.87"  # as before where 2 digits tell
