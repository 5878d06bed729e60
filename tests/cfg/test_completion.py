"""Completion: which items, and exactly which text each replaces. `|` marks the cursor."""

from __future__ import annotations

import json
import re

import pytest
from cfg_helpers import CTX, FORBIDDEN, GRAPH, UB, apply
from fusion_switch.catalogue import builtin_catalogue
from fusion_switch.cfg import Edit, complete, parse


def at(marked: str) -> tuple[str, int]:
    offset = marked.index("|")
    return marked[:offset] + marked[offset + 1 :], offset


def items(marked: str, snippets: bool = False):
    text, offset = at(marked)
    return text, complete(parse(text), offset, CTX, snippets)


def pick(result, label):
    return next(c for c in result if c.label == label)


def accept(marked: str, label: str, snippets: bool = False) -> str:
    text, result = items(marked, snippets)
    item = pick(result, label)
    return apply(text, [Edit(item.span, item.new_text)])


CASES = [
    # (id, marked text, label, text after accepting it)
    (
        "inside-quotes-key",
        '{"Switch": {"GraphFusion": {"ConvBatch|"}}}',
        GRAPH,
        f'{{"Switch": {{"GraphFusion": {{"{GRAPH}": }}}}}}',
    ),
    (
        "inside-quotes-key-with-colon",
        '{"Switch": {"GraphFusion": {"Conv|": "off"}}}',
        GRAPH,
        f'{{"Switch": {{"GraphFusion": {{"{GRAPH}": "off"}}}}}}',
    ),
    (
        "unterminated-key",
        '{"Switch": {"GraphFusion": {\n  "ConvB|\n}}}',
        GRAPH,
        f'{{"Switch": {{"GraphFusion": {{\n  "{GRAPH}": \n}}}}}}',
    ),
    (
        "bare-word-key",
        '{"Switch": {"GraphFusion": {ConvB|}}}',
        GRAPH,
        f'{{"Switch": {{"GraphFusion": {{"{GRAPH}": }}}}}}',
    ),
    (
        "empty-object",
        '{"Switch": {"GraphFusion": {|}}}',
        "ALL",
        '{"Switch": {"GraphFusion": {"ALL": }}}',
    ),
    (
        "after-comma",
        f'{{"Switch": {{"GraphFusion": {{"{GRAPH}": "on", |}}}}}}',
        "ALL",
        f'{{"Switch": {{"GraphFusion": {{"{GRAPH}": "on", "ALL": }}}}}}',
    ),
    (
        "after-colon",
        f'{{"Switch": {{"GraphFusion": {{"{GRAPH}": |}}}}}}',
        "off",
        f'{{"Switch": {{"GraphFusion": {{"{GRAPH}": "off"}}}}}}',
    ),
    (
        "after-colon-next-entry",
        f'{{"Switch": {{"GraphFusion": {{\n"{GRAPH}": |\n"ALL": "on"}}}}}}',
        "off",
        f'{{"Switch": {{"GraphFusion": {{\n"{GRAPH}": "off",\n"ALL": "on"}}}}}}',
    ),
    (
        "inside-value-quotes",
        f'{{"Switch": {{"GraphFusion": {{"{GRAPH}": "o|"}}}}}}',
        "on",
        f'{{"Switch": {{"GraphFusion": {{"{GRAPH}": "on"}}}}}}',
    ),
    (
        "replace-wrong-value",
        f'{{"Switch": {{"GraphFusion": {{"{GRAPH}": "OF|F"}}}}}}',
        "off",
        f'{{"Switch": {{"GraphFusion": {{"{GRAPH}": "off"}}}}}}',
    ),
    (
        "bare-value",
        f'{{"Switch": {{"GraphFusion": {{"{GRAPH}": of|}}}}}}',
        "off",
        f'{{"Switch": {{"GraphFusion": {{"{GRAPH}": "off"}}}}}}',
    ),
    ("section-key", '{"Switch": {|}}', "UBFusion", '{"Switch": {"UBFusion": {}}}'),
    ("top-level-key", "{|}", "Switch", '{"Switch": {}}'),
    (
        "o1-item",
        '{"ExceptionalPassOfO1Level": ["ConvB|"]}',
        GRAPH,
        f'{{"ExceptionalPassOfO1Level": ["{GRAPH}"]}}',
    ),
    (
        "priority-stage",
        '{"Priority": {"GraphFusion": {|}}}',
        "Top",
        '{"Priority": {"GraphFusion": {"Top": {}}}}',
    ),
    (
        "priority-rule",
        '{"Priority": {"GraphFusion": {"Top": {"ConvB|"}}}}',
        GRAPH,
        f'{{"Priority": {{"GraphFusion": {{"Top": {{"{GRAPH}": }}}}}}}}',
    ),
    (
        "chinese-before",
        '{"Switch": {"GraphFusion": {"规则": "on", "Conv|"}}}',
        GRAPH,
        f'{{"Switch": {{"GraphFusion": {{"规则": "on", "{GRAPH}": }}}}}}',
    ),
    ("lines-name", "ConvB|\n", GRAPH, f"{GRAPH}:\n"),
    ("lines-name-with-value", "  ConvB|: off\n", GRAPH, f"  {GRAPH}: off\n"),
    ("lines-value", f"{GRAPH}: o|\n", "off", f"{GRAPH}: off\n"),
    ("lines-empty-value", f"{GRAPH}:|\n", "on", f"{GRAPH}:on\n"),
]


