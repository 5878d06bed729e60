"""Minimal text edits that keep the file's own layout: set or add switches, remove entries,
and the all-off file of the recipe's first step."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..catalogue import SECTIONS
from .formatting import INDENT, render
from .model import Edit, Span
from .syntax import parse
from .tree import CfgDocument, Member, ObjectNode, StringNode, top_level_member

_INDENTED_LINE = re.compile(r"^([ \t]+)\S", re.M)
ALL = "ALL"
_NOT_IN_NAMES = frozenset(':"\\')


def is_rule_name(name: object) -> bool:
    """A name one switch can be written for: printable, without spaces, ``:``, quotes or
    backslashes, and not ``ALL``, which switches a whole section. A name with ``:`` and a line
    break, written into the ``Rule:on`` line format, added other switches (a review: a summary
    naming "Foo:on\\nALL" switched all fusion off)."""
    return (
        isinstance(name, str)
        and bool(name)
        and name != ALL
        and all(c.isprintable() and not c.isspace() and c not in _NOT_IN_NAMES for c in name)
    )


@dataclass
class Style:
    unit: str  # one indentation level
    newline: str
    colon: str  # ": " or ":"
    comma: str  # ", " or "," between members on one line
    multiline: bool


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """Apply non-overlapping edits (offsets into `text`), as an editor would."""
    parts = []
    end = len(text)
    for edit in sorted(edits, key=lambda e: (e.span.start, e.span.end), reverse=True):
        parts.append(text[edit.span.end : end])
        parts.append(edit.new_text)
        end = edit.span.start
    parts.append(text[:end])
    return "".join(reversed(parts))


def detect_style(doc: CfgDocument) -> Style:
    text = doc.text
    newline = "\r\n" if "\r\n" in text else "\n"
    indents = [m.group(1) for m in _INDENTED_LINE.finditer(text, 0, min(len(text), 20000))]
    unit = INDENT
    if indents:
        tabs = [i for i in indents if i.startswith("\t")]
        unit = "\t" if len(tabs) * 2 > len(indents) else " " * min(len(i) for i in indents)
    colon, comma = ": ", ", "
    root = doc.root
    sample = _first_member(root)
    if sample is not None and sample.colon is not None and sample.value is not None:
        colon = ":" if sample.value.start == sample.colon + 1 else ": "
        comma = ", " if colon == ": " else ","
        if sample.comma is not None and sample.comma + 1 < len(text):
            comma = ", " if text[sample.comma + 1] == " " else ","
    stripped = text.strip()
    multiline = "\n" in stripped or not stripped
    return Style(unit, newline, colon, comma, multiline)


def _first_member(node) -> Member | None:
    while isinstance(node, ObjectNode) and node.members:
        member = node.members[0]
        if isinstance(member.value, ObjectNode) and member.value.members:
            node = member.value
            continue
        return member
    return None


def _line_indent(text: str, offset: int) -> str:
    start = text.rfind("\n", 0, offset) + 1
    end = start
    while end < len(text) and text[end] in " \t":
        end += 1
    return text[start:end]


def _starts_line(text: str, offset: int) -> bool:
    start = text.rfind("\n", 0, offset) + 1
    return not text[start:offset].strip(" \t")


def _member_text(key: str, value_text: str, style: Style) -> str:
    return f"{json.dumps(key, ensure_ascii=False)}{style.colon}{value_text}"


def _block(entries: list[tuple[str, str]], indent: str, style: Style) -> str:
    """`{ "a": "on", ... }` laid out for an object whose key line is indented by `indent`."""
    if not style.multiline:
        return "{" + style.comma.join(_member_text(k, v, style) for k, v in entries) + "}"
    inner = indent + style.unit
    sep = "," + style.newline + inner
    return (
        "{"
        + style.newline
        + inner
        + sep.join(_member_text(k, v, style) for k, v in entries)
        + style.newline
        + indent
        + "}"
    )


def insert_members(doc: CfgDocument, obj: ObjectNode, render_member, style: Style) -> Edit | None:
    """An edit adding members to `obj`. `render_member(indent)` returns the member texts laid
    out for members indented by `indent`."""
    text = doc.text
    if not obj.closed:
        return None
    members = obj.members
    if members:
        last = members[-1]
        if last.value is None:
            return None
        if style.multiline and _starts_line(text, last.start):
            indent = _line_indent(text, last.start)
            sep = "," + style.newline + indent
            new = sep.join(render_member(indent))
            if last.comma is not None:  # a trailing comma becomes the separator
                return Edit(Span(last.comma + 1, last.comma + 1), style.newline + indent + new)
            return Edit(Span(last.end, last.end), sep + new)
        indent = _line_indent(text, last.start)
        new = style.comma.join(render_member(indent))
        if last.comma is not None:
            return Edit(Span(last.comma + 1, last.comma + 1), " " + new)
        return Edit(Span(last.end, last.end), style.comma + new)
    # empty object: lay it out from its own line's indentation
    outer = _line_indent(text, obj.start)
    if style.multiline:
        inner = outer + style.unit
        sep = "," + style.newline + inner
        new = style.newline + inner + sep.join(render_member(inner)) + style.newline + outer
    else:
        new = style.comma.join(render_member(outer))
    return Edit(Span(obj.start + 1, obj.end - 1), new)


def set_switches(
    doc: CfgDocument, changes: Sequence[tuple[str, str, str]], catalogue=None
) -> list[Edit]:
    """Edits that set (or add) each `(section, rule, "on"|"off")` under Switch.

    Keeps every other entry and the file's layout; creates the section or Switch when missing.
    Returns [] when the document is too broken to edit safely, or a rule is not
    :func:`is_rule_name`. Given the ``catalogue``, a file in the old line format that must
    switch a rule GE reads (:func:`read_by_ge`) is rewritten as JSON: GE's pass executor reads
    no other format, FE reads both (a review: a `Name:off` line left such a pass on).
    """
    if any(not is_rule_name(rule) for _, rule, _ in changes):
        return []  # callers refuse such names first (with a message); this is the last guard
    if doc.format == "lines" and catalogue is not None and read_by_ge(changes, catalogue):
        converted = parse(convert_lines_to_json(doc, catalogue))
        edits = set_switches(converted, changes)
        return [Edit(Span(0, len(doc.text)), apply_edits(converted.text, edits))]
    return set_values(doc, [(s, r, json.dumps(v)) for s, r, v in changes])


def read_by_ge(changes: Sequence[tuple[str, str, str]], catalogue) -> list[str]:
    """The rules of ``changes`` that GE's own pass executor runs (they need a JSON file)."""
    found = []
    for section, rule, _ in changes:
        known = catalogue.get(rule, section)
        if known is not None and known.read_by_ge:
            found.append(rule)
    return found


