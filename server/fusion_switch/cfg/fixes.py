"""Quick fixes. Each is derived only from a finding's code, span and data plus the document, so the
protocol layer can rebuild findings from the diagnostics a client sends back."""

from __future__ import annotations

import json
from collections.abc import Sequence

from .edits import (
    apply_edits,
    convert_lines_to_json,
    remove_line,
    remove_member,
    rest_of_line_blank,
    set_values,
)
from .formatting import SKELETON
from .model import Context, Edit, Finding, Fix, Span
from .syntax import parse
from .tree import CfgDocument, LineEntry, Member, ObjectNode, top_level_member

CHECKED_REPAIRS = 5  # syntax repairs re-parsed per request; the rest are not offered


def code_actions(doc: CfgDocument, findings: Sequence[Finding], ctx: Context) -> list[Fix]:
    fixes: list[Fix] = []
    budget = [CHECKED_REPAIRS]
    for finding in findings:
        try:
            fixes.extend(_fixes_for(doc, finding, ctx, budget))
        except Exception:  # a stale or hand-made finding must never break the request
            continue
    return fixes


def _fixes_for(doc: CfgDocument, f: Finding, ctx: Context, budget: list[int]) -> list[Fix]:
    code = f.code
    data = f.data or {}
    if code in ("unknown-rule", "unknown-top-level-key", "unknown-section", "invalid-priority"):
        return _replace_key(doc, f, data.get("suggestions") or [])
    if code == "wrong-section":
        return _move(doc, f, data)
    if code == "trailing-comma":
        return [_fix("Remove the trailing comma", [Edit(f.span, "")], code, preferred=True)]
    if code == "json-syntax" and data.get("delete"):
        return _checked(doc, f, _fix("Remove the extra ','", [Edit(f.span, "")], code), budget)
    if code == "comment":
        return [_fix("Remove the comment", [_remove_comment(doc, f.span)], code, preferred=True)]
    if code == "json-syntax" and "insert" in data and "at" in data:
        at = int(data["at"])
        inserted = str(data["insert"])
        fix = _fix(f"Insert {inserted.strip()!r}", [Edit(Span(at, at), inserted)], code)
        return _checked(doc, f, fix, budget)
    if code == "invalid-switch-value" and data.get("suggested") in ("on", "off"):
        new = data["suggested"] if data.get("line") else json.dumps(data["suggested"])
        return [
            _fix(
                f'Change the value to "{data["suggested"]}"',
                [Edit(f.span, new)],
                code,
                preferred=True,
            )
        ]
    if code == "duplicate-key":
        title = (
            "Remove this repeated line"
            if data.get("line")
            else "Remove this duplicate (CANN ignores it)"
        )
        return _remove_entry(doc, f, title)
    if code == "cannot-switch-off":
        return _remove_entry(
            doc, f, "Remove this entry (switching it off has no effect)", by_value=True
        )
    if code == "ub-unsupported-on-target":
        if data.get("line"):
            return _remove_entry(doc, f, "Remove this UBFusion rule (no UB fusion on the target)")
        return _remove_path(doc, data.get("path") or [], code)
    if code in ("legacy-line-format", "ge-pass-in-line-format") and doc.format == "lines":
        new = convert_lines_to_json(doc, ctx.catalogue)
        return [
            _fix(
                "Convert to the JSON format",
                [Edit(Span(0, len(doc.text)), new)],
                code,
                kind="quickfix",
                preferred=True,
            )
        ]
    if code == "empty-file":
        return [
            _fix(
                "Insert a fusion_switch.cfg skeleton",
                [Edit(Span(0, len(doc.text)), SKELETON)],
                code,
                preferred=True,
            )
        ]
    if code == "line-syntax" and "line_start" in data:
        start, end = int(data["line_start"]), int(data["line_end"])
        return [_fix("Remove this line", [remove_line(doc, start, end)], code)]
    return []


def _checked(doc: CfgDocument, f: Finding, fix: Fix, budget: list[int]) -> list[Fix]:
    """Syntax repairs are guesses on broken text: offer one only if it really removes the error
    (re-parsing is cheap next to a user's click; very large files skip the check). At most
    ``budget`` re-parses per request: fifty diagnostics of a 100 KB file of brackets took 0.9 s
    of the editor's event loop (a review); repairs beyond it are not offered."""
    if len(doc.text) > 1_000_000:
        return [fix]
    if not all(0 <= e.span.start <= e.span.end <= len(doc.text) for e in fix.edits):
        return []
    if budget[0] <= 0:
        return []
    budget[0] -= 1
    text = apply_edits(doc.text, fix.edits)
    # the document's own finding at that place (a rebuilt finding may lack the message)
    own = next((x for x in doc.syntax_findings if x.code == f.code and x.span == f.span), None)
    message = own.message if own is not None else f.message
    same = sum(x.message == message for x in doc.syntax_findings)
    after = sum(x.message == message for x in parse(text).syntax_findings)
    return [fix] if after < same else []