@pytest.mark.parametrize(
    ("marked", "label", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_accepting_an_item(marked, label, expected):
    assert accept(marked, label) == expected


def test_replace_span_inside_quotes_covers_the_whole_token_and_filters_with_quotes():
    text, result = items('{"Switch": {"GraphFusion": {"Conv|Batch": "on"}}}')
    item = pick(result, GRAPH)
    assert text[item.span.start : item.span.end] == '"ConvBatch"'
    assert item.filter_text == f'"{GRAPH}"'
    assert item.new_text == f'"{GRAPH}"'  # colon already there: nothing appended


def test_replace_span_elsewhere_is_empty_at_cursor():
    text, result = items('{"Switch": {"GraphFusion": {\n  |\n}}}')
    item = pick(result, GRAPH)
    assert item.span.start == item.span.end == text.index("\n  ") + 3
    assert item.filter_text == GRAPH


def test_rule_items_have_section_documentation_and_exclude_present_keys():
    _, result = items(f'{{"Switch": {{"GraphFusion": {{"{GRAPH}": "on", |}}}}}}')
    labels = {c.label for c in result}
    assert GRAPH not in labels
    assert UB not in labels  # a UBFusion rule is not offered under GraphFusion
    assert labels == {"ALL", *builtin_catalogue().names("GraphFusion")} - {GRAPH}
    item = pick(result, FORBIDDEN)
    assert item.detail == "GraphFusion"
    assert "Cannot be switched off" in item.documentation


def test_sort_order_all_then_documented_then_others_then_forbidden():
    _, result = items('{"Switch": {"GraphFusion": {|}}}')
    order = [c.label for c in sorted(result, key=lambda c: c.sort_text)]
    assert order[0] == "ALL"
    assert order.index(GRAPH) < order.index("LayerNormGradV3FusionPass")  # documented first
    assert order.index("LayerNormGradV3FusionPass") < order.index(FORBIDDEN)


def test_ub_section_offers_ub_rules():
    _, result = items('{"Switch": {"UBFusion": {|}}}')
    assert UB in {c.label for c in result} and GRAPH not in {c.label for c in result}


def test_value_items_document_what_off_means():
    _, result = items(f'{{"Switch": {{"GraphFusion": {{"{FORBIDDEN}": |}}}}}}')
    assert [c.label for c in result] == ["on", "off"]
    assert "no effect" in pick(result, "off").documentation


def test_snippets_only_when_asked():
    _, plain = items('{"Switch": {"GraphFusion": {|}}}')
    assert not any(c.is_snippet for c in plain)
    _, snippet = items('{"Switch": {"GraphFusion": {|}}}', snippets=True)
    item = pick(snippet, GRAPH)
    assert item.is_snippet and item.new_text == f'"{GRAPH}": "${{1|on,off|}}"'
    generic = pick(snippet, "New rule entry")
    assert generic.new_text == '"${1:Rule}": "${2|on,off|}"'


def test_snippet_adds_a_comma_before_a_following_entry():
    _, result = items('{"Switch": {"GraphFusion": {\n  |\n  "ALL": "on"}}}', snippets=True)
    assert pick(result, GRAPH).new_text.endswith(",")


@pytest.mark.parametrize(
    "marked",
    [
        '|{"Switch": {}}',
        '{"Switch": {}}|',
        '{"Swi|tch": {}, "Switch": 1}',  # only Switch is offered there, and it is present twice
        '{"Switch": {"GraphFusion": {"ALL"| : "on"}}}',
        '{"Switch": {"GraphFusion": {"ALL": "on"|}}}',
    ],
)
def test_nothing_offered(marked):
    _, result = items(marked)
    assert [
        c.label for c in result if c.label != "Priority" and c.label != "ExceptionalPassOfO1Level"
    ] == []


def test_empty_document_offers_a_skeleton():
    result = complete(parse(""), 0, CTX)
    assert len(result) == 1 and result[0].new_text.startswith('{\n  "Switch"')


def test_line_format_names_from_both_sections_without_present_ones():
    _, result = items(f"{GRAPH}:on\n|")
    labels = {c.label for c in result}
    assert GRAPH not in labels and UB in labels and "ALL" in labels
    assert pick(result, UB).new_text == f"{UB}:"


def test_completion_in_a_large_document_is_bounded():
    from fusion_switch.cfg import sample_document

    text = sample_document(5000)
    offset = text.index('"GraphFusion": {') + len('"GraphFusion": {')
    result = complete(parse(text), offset, CTX)
    assert result[0].label == "ALL" or any(c.label == "ALL" for c in result)
    assert len(result) < 100  # every catalogue GraphFusion rule is already present


def test_completion_inside_a_top_level_key_with_spaces():
    _, result = items('{" Switch ": {"GraphFusion": {"ConvBatch|"}}}')
    assert GRAPH in [c.label for c in result]


# ---- the separating comma (issue 15) --------------------------------------------------------
def expand(snippet: str) -> str:
    """The text a snippet client leaves when the user accepts every default (first choice)."""
    snippet = re.sub(r"\$\{\d+\|([^,|]*)[^}]*\|\}", r"\1", snippet)
    snippet = re.sub(r"\$\{\d+:([^}]*)\}", r"\1", snippet)
    snippet = re.sub(r"\$\d+", "", snippet)
    return snippet.replace("\\}", "}").replace("\\$", "$").replace("\\\\", "\\")


def accept_snippet(marked: str, label: str) -> str:
    text, result = items(marked, snippets=True)
    item = pick(result, label)
    return apply(
        text, [Edit(item.span, expand(item.new_text) if item.is_snippet else item.new_text)]
    )


G = '{"Switch": {"GraphFusion": {'
COMMA_CASES = [
    # (id, marked text): after accepting GRAPH with its default value the document is valid JSON
    (
        "empty-quotes-before-member-next-line",
        G + '\n  "|"\n  "ALL": "on"}}}',
    ),
    ("empty-quotes-before-member-same-line", G + '"|" "ALL": "on"}}}'),
    ("partial-name-before-member", G + '\n  "ConvB|"\n  "ALL": "on"\n}}}'),
    ("first-member-of-several", G + '"|"\n"ALL": "on",\n"B": "off"}}}'),
    ("between-members", G + '"A": "on",\n"Conv|"\n"ALL": "on"}}}'),
    ("after-members-last", G + '"ALL": "on",\n  "Conv|"\n}}}'),
    ("only-member", G + '"|"}}}'),
    ("bare-cursor-before-member", G + '\n  |\n  "ALL": "on"}}}'),
    ("comma-already-there", G + '"Conv|", "ALL": "on"}}}'),
    (
        "before-member-in-ub-section",
        G + '"|"\n"ALL": "on"}, "UBFusion": {}}}',
    ),
]


@pytest.mark.parametrize("marked", [c[1] for c in COMMA_CASES], ids=[c[0] for c in COMMA_CASES])
def test_accepting_a_rule_name_leaves_valid_json(marked):
    after = accept_snippet(marked, GRAPH)
    assert json.loads(after)["Switch"]["GraphFusion"][GRAPH] == "on", after


def test_comma_goes_after_the_value_placeholder_so_the_cursor_stays_on_the_value():
    _, result = items('{"Switch": {"GraphFusion": {"|"\n"ALL": "on"}}}', snippets=True)
    assert pick(result, GRAPH).new_text == f'"{GRAPH}": "${{1|on,off|}}",'


def test_no_comma_when_the_member_is_last():
    _, result = items('{"Switch": {"GraphFusion": {"ALL": "on", "|"}}}', snippets=True)
    assert not pick(result, GRAPH).new_text.endswith(",")


def test_section_key_before_another_section_gets_a_comma():
    after = accept_snippet('{"Switch": {"|"\n"UBFusion": {}}}', "GraphFusion")
    assert json.loads(after)["Switch"] == {"GraphFusion": {}, "UBFusion": {}}


def test_line_format_name_before_another_line_adds_no_comma():
    text, result = items(f"ConvB|\n{UB}: off\n", snippets=True)
    assert apply(text, [Edit(pick(result, GRAPH).span, pick(result, GRAPH).new_text)]) == (
        f"{GRAPH}:\n{UB}: off\n"
    )


@pytest.mark.parametrize(
    "marked",
    ["|", '{"Switch": {"GraphFusion": {|}}}', '{"Switch": {|}}', "{|}", "ConvB|\n"],
    ids=["empty-document", "rule-map", "section", "top-level", "lines"],
)
def test_clients_without_snippet_support_get_no_snippet_items(marked):
    _, result = items(marked, snippets=False)
    assert result
    assert [c.label for c in result if c.is_snippet or c.kind == "snippet"] == []


@pytest.mark.parametrize(("stage", "value"), [("Top", "0"), ("Main", "1000"), ("Down", "2000")])
def test_a_priority_snippet_offers_a_value_its_stage_accepts(stage, value):
    """A review: every stage's snippet offered 1000, which CANN refuses under Top and Down
    ("priority out of range"), so accepting the default broke the file."""
    marked = '{"Priority": {"GraphFusion": {"' + stage + '": {"ConvB|"}}}}'
    choice = pick(items(marked, snippets=True)[1], GRAPH)
    assert choice.new_text.endswith(f'"${{1:{value}}}"'), choice.new_text
    from fusion_switch.cfg import analyse

    filled = re.sub(r"\$\{1:(\d+)\}", r"\1", accept(marked, GRAPH, snippets=True))
    assert not [f for f in analyse(filled, CTX).findings if f.severity == "error"], filled
