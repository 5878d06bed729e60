"""Hover: what a key or value means to CANN."""

from __future__ import annotations

from collections.abc import Mapping

from ..catalogue import OTHER_SECTION, Rule
from .cursor import entry_on_line, locate, switch_section
from .docs import (
    EMPTY_NAME_MESSAGE,
    PRIORITY_RANGES,
    SECTION_DOCS,
    STAGE_DOCS,
    TOP_LEVEL_DOCS,
    all_markdown,
    rule_markdown,
    value_markdown,
)
from .model import Context, HoverInfo, Span
from .structure import switch_value
from .suggest import name_index
from .syntax import shorten
from .tree import CfgDocument, Member, ObjectNode, StringNode, top_level_key, top_level_member


def hover(
    doc: CfgDocument, offset: int, ctx: Context, evidence: Mapping[str, str] | None = None
) -> HoverInfo | None:
    """Markdown for the key or value at `offset`, or None; never raises."""
    try:
        if doc.format == "lines":
            return _hover_line(doc, offset, ctx, evidence)
        if doc.format == "json":
            return _hover_json(doc, offset, ctx, evidence)
    except Exception:
        return None
    return None


def _with_evidence(markdown: str, name: str, evidence: Mapping[str, str] | None) -> str:
    extra = evidence.get(name) if evidence else None
    return markdown + ("\n\n---\n\n" + extra if extra else "")


def _rule_doc(name: str, section: str | None, ctx: Context) -> str:
    cat = ctx.catalogue
    rule = cat.get(name, section)
    if rule is not None:
        return rule_markdown(rule) + _target_note(rule, ctx)
    other = cat.get(name, OTHER_SECTION[section]) if section in OTHER_SECTION else None
    if other is not None:
        return (
            f"**{name}** is a {other.section} rule, not a {section} rule: CANN ignores it here.\n\n"
            + rule_markdown(other)
        )
    if not name:
        return EMPTY_NAME_MESSAGE
    index = name_index(cat)
    suggestions = index.suggest(name, section)
    hint = (
        (" Did you mean " + ", ".join(f"`{s}`" for s in suggestions) + "?") if suggestions else ""
    )
    return f"**{shorten(name)}**: not in the catalogue; CANN ignores unknown names silently.{hint}"


def _target_note(rule: Rule, ctx: Context) -> str:
    target = ctx.target
    if target is None:
        return ""
    if rule.section == "UBFusion" and not target.ub_fusion:
        return f"\n\n**{target.label}** has no UB fusion: this rule has no effect there."
    if target.doc_tag and rule.doc_product_tags and target.doc_tag not in rule.doc_product_tags:
        return f"\n\nNot documented for {target.label}."
    return ""


def _hover_json(
    doc: CfgDocument, offset: int, ctx: Context, evidence: Mapping[str, str] | None
) -> HoverInfo | None:
    info = _hover_json_entry(doc, offset, ctx, evidence)
    kept = _read_instead(doc, offset) if info is not None else None
    if kept is None:
        return info
    line = doc.line_col(kept.key_start)[0]
    note = (
        f"**Ignored**: CANN reads the `{shorten(top_level_key(kept.key))}` on line {line} "
        "instead, so nothing here takes effect.\n\n---\n\n"
    )
    return HoverInfo(note + info.markdown, info.span)


def _read_instead(doc: CfgDocument, offset: int) -> Member | None:
    """The member CANN reads in place of one holding `offset` (a duplicate key, or a spaced
    top-level key beside an exact one), or None when CANN reads every member around it."""
    node = doc.root
    top = True
    while isinstance(node, ObjectNode):
        member = next((m for m in node.members if m.start <= offset <= m.end), None)
        if member is None:
            return None
        kept = top_level_member(node, top_level_key(member.key)) if top else node.get(member.key)
        if kept is not None and kept is not member:
            return kept
        node, top = member.value, False
    return None


def _hover_json_entry(
    doc: CfgDocument, offset: int, ctx: Context, evidence: Mapping[str, str] | None
) -> HoverInfo | None:
    cur = locate(doc, offset)
    member = cur.member
    if member is None or cur.role not in ("key", "value"):
        return None
    path = cur.path
    name = member.key
    if cur.role == "key":
        span = member.key_span
        if path == ():
            text = TOP_LEVEL_DOCS.get(
                top_level_key(name),
                f"`{shorten(name)}` is not a top-level key CANN accepts "
                "(only Switch, Priority, ExceptionalPassOfO1Level).",
            )
            return HoverInfo(f"**{shorten(name)}**\n\n{text}", span)
        if path in (("Switch",), ("Priority",)):
            text = SECTION_DOCS.get(name, "Not a section CANN accepts (GraphFusion or UBFusion).")
            return HoverInfo(f"**{path[0]}.{shorten(name)}**\n\n{text}", span)
        section = switch_section(path)
        if section is not None:
            if name == "ALL":
                return HoverInfo(all_markdown(section), span)
            return HoverInfo(_with_evidence(_rule_doc(name, section, ctx), name, evidence), span)
        if len(path) == 2 and path[0] == "Priority":
            text = STAGE_DOCS.get(name, "Not a priority stage (Top, Main or Down).")
            return HoverInfo(f"**{shorten(name)}**\n\n{text}", span)
        if len(path) == 3 and path[0] == "Priority":
            return HoverInfo(_with_evidence(_rule_doc(name, path[1], ctx), name, evidence), span)
        return None
    value = member.value
    if value is None:
        return None
    span = value.span
    section = switch_section(path)
    if section is not None:
        rule = ctx.catalogue.get(name, section)
        raw = switch_value(value) or (value.value if isinstance(value, StringNode) else "")
        return HoverInfo(_with_evidence(value_markdown(rule, name, raw), name, evidence), span)
    if len(path) == 3 and path[0] == "Priority" and path[2] in PRIORITY_RANGES:
        low, high = PRIORITY_RANGES[path[2]]
        return HoverInfo(
            f"Priority of `{shorten(name)}` in {path[2]}: an integer string in "
            f"`[{low}, {high})`; lower runs earlier.",
            span,
        )
    return None


def _hover_line(
    doc: CfgDocument, offset: int, ctx: Context, evidence: Mapping[str, str] | None
) -> HoverInfo | None:
    entry = entry_on_line(doc, offset)
    if entry is None or not entry.name:
        return None
    if entry.name_start <= offset <= entry.name_end:
        if entry.name == "ALL":
            return HoverInfo(all_markdown(None), entry.name_span)
        return HoverInfo(
            _with_evidence(_rule_doc(entry.name, None, ctx), entry.name, evidence)
            + "\n\n(Old line format: this applies to both GraphFusion and UBFusion.)",
            entry.name_span,
        )
    if entry.value_start <= offset <= entry.value_end:
        rule = ctx.catalogue.get(entry.name)
        return HoverInfo(
            value_markdown(rule, entry.name, entry.value), Span(entry.value_start, entry.value_end)
        )
    return None