def _fix(
    title: str, edits: list[Edit], code: str, kind: str = "quickfix", preferred: bool = False
) -> Fix:
    return Fix(title=title, edits=edits, kind=kind, codes=[code], preferred=preferred)


# ---- locating what a finding points at ----------------------------------------------------
def member_at_key(doc: CfgDocument, span: Span) -> Member | None:
    """The member whose key token is exactly `span`."""
    return next(
        (m for m in doc.members() if m.key_start == span.start and m.key_end == span.end), None
    )


def member_at_value(doc: CfgDocument, span: Span) -> Member | None:
    """The member whose value token is exactly `span`."""
    return next(
        (
            m
            for m in doc.members()
            if m.value is not None and m.value.start == span.start and m.value.end == span.end
        ),
        None,
    )


def entry_at(doc: CfgDocument, span: Span) -> LineEntry | None:
    for e in doc.entries:
        if (e.name_start, e.name_end) == (span.start, span.end) or (
            (e.value_start, e.value_end) == (span.start, span.end)
        ):
            return e
    return None


# ---- fixes --------------------------------------------------------------------------------
def _replace_key(doc: CfgDocument, f: Finding, suggestions: list[str]) -> list[Fix]:
    fixes = []
    if doc.format == "lines":
        entry = entry_at(doc, f.span)
        if entry is None:
            return []
        for i, s in enumerate(suggestions):
            fixes.append(
                _fix(f"Replace with {s}", [Edit(entry.name_span, s)], f.code, preferred=i == 0)
            )
        return fixes
    member = member_at_key(doc, f.span)
    if member is None:
        return []
    for i, s in enumerate(suggestions):
        fixes.append(
            _fix(
                f"Replace with {s}",
                [Edit(member.key_span, json.dumps(s, ensure_ascii=False))],
                f.code,
                preferred=i == 0,
            )
        )
    return fixes


def _move(doc: CfgDocument, f: Finding, data: dict) -> list[Fix]:
    member = member_at_key(doc, f.span)
    target = data.get("target_section")
    if member is None or member.value is None or target not in ("GraphFusion", "UBFusion"):
        return []
    removal = remove_member(doc, member)
    value_text = doc.text[member.value.start : member.value.end]
    insertion = set_values(doc, [(target, member.key, value_text)])
    if not insertion:
        return []
    for e in insertion:
        if e.span.start < removal.span.end and removal.span.start < e.span.end:
            return []  # overlapping edits: not safe
    edits = sorted([removal, *insertion], key=lambda e: (e.span.start, e.span.end))
    return [_fix(f"Move {member.key} to {target}", edits, f.code, preferred=True)]


def _remove_comment(doc: CfgDocument, span: Span) -> Edit:
    """Delete a comment; with its line when nothing else is on it."""
    text = doc.text
    line_start = text.rfind("\n", 0, span.start) + 1
    line_end = rest_of_line_blank(text, span.end)
    if line_end is not None and not text[line_start : span.start].strip():
        return Edit(Span(line_start, line_end), "")
    start = span.start
    while start > line_start and text[start - 1] in " \t":
        start -= 1
    return Edit(Span(start, span.end), "")


def _remove_entry(doc: CfgDocument, f: Finding, title: str, by_value: bool = False) -> list[Fix]:
    if doc.format == "lines":
        entry = entry_at(doc, f.span)
        if entry is None:
            return []
        return [_fix(title, [remove_line(doc, entry.line_start, entry.line_end)], f.code)]
    member = member_at_value(doc, f.span) if by_value else member_at_key(doc, f.span)
    if member is None:
        return []
    return [_fix(title, [remove_member(doc, member)], f.code)]


def _remove_path(doc: CfgDocument, path: list, code: str) -> list[Fix]:
    node = doc.root
    member = None
    for depth, key in enumerate(path):
        if not isinstance(node, ObjectNode):
            return []
        member = node.get(str(key)) if depth else top_level_member(node, str(key))
        if member is None:
            return []
        node = member.value
    if member is None:
        return []
    where = ".".join(map(str, path))
    return [
        _fix(
            f"Remove the {where} section (no UB fusion on the target)",
            [remove_member(doc, member)],
            code,
        )
    ]