def set_values(doc: CfgDocument, changes: Sequence[tuple[str, str, str]]) -> list[Edit]:
    """Like set_switches, with the value given as JSON text (lets a fix move any value)."""
    if not changes:
        return []
    if doc.format == "lines":
        return _set_lines(doc, changes)
    style = detect_style(doc)
    by_section: dict[str, dict[str, str]] = {}
    for section, rule, value_text in changes:
        by_section.setdefault(section, {})[rule] = value_text
    if doc.format == "empty" or doc.root is None:
        entries = {s: list(v.items()) for s, v in by_section.items()}
        return [Edit(Span(0, len(doc.text)), _new_file(entries, style))]
    root = doc.root
    if not isinstance(root, ObjectNode) or not root.closed:
        return []
    edits: list[Edit] = []
    switch_member = top_level_member(root, "Switch")
    if switch_member is None:
        sections = {s: list(v.items()) for s, v in by_section.items()}

        def render_switch(indent: str) -> list[str]:
            inner = indent + style.unit
            blocks = [
                _member_text(s, _block(e, inner if style.multiline else "", style), style)
                for s, e in sections.items()
            ]
            if not style.multiline:
                return [_member_text("Switch", "{" + style.comma.join(blocks) + "}", style)]
            sep = "," + style.newline + inner
            body = "{" + style.newline + inner + sep.join(blocks) + style.newline + indent + "}"
            return [_member_text("Switch", body, style)]

        edit = insert_members(doc, root, render_switch, style)
        return [edit] if edit else []
    switch = switch_member.value
    if not isinstance(switch, ObjectNode):
        return []
    missing: dict[str, list[tuple[str, str]]] = {}
    for section, rules in by_section.items():
        sec_member = switch.get(section)
        if sec_member is None:
            missing[section] = list(rules.items())
            continue
        obj = sec_member.value
        if not isinstance(obj, ObjectNode):
            return []
        to_add = []
        for rule, value_text in rules.items():
            existing = [m for m in obj.members if m.key == rule]
            if not existing:
                to_add.append((rule, value_text))
                continue
            for m in existing:
                if m.value is None:
                    if m.colon is None:
                        return []
                    edits.append(Edit(Span(m.colon + 1, m.colon + 1), " " + value_text))
                elif doc.text[m.value.start : m.value.end] != value_text:
                    edits.append(Edit(m.value.span, value_text))
        if to_add:

            def render_rules(indent: str, to_add=to_add) -> list[str]:
                return [_member_text(k, v, style) for k, v in to_add]

            edit = insert_members(doc, obj, render_rules, style)
            if edit is None:
                return []
            edits.append(edit)
    if missing:

        def render_sections(indent: str) -> list[str]:
            return [_member_text(s, _block(e, indent, style), style) for s, e in missing.items()]

        edit = insert_members(doc, switch, render_sections, style)
        if edit is None:
            return []
        edits.append(edit)
    edits.sort(key=lambda e: (e.span.start, e.span.end))
    return edits


def _new_file(sections: dict[str, list[tuple[str, str]]], style: Style) -> str:
    nl = style.newline
    unit = style.unit
    blocks = [
        f"{unit * 2}{json.dumps(s)}: {_block(e, unit * 2, style)}" for s, e in sections.items()
    ]
    return (
        "{"
        + nl
        + unit
        + '"Switch": {'
        + nl
        + ("," + nl).join(blocks)
        + nl
        + unit
        + "}"
        + nl
        + "}"
        + nl
    )


