"""The tolerant parser: tree shape, offsets, both formats."""

from __future__ import annotations

import pytest
from fusion_switch.cfg import ArrayNode, ObjectNode, ScalarNode, StringNode, parse


def test_tree_with_keys_values_members_and_commas():
    text = '{\n  "Switch": {\n    "GraphFusion": {"A": "on", "B" : "off"}\n  }\n}'
    doc = parse(text)
    assert doc.format == "json" and doc.syntax_findings == []
    switch = doc.root.get("Switch")
    section = switch.value.get("GraphFusion").value
    assert isinstance(section, ObjectNode) and section.closed
    a, b = section.members
    assert (a.key, text[a.key_span.start : a.key_span.end]) == ("A", '"A"')
    assert isinstance(a.value, StringNode) and a.value.value == "on"
    assert text[a.value_span.start : a.value_span.end] == '"on"'
    assert text[b.span.start : b.span.end] == '"B" : "off"'
    assert text[a.comma] == "," and a.comma == section.commas[0] and b.comma is None
    assert text[b.colon] == ":"
    assert doc.parent_of(b) is section


def test_values_of_every_json_type():
    doc = parse('{"a": [1, -2.5e3, true, false, null, "x\\u00e9"], "b": {}}')
    items = doc.root.get("a").value
    assert isinstance(items, ArrayNode) and len(items.commas) == 5
    kinds = [i.kind for i in items.items]
    assert kinds == ["number", "number", "true", "false", "null", "string"]
    assert isinstance(items.items[1], ScalarNode) and items.items[1].text == "-2.5e3"
    assert items.items[5].value == "xé"


def test_last_duplicate_is_the_effective_one():
    doc = parse('{"A": 1, "A": 2}')
    assert doc.root.get("A").value.text == "2"


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        ("", "empty"),
        (" \n\t", "empty"),
        ("{}", "json"),
        ("  [1]", "json"),
        ("// only a comment", "json"),
        ("/* c */ {}", "json"),
        ("\ufeff{}", "json"),
        ("A:on", "lines"),
        ("garbage", "lines"),
    ],
)
def test_format_detection(text, fmt):
    assert parse(text).format == fmt


def test_line_entries_are_trimmed_with_offsets():
    text = "\ufeff  Rule1 : on \r\n\r\nALL:off\n名字:off"
    doc = parse(text)
    got = [
        (e.name, e.value, text[e.name_start : e.name_end], text[e.value_start : e.value_end])
        for e in doc.entries
    ]
    assert got == [
        ("Rule1", "on", "Rule1", "on"),
        ("ALL", "off", "ALL", "off"),
        ("名字", "off", "名字", "off"),
    ]
    assert doc.entries[0].line_end == text.index("\r\n")


def test_recovery_keeps_later_members():
    text = '{"Switch": {"GraphFusion": {"A": , "B": "off", C: "on"}}}'
    doc = parse(text)
    section = doc.root.get("Switch").value.get("GraphFusion").value
    assert [m.key for m in section.members] == ["A", "B", "C"]
    assert section.members[0].value is None
    assert section.members[2].key_quoted is False
    assert len(doc.syntax_findings) == 2


def test_unclosed_containers_end_at_the_end_of_the_text():
    text = '{"Switch": {"GraphFusion": {"A": "on"'
    doc = parse(text)
    section = doc.root.get("Switch").value.get("GraphFusion").value
    assert not section.closed and section.end == len(text) and doc.root.end == len(text)
    inserts = [f.data["insert"] for f in doc.syntax_findings]
    assert inserts == ["}", "}}", "}}}"]  # each closes its object and the ones inside it


def test_line_and_column_for_messages():
    doc = parse('{\n  "A": 1,\n  "规则" x\n}')
    assert doc.line_col(doc.text.index("x")) == (3, 8)


@pytest.mark.parametrize("text", ["", "a", "\n", "ab\ncd\r\n\nef", "x\n\n", "规则\n𝔘x\ny"])
def test_line_col_agrees_with_counting_at_every_offset(text):
    doc = parse(text)
    for offset in range(len(text) + 1):
        line = text.count("\n", 0, offset) + 1
        column = offset - (text.rfind("\n", 0, offset) + 1) + 1
        assert doc.line_col(offset) == (line, column), offset


def test_unclosed_containers_point_at_where_they_open():
    text = '{"ExceptionalPassOfO1Level": ["A",\n'
    doc = parse(text)
    eof = [f for f in doc.syntax_findings if "end of file" in f.message]
    assert [f.message.split(" opened at ")[1] for f in eof] == [
        "line 1, column 30.",
        "line 1, column 1.",
    ]
    assert [r.message for f in eof for r in f.related] == [
        "the array opened here",
        "the object opened here",
    ]
    assert [f.related[0].span.start for f in eof] == [text.index("["), 0]


def test_parse_never_sees_non_str_as_a_crash():
    assert parse(None).format in ("lines", "json")  # type: ignore[arg-type]


def test_an_internal_error_becomes_a_finding(monkeypatch):
    from fusion_switch.cfg import analyse, analysis, syntax

    def broken(*_args):
        raise ValueError("boom")

    monkeypatch.setattr(syntax, "_parse", broken)
    doc = parse("{}")
    assert doc.syntax_findings[0].data == {"internal": True}
    assert "ValueError: boom" in doc.syntax_findings[0].message
    monkeypatch.undo()
    monkeypatch.setattr(analysis, "structure_findings", broken)
    result = analyse('{"Switch": {}}')
    assert [f.data for f in result.findings] == [{"internal": True}]
