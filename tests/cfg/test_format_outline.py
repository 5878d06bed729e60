"""Formatting (CANN docs layout), document symbols and folding ranges."""

from __future__ import annotations

import pytest
from cfg_helpers import GRAPH, UB, sub
from fusion_switch.cfg import folds, format_document, parse, symbols

CANN_LAYOUT = (
    '{\n  "Switch": {\n    "GraphFusion": {\n      "ALL": "off",\n'
    f'      "{GRAPH}": "on"\n    }},\n    "UBFusion": {{}}\n  }}\n}}\n'
)

FORMAT = [
    (
        "compact",
        f'{{"Switch":{{"GraphFusion":{{"ALL":"off","{GRAPH}":"on"}},"UBFusion":{{}}}}}}',
        CANN_LAYOUT,
    ),
    (
        "four-spaces",
        '{\n    "Switch": {\n        "GraphFusion": {\n            "ALL": "off",\n'
        f'            "{GRAPH}": "on"\n        }},\n        "UBFusion": {{ }}\n    }}\n}}',
        CANN_LAYOUT,
    ),
    (
        "trailing-comma-dropped",
        f'{{"Switch": {{"GraphFusion": {{"ALL": "off", "{GRAPH}": "on",}}, "UBFusion": {{}}}}}}',
        CANN_LAYOUT,
    ),
    (
        "escapes-kept",
        '{"Switch": {"GraphFusion": {"A\\u0041": "on"}}}',
        '{\n  "Switch": {\n    "GraphFusion": {\n      "A\\u0041": "on"\n    }\n  }\n}\n',
    ),
    (
        "array",
        '{"ExceptionalPassOfO1Level": ["A","B"], "Switch": {}}',
        '{\n  "ExceptionalPassOfO1Level": [\n    "A",\n    "B"\n  ],\n  "Switch": {}\n}\n',
    ),
    (
        "chinese",
        '{"Switch":{"GraphFusion":{"规则":"on"}}}',
        '{\n  "Switch": {\n    "GraphFusion": {\n      "规则": "on"\n    }\n  }\n}\n',
    ),
    ("lines", f"  {GRAPH} : off\n\n{UB}:on", f"{GRAPH}:off\n{UB}:on\n"),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in FORMAT], ids=[c[0] for c in FORMAT])
def test_format(text, expected):
    assert format_document(parse(text)) == expected


@pytest.mark.parametrize("text", [c[1] for c in FORMAT], ids=[c[0] for c in FORMAT])
def test_format_is_idempotent(text):
    once = format_document(parse(text))
    assert format_document(parse(once)) == once


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (FORMAT[1][1].replace("\n", "\r\n"), CANN_LAYOUT.replace("\n", "\r\n")),
        (CANN_LAYOUT.replace("\n", "\r\n"), CANN_LAYOUT.replace("\n", "\r\n")),
        # (a line holding only a CR is an error in the line format: CANN skips only empty ones)
        (f"  {GRAPH} : off\r\n{UB}:on", f"{GRAPH}:off\r\n{UB}:on\r\n"),
    ],
    ids=["four-spaces", "cann-layout", "lines"],
)
def test_format_keeps_windows_line_endings(text, expected):
    # an editor that applies the edit as sent (Helix keeps the file's CRLFs) would get a file
    # of mixed endings: the unchanged lines with CRLF, the formatted ones with LF
    assert format_document(parse(text)) == expected


@pytest.mark.parametrize(
    "text",
    ["", '{"Switch": {', '{"Switch": {}} // c', '{"A" "on"}', "A on\n", '{"A": on}'],
)
def test_no_formatting_when_unsafe(text):
    assert format_document(parse(text)) is None


def test_symbols_tree():
    text = sub(
        '{"Switch": {"GraphFusion": {"ALL": "off", "<G>": "on"}, "UBFusion": {}},'
        ' "Priority": {"GraphFusion": {"Top": {"<G>": "5"}}}, "ExceptionalPassOfO1Level": ["X"]}'
    )

    def shape(symbol):
        return (symbol.name, symbol.kind, symbol.detail, [shape(c) for c in symbol.children])

    assert [shape(s) for s in symbols(parse(text))] == [
        (
            "Switch",
            "section",
            "",
            [
                (
                    "GraphFusion",
                    "group",
                    "",
                    [("ALL", "rule", "off", []), (GRAPH, "rule", "on", [])],
                ),
                ("UBFusion", "group", "", []),
            ],
        ),
        (
            "Priority",
            "section",
            "",
            [
                ("GraphFusion", "group", "", [("Top", "group", "", [(GRAPH, "rule", "5", [])])]),
            ],
        ),
        ("ExceptionalPassOfO1Level", "section", "", [("X", "rule", "", [])]),
    ]
    for s in symbols(parse(text)):
        assert s.span.start <= s.selection.start <= s.selection.end <= s.span.end
        assert text[s.selection.start : s.selection.end] == f'"{s.name}"'


def test_symbols_line_format():
    text = f"{GRAPH}:off\n{UB}:on\n"
    got = [
        (s.name, s.kind, s.detail, text[s.selection.start : s.selection.end])
        for s in symbols(parse(text))
    ]
    assert got == [(GRAPH, "rule", "off", GRAPH), (UB, "rule", "on", UB)]


def test_folds_for_multiline_containers_only():
    text = '{\n  "Switch": {\n    "GraphFusion": {"A": "on"},\n    "UBFusion": {\n    }\n  }\n}\n'
    got = [text[f.start_offset : f.end_offset].split("\n")[0] for f in folds(parse(text))]
    assert got == ["{", "{", "{"]
    assert len(folds(parse(text))) == 3
    assert folds(parse('{"Switch": {}}')) == []
