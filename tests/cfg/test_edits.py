"""set_switches and all_off_text on several layouts: minimal edits, the file's own style kept."""

from __future__ import annotations

import pytest
from cfg_helpers import GRAPH, UB, apply, found
from fusion_switch.cfg import all_off_text, analyse, parse, set_switches

LAYOUTS = [
    # (id, text, changes, expected)
    (
        "compact-one-line",
        '{"Switch":{"GraphFusion":{"A":"on"}}}',
        [("GraphFusion", "B", "off"), ("GraphFusion", "A", "off")],
        '{"Switch":{"GraphFusion":{"A":"off","B":"off"}}}',
    ),
    (
        "compact-spaced",
        '{"Switch": {"GraphFusion": {"A": "on"}}}',
        [("UBFusion", "U", "off")],
        '{"Switch": {"GraphFusion": {"A": "on"}, "UBFusion": {"U": "off"}}}',
    ),
    (
        "four-space-indent",
        '{\n    "Switch": {\n        "GraphFusion": {\n            "A": "on"\n'
        "        }\n    }\n}\n",
        [("GraphFusion", "B", "off"), ("UBFusion", "U", "on")],
        '{\n    "Switch": {\n        "GraphFusion": {\n            "A": "on",\n'
        '            "B": "off"\n        },\n        "UBFusion": {\n'
        '            "U": "on"\n        }\n    }\n}\n',
    ),
    (
        "empty-section-object",
        '{\n  "Switch": {\n    "GraphFusion": {}\n  }\n}\n',
        [("GraphFusion", "A", "off"), ("GraphFusion", "B", "on")],
        '{\n  "Switch": {\n    "GraphFusion": {\n      "A": "off",\n      "B": "on"\n'
        "    }\n  }\n}\n",
    ),
    (
        "empty-root-object",
        "{}",
        [("GraphFusion", "A", "off")],
        '{"Switch": {"GraphFusion": {"A": "off"}}}',
    ),
    (
        "missing-switch-multiline",
        '{\n  "Priority": {}\n}\n',
        [("GraphFusion", "A", "off")],
        '{\n  "Priority": {},\n  "Switch": {\n    "GraphFusion": {\n      "A": "off"\n    }\n'
        "  }\n}\n",
    ),
    (
        "precision-tool-layout",
        '{\n"Switch": {\n  "GraphFusion": {},\n  "UBFusion": {}\n}\n}',
        [("UBFusion", "U", "off")],
        '{\n"Switch": {\n  "GraphFusion": {},\n  "UBFusion": {\n    "U": "off"\n  }\n}\n}',
    ),
    (
        "tabs-and-crlf",
        '{\r\n\t"Switch": {\r\n\t\t"GraphFusion": {\r\n\t\t\t"A": "on"\r\n\t\t}\r\n\t}\r\n}\r\n',
        [("GraphFusion", "B", "off")],
        '{\r\n\t"Switch": {\r\n\t\t"GraphFusion": {\r\n\t\t\t"A": "on",\r\n\t\t\t"B": "off"\r\n'
        "\t\t}\r\n\t}\r\n}\r\n",
    ),
    (
        "trailing-comma-becomes-separator",
        '{\n  "Switch": {\n    "GraphFusion": {\n      "A": "on",\n    }\n  }\n}\n',
        [("GraphFusion", "B", "off")],
        '{\n  "Switch": {\n    "GraphFusion": {\n      "A": "on",\n      "B": "off"\n'
        "    }\n  }\n}\n",
    ),
    (
        "duplicates-all-set",
        '{"Switch": {"GraphFusion": {"A": "on", "A": "on"}}}',
        [("GraphFusion", "A", "off")],
        '{"Switch": {"GraphFusion": {"A": "off", "A": "off"}}}',
    ),
    (
        "unchanged-value-no-edit",
        '{"Switch": {"GraphFusion": {"A": "off"}}}',
        [("GraphFusion", "A", "off")],
        '{"Switch": {"GraphFusion": {"A": "off"}}}',
    ),
    (
        "chinese-keys-kept",
        '{\n  "Switch": {\n    "GraphFusion": {\n      "规则": "on"\n    }\n  }\n}\n',
        [("GraphFusion", "新规则", "off")],
        '{\n  "Switch": {\n    "GraphFusion": {\n      "规则": "on",\n      "新规则": "off"\n'
        "    }\n  }\n}\n",
    ),
    (
        "empty-document",
        "",
        [("GraphFusion", "A", "off")],
        '{\n  "Switch": {\n    "GraphFusion": {\n      "A": "off"\n    }\n  }\n}\n',
    ),
    (
        "top-level-key-with-spaces",  # CANN reads " Switch " as Switch: edit it, add no other
        '{" Switch ": {"GraphFusion": {"A": "on"}}}',
        [("GraphFusion", "A", "off")],
        '{" Switch ": {"GraphFusion": {"A": "off"}}}',
    ),
    (
        "line-format",
        "A:on\nB:off",
        [("GraphFusion", "A", "off"), ("UBFusion", "C", "on")],
        "A:off\nB:off\nC:on\n",
    ),
]


