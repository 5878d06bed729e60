"""Which rules a summary proves (workflow/verdicts.py) and which switches a rule name means
(workflow/switching.py), table-driven."""

from __future__ import annotations

import pytest
from fusion_switch.catalogue import builtin_catalogue
from fusion_switch.workflow.switching import resolve_rules, split_name, switched_text
from fusion_switch.workflow.verdicts import rule_verdicts


@pytest.mark.parametrize(
    ("summary", "expected"),
    [
        # per-rule verdicts: proven first, innocent ones dropped
        (
            {
                "rules": [
                    {"rule": "B", "section": "UBFusion", "verdict": "heuristic"},
                    {"rule": "A", "section": "GraphFusion", "verdict": "introduces"},
                    {"rule": "C", "section": "GraphFusion", "verdict": "propagates"},
                    {"rule": "D", "section": "GraphFusion", "verdict": "unverified"},  # unblamed
                ]
            },
            [("A", "introduces", True), ("B", "heuristic", False)],
        ),
        # today's summary: suspects without a verdict are heuristic, not proven
        (
            {"suspects": [{"rule": "A", "section": "GraphFusion", "ops": ["x"]}]},
            [("A", "heuristic", False)],
        ),
        # a verdict on a suspect is honoured
        (
            {"suspects": [{"rule": "A", "section": "GraphFusion", "verdict": "introduces"}]},
            [("A", "introduces", True)],
        ),
        # junk entries are skipped, not fatal
        ({"rules": [1, {"rule": 2}, {"rule": "X", "section": "Other"}]}, []),
    ],
)
def test_rule_verdicts(summary, expected):
    got = [(v.rule, v.verdict, v.proven) for v in rule_verdicts(summary)]
    assert got == expected


def test_a_rule_the_replay_proved_clean_is_innocent_and_ops_are_read_as_compare_writes_them():
    """A review: `apply --include-unverified` switched off rules whose replay verdict is
    "clean", labelled "unverified (clean)"; compare writes a rule's ops as objects, which
    were all dropped, and ``"ops": 5`` raised TypeError."""
    summary = {
        "rules": [
            {"rule": "A", "section": "GraphFusion", "verdict": "introduces",
             "ops": [{"op": "a1", "verdict": "introduces"}, {"op": "a2"}, "a3", 7]},
            {"rule": "C", "section": "UBFusion", "verdict": "clean", "ops": [{"op": "c1"}]},
            {"rule": "U", "section": "UBFusion", "verdict": "undecided", "ops": 5},
        ]
    }  # fmt: skip
    got = [(v.rule, v.verdict, v.ops) for v in rule_verdicts(summary)]
    assert got == [("A", "introduces", ("a1", "a2", "a3")), ("U", "undecided", ())]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("GraphFusion:X", ("GraphFusion", "X")),
        ("UBFusion/Y", ("UBFusion", "Y")),
        ("Plain", (None, "Plain")),
        ("Other:Z", (None, "Other:Z")),
    ],
)
def test_split_name(name, expected):
    assert split_name(name) == expected


def test_resolve_rules_uses_the_catalogue_section_and_refuses_forbidden_close():
    catalogue = builtin_catalogue()
    resolved = resolve_rules(
        ["AddLayerNormV3FusionPass", "AABiasaddConvFusion", "Nope"], catalogue, "off"
    )
    assert resolved.changes == [("UBFusion", "AddLayerNormV3FusionPass", "off")]
    assert len(resolved.problems) == 2
    assert "forbidden-close" in resolved.problems[0] and "Nope" in resolved.problems[1]
    # switching a forbidden-close rule on is fine
    assert resolve_rules(["AABiasaddConvFusion"], catalogue, "on").problems == []


def test_switched_text_refuses_a_broken_file():
    with pytest.raises(ValueError, match="syntax errors"):
        switched_text('{"Switch": {"GraphFusion": {"A": "on",}}', [("GraphFusion", "B", "off")])


def test_a_rules_ops_are_those_behind_its_verdict():
    """A review: `apply` printed "proven by replay, ops b0_conv2, b1_conv2, b2_conv2" where
    only b1_conv2 was proven; a heuristic guess listed every op of its rule."""
    summary = {
        "rules": [
            {"rule": "A", "section": "GraphFusion", "verdict": "introduces",
             "ops": [{"op": "a0", "verdict": "clean"}, {"op": "a1", "verdict": "introduces"},
                     {"op": "a2", "verdict": "propagates"}]},
            {"rule": "H", "section": "UBFusion", "verdict": "heuristic",
             "ops": [{"op": "h0", "verdict": "clean"}, {"op": "h1", "verdict": "unverified"}]},
        ]
    }  # fmt: skip
    got = [(v.rule, v.ops) for v in rule_verdicts(summary)]
    assert got == [("A", ("a1",)), ("H", ("h1",))]


def test_a_guess_lists_the_ops_the_summary_says_the_rows_blame():
    """A review: `apply` listed every unverified op of a guessed rule where the CLI, the
    editor and the report list the one the rows blame."""
    summary = {
        "rules": [
            {"rule": "H", "section": "UBFusion", "verdict": "heuristic",
             "ops": [{"op": "h0", "verdict": "unverified"}, {"op": "h1", "verdict": "unverified"}]},
        ],
        "unverified_rules": [
            {"rule": "H", "section": "UBFusion", "verdict": "heuristic", "ops": ["h1"]},
        ],
    }  # fmt: skip
    assert [v.ops for v in rule_verdicts(summary)] == [("h1",)]
