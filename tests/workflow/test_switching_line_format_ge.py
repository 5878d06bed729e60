"""A line-format file rewritten as JSON for a rule GE reads (workflow/switching.py): GE read
none of its lines, so a bisection's trial must keep on what GE ran on, and the user is told
which lines GE now obeys."""

from __future__ import annotations

import pytest
from fusion_switch.catalogue import builtin_catalogue
from fusion_switch.workflow.switching import as_run_changes, ignored_by_ge, json_note

CAT = builtin_catalogue()
ADD, SUB = "AInplaceAddFusionPass", "AInplaceSubFusionPass"  # REG_FUSION_PASS: GE runs them
LINES = f"{ADD}:off\n{SUB}:off\nR000:off\n"


def test_the_off_lines_ge_ignored_are_the_ge_passes_only():
    assert ignored_by_ge(LINES, CAT) == [("GraphFusion", ADD), ("GraphFusion", SUB)]
    json_text = f'{{"Switch": {{"GraphFusion": {{"{ADD}": "off"}}}}}}'
    assert ignored_by_ge(json_text, CAT) == []  # GE reads JSON: nothing was ignored


@pytest.mark.parametrize(
    ("on", "off", "expected"),
    [
        # off a GE pass: rewritten as JSON; the other GE line GE ignored stays as it ran (on)
        (
            [],
            [("GraphFusion", ADD, "off")],
            [("GraphFusion", ADD, "off"), ("GraphFusion", SUB, "on")],
        ),
        # a GE candidate "on" (the file said off, GE ran it) is written on
        (
            [("GraphFusion", ADD)],
            [("GraphFusion", SUB, "off")],
            [("GraphFusion", SUB, "off"), ("GraphFusion", ADD, "on")],
        ),
        # only FE rules off: the file stays in lines, GE still reads none of it
        (
            [("GraphFusion", ADD)],
            [("GraphFusion", "R001", "off")],
            [("GraphFusion", "R001", "off")],
        ),
    ],
)
def test_a_trial_keeps_on_what_ge_ran_on(on, off, expected):
    assert as_run_changes(LINES, on, off, CAT) == expected


def test_the_note_names_the_lines_ge_now_obeys():
    note = json_note("f.cfg", LINES, [("GraphFusion", ADD, "off")], CAT)
    assert "it is now JSON" in note and f"GE now switches {SUB} off too" in note
    assert json_note("f.cfg", "ALL:off\n", [("GraphFusion", ADD, "off")], CAT).endswith(
        "GE now switches ALL off too, as the file says, which it ignored in the line format"
    )
    assert json_note("f.cfg", LINES, [("GraphFusion", "R001", "off")], CAT) == ""