@pytest.mark.parametrize(
    ("text", "changes", "expected"), [c[1:] for c in LAYOUTS], ids=[c[0] for c in LAYOUTS]
)
def test_set_switches(text, changes, expected):
    edits = set_switches(parse(text), changes)
    assert apply(text, edits) == expected


def test_edits_are_minimal_and_sorted():
    text = (
        '{\n  "Switch": {\n    "GraphFusion": {\n      "A": "on",\n      "B": "on"\n    }\n  }\n}\n'
    )
    edits = set_switches(parse(text), [("GraphFusion", "B", "off")])
    assert len(edits) == 1
    assert text[edits[0].span.start : edits[0].span.end] == '"on"'
    assert edits[0].span.start == text.rindex('"on"')


@pytest.mark.parametrize(
    "text",
    [
        '{"Switch": {"GraphFusion": {"A": "on"',  # unclosed
        '{"Switch": []}',  # Switch is not an object
        "[1, 2]",
    ],
)
def test_unsafe_documents_get_no_edits(text):
    assert set_switches(parse(text), [("GraphFusion", "A", "off")]) == []


def test_set_switches_result_is_clean():
    text = '{\n  "Switch": {\n    "GraphFusion": {}\n  }\n}\n'
    new = apply(
        text, set_switches(parse(text), [("GraphFusion", GRAPH, "off"), ("UBFusion", UB, "off")])
    )
    assert found(new) == []


ALL_OFF = (
    '{\n  "Switch": {\n    "GraphFusion": {\n      "ALL": "off"\n    },\n'
    '    "UBFusion": {\n      "ALL": "off"\n    }\n  }'
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f'{{"Switch": {{"GraphFusion": {{"{GRAPH}": "on"}}}}}}', ALL_OFF + "\n}\n"),
        ("", ALL_OFF + "\n}\n"),
        (f"{GRAPH}:on\n", ALL_OFF + "\n}\n"),
        # a CRLF file stays CRLF, as set_switches keeps it
        ('{\r\n  "Switch": {}\r\n}\r\n', (ALL_OFF + "\n}\n").replace("\n", "\r\n")),
        (f"{GRAPH}:on\r\n", (ALL_OFF + "\n}\n").replace("\n", "\r\n")),
        (
            '{"Switch": {}, "Priority": {"GraphFusion": {"Top": {"A": "5"}}},'
            ' "ExceptionalPassOfO1Level": ["B"]}',
            ALL_OFF + ',\n  "Priority": {\n    "GraphFusion": {\n      "Top": {\n'
            '        "A": "5"\n      }\n    }\n  },\n  "ExceptionalPassOfO1Level": [\n'
            '    "B"\n  ]\n}\n',
        ),
    ],
)
def test_all_off_text(text, expected):
    assert all_off_text(parse(text)) == expected


def test_all_off_matches_the_precision_tool_sample_semantics():
    result = analyse(all_off_text(parse("")))
    assert [f.code for f in result.findings] == ["all-overridden", "all-overridden"]