def _set_lines(doc: CfgDocument, changes: Sequence[tuple[str, str, str]]) -> list[Edit]:
    edits: list[Edit] = []
    added: dict[str, str] = {}
    for _section, rule, value_text in changes:
        try:
            value = json.loads(value_text)
        except ValueError:
            value = value_text
        value = value if isinstance(value, str) else value_text
        existing = [e for e in doc.entries if e.name == rule]
        if not existing:
            added[rule] = value
        for e in existing:
            if e.value != value:
                edits.append(Edit(e.value_span, value))
    if added:
        text = doc.text
        newline = "\r\n" if "\r\n" in text else "\n"
        prefix = "" if not text or text.endswith("\n") else newline
        body = "".join(f"{k}:{v}{newline}" for k, v in added.items())
        edits.append(Edit(Span(len(text), len(text)), prefix + body))
    edits.sort(key=lambda e: (e.span.start, e.span.end))
    return edits


def remove_member(doc: CfgDocument, member: Member) -> Edit:
    """Delete a member with its separator (and its line when it has one to itself)."""
    text = doc.text
    obj = doc.parent_of(member)
    if obj is None:
        return Edit(Span(member.start, member.end), "")
    members = obj.members
    index = next(i for i, m in enumerate(members) if m is member)
    if member.comma is not None:
        start = member.start
        end = member.comma + 1
        if _starts_line(text, start):
            line_end = rest_of_line_blank(text, end)
            if line_end is not None:
                return Edit(Span(text.rfind("\n", 0, start) + 1, line_end), "")
        while end < len(text) and text[end] in " \t":
            end += 1
        return Edit(Span(start, end), "")
    if index > 0 and members[index - 1].comma is not None:
        return Edit(Span(members[index - 1].comma, member.end), "")
    if len(members) == 1 and obj.closed:
        return Edit(Span(obj.start + 1, obj.end - 1), "")
    return Edit(Span(member.start, member.end), "")


def rest_of_line_blank(text: str, offset: int) -> int | None:
    """Offset after the line break when only blanks follow `offset` on its line."""
    end = offset
    while end < len(text) and text[end] in " \t\r":
        end += 1
    if end >= len(text):
        return end
    return end + 1 if text[end] == "\n" else None


def remove_line(doc: CfgDocument, line_start: int, line_end: int) -> Edit:
    """Delete a whole line including its line break."""
    end = line_end + 1 if line_end < len(doc.text) else line_end
    return Edit(Span(line_start, end), "")


def all_off_text(doc: CfgDocument) -> str:
    """A file with `"ALL": "off"` in both sections, keeping Priority/ExceptionalPassOfO1Level;
    with CRLF line ends where the file has them (as :func:`set_switches` keeps them)."""
    sections = ",\n".join(f'    "{s}": {{\n      "ALL": "off"\n    }}' for s in SECTIONS)
    parts = ['  "Switch": {\n' + sections + "\n  }"]
    root = doc.root if doc.format == "json" else None
    if isinstance(root, ObjectNode):
        for key in ("Priority", "ExceptionalPassOfO1Level"):
            member = top_level_member(root, key)
            if member is not None and member.value is not None and _renderable(member.value):
                parts.append(f'  "{key}": {render(doc.text, member.value, 1)}')
    text = "{\n" + ",\n".join(parts) + "\n}\n"
    return text.replace("\n", "\r\n") if "\r\n" in doc.text else text


def _renderable(node) -> bool:
    if isinstance(node, ObjectNode):
        return all(
            m.value is not None and m.key_quoted and _renderable(m.value) for m in node.members
        )
    if node.kind == "array":
        return all(_renderable(i) for i in node.items)
    if isinstance(node, StringNode):
        return node.closed
    return node.kind != "invalid"


def convert_lines_to_json(doc: CfgDocument, catalogue) -> str:
    """The line format as JSON: a known rule goes to its own section(s); `ALL` and unknown names
    go to both sections, as the line format applies every name to both."""
    sections: dict[str, list[tuple[str, str]]] = {s: [] for s in SECTIONS}
    for e in doc.entries:
        if not e.name:
            continue
        targets = catalogue.section_of(e.name) if e.name != "ALL" else []
        for s in targets or SECTIONS:
            sections[s].append((e.name, e.value))
    blocks = []
    for s in SECTIONS:
        entries = sections[s]
        if not entries:
            blocks.append(f'    "{s}": {{}}')
            continue
        body = ",\n".join(
            f"      {json.dumps(k, ensure_ascii=False)}: {json.dumps(v, ensure_ascii=False)}"
            for k, v in entries
        )
        blocks.append(f'    "{s}": {{\n{body}\n    }}')
    return '{\n  "Switch": {\n' + ",\n".join(blocks) + "\n  }\n}\n"
