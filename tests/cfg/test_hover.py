"""Hover contents on keys and values, both formats."""

from __future__ import annotations

import json

import pytest
from cfg_helpers import ATLAS_350, CTX, FORBIDDEN, GRAPH, UB, sub, switch
from fusion_switch.cfg import hover, parse

DOC = switch(
    f'      "ALL": "off",\n      "{GRAPH}": "off",\n      "{FORBIDDEN}": "off",\n'
    f'      "Nope": "on",\n      "{UB}": "on"',
    f'      "{UB}": "on"',
)


def hover_at(text: str, needle: str, ctx=CTX, nth: int = 0, evidence=None, shift: int = 1):
    offset = -1
    for _ in range(nth + 1):
        offset = text.index(needle, offset + 1)
    return hover(parse(text), offset + shift, ctx, evidence)


@pytest.mark.parametrize(
    ("needle", "nth", "phrases", "covered"),
    [
        ('"Switch"', 0, ["**Switch**", "--fusion_switch_file"], '"Switch"'),
        ('"GraphFusion"', 0, ["Graph fusion rules"], '"GraphFusion"'),
        ('"UBFusion"', 0, ["Atlas 350"], '"UBFusion"'),
        (
            '"ALL"',
            0,
            ["explicit entries in this file win", "built-in default", "forbidden-close"],
            '"ALL"',
        ),
        (
            f'"{GRAPH}"',
            0,
            [
                f"**{GRAPH}** (GraphFusion)",
                "Can be switched off",
                "Built-in default: on",
                "Documented for:",
                "Source:",
                "Catalogue:",
            ],
            f'"{GRAPH}"',
        ),
        (f'"{FORBIDDEN}"', 0, ["Cannot be switched off"], f'"{FORBIDDEN}"'),
        ('"Nope"', 0, ["not in the catalogue"], '"Nope"'),
        (f'"{UB}"', 0, ["is a UBFusion rule, not a GraphFusion rule"], f'"{UB}"'),
        (f'"{UB}"', 1, [f"**{UB}** (UBFusion)"], f'"{UB}"'),
    ],
)
def test_key_hover(needle, nth, phrases, covered):
    info = hover_at(DOC, needle, nth=nth)
    assert info is not None
    for phrase in phrases:
        assert phrase in info.markdown
    assert DOC[info.span.start : info.span.end] == covered


def test_value_hover_says_what_off_means():
    text = switch(f'      "{GRAPH}": "off",\n      "{FORBIDDEN}": "off"')
    plain = hover_at(text, '"off"')
    assert "does not apply" in plain.markdown and text[plain.span.start : plain.span.end] == '"off"'
    forbidden = hover_at(text, '"off"', nth=1)
    assert "no effect" in forbidden.markdown


def test_builtin_default_is_shown():
    info = hover_at(switch('      "LayerNormGradV3FusionPass": "off"'), '"LayerNorm')
    assert 'Built-in default: `"on"`' in info.markdown


def test_evidence_is_appended():
    info = hover_at(DOC, f'"{GRAPH}"', evidence={GRAPH: "cosine 0.71 at op Conv1"})
    assert info.markdown.endswith("cosine 0.71 at op Conv1")
    assert "cosine" not in hover_at(DOC, f'"{FORBIDDEN}"', evidence={GRAPH: "cosine"}).markdown


def test_target_note_on_ub_rule():
    info = hover_at(DOC, f'"{UB}"', ctx=ATLAS_350, nth=1)
    assert "has no UB fusion" in info.markdown


def test_line_format_hover():
    text = f"{GRAPH}:off\nALL:on\n"
    info = hover_at(text, GRAPH, shift=0)
    assert "both GraphFusion and UBFusion" in info.markdown and info.span.start == 0
    assert "explicit entries" in hover_at(text, "ALL", shift=0).markdown
    assert "does not apply" in hover_at(text, "off", shift=0).markdown


def test_priority_hover():
    text = sub('{"Priority": {"GraphFusion": {"Top": {"<G>": "5"}}}}')
    assert "[0, 1000)" in hover_at(text, '"Top"').markdown
    assert "[0, 1000)" in hover_at(text, '"5"').markdown
    assert "(GraphFusion)" in hover_at(text, f'"{GRAPH}"').markdown


@pytest.mark.parametrize("offset", [0, 1, 11, 17, 18])
def test_nowhere(offset):
    text = '{ "Switch" : { } }'
    assert hover(parse(text), offset, CTX) is None


def test_hover_reads_a_top_level_key_trimmed_as_cann_does():
    text = sub('{" Switch ": {"GraphFusion": {"<G>": "off"}}}')
    assert "--fusion_switch_file" in hover_at(text, '" Switch "').markdown
    assert f"**{GRAPH}** (GraphFusion)" in hover_at(text, f'"{GRAPH}"').markdown


def test_value_hover_reads_the_value_trimmed_as_cann_does():
    text = switch(f'      "{GRAPH}": " off "')
    assert "does not apply" in hover_at(text, '" off "').markdown


@pytest.mark.parametrize(
    ("name", "section", "component"),
    [
        (GRAPH, "GraphFusion", "ops graph fusion"),
        (UB, "UBFusion", "TBE UB fusion"),
        ("ARefreshCubeC0FusionPass", "GraphFusion", "FE graph fusion (libfe)"),
    ],
)
def test_source_names_the_cann_component_not_a_repository_path(name, section, component):
    text = json.dumps({"Switch": {section: {name: "on"}}})
    info = hover_at(text, f'"{name}"')
    source = next(line for line in info.markdown.splitlines() if "Source:" in line)
    assert component in source
    assert "/" not in source.replace("(libfe)", ""), source  # no repository path


def test_empty_key_hover_says_the_name_is_empty():
    info = hover_at(switch('      "": "off"'), '""', shift=1)
    assert info is not None and "empty" in info.markdown.lower()


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (  # a spaced top-level key beside an exact one: CANN reads the exact one
            '{" Switch": {"GraphFusion": {"<G>": "off"}},\n'
            ' "Switch": {"GraphFusion": {"<G>": "on"}}}',
            '"off"',
        ),
        ('{"Switch": {"GraphFusion": {"<G>": "off",\n "<G>": "on"}}}', '"off"'),
        ('{"Switch": {"GraphFusion": {"<G>": "off",\n "<G>": "on"}}}', '"<G>"'),
        (
            '{"Switch": {"GraphFusion": {"<G>": "off"},\n "GraphFusion": {"<G>": "on"}}}',
            '"off"',
        ),
        (
            '{"Switch": {"GraphFusion": {"<G>": "off"}},\n'
            ' "Switch": {"GraphFusion": {"<G>": "on"}}}',
            '"<G>"',
        ),
    ],
)
def test_hover_inside_an_entry_cann_ignores_says_so(text, needle):
    """Left by the last round: a value inside an ignored " Switch" (or any duplicate CANN
    drops) was described as taking effect ("CANN does not apply ..."), against the warning
    on the same entry."""
    text, needle = sub(text), sub(needle)
    first = hover_at(text, needle).markdown
    assert "ignored" in first.lower() and "line 2" in first, first
    kept = hover_at(text, needle.replace("off", "on"), nth=0 if "off" in needle else 1)
    assert "ignored" not in kept.markdown.lower(), kept.markdown
