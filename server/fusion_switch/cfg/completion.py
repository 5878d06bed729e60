"""Completion: keys valid at the cursor and the values "on"/"off", with exact replace spans.

Replace span rules: inside a string token (key or value) the whole token, quotes included, is
replaced (so `filter_text` carries the quotes too); on a bare word the word; elsewhere an empty
span at the cursor. A key gets `": "` appended only when the entry has no colon yet; a snippet
(which inserts the value too) also ends with `,` when another member follows without one.

Every item of one answer replaces the same span, so an answer is a `Completions`: the span and
its `Choice`s (items without the span). The choices of a section's rules depend only on the
catalogue and a few flags of the cursor, so they are built once per catalogue and flags and
shared by every later answer (5,000 rules: building them is most of the cost of an answer).
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring as _quoted  # json.dumps(str, ensure_ascii=False)
from typing import NamedTuple

from ..catalogue import SECTIONS, Rule
from .cursor import Cursor, entry_on_line, line_at, locate, switch_section
from .docs import (
    SECTION_DOCS,
    STAGE_DOCS,
    TOP_LEVEL_DOCS,
    all_markdown,
    rule_markdown,
    value_markdown,
)
from .formatting import SKELETON
from .model import Completion, Context, Span
from .suggest import name_index
from .syntax import shorten
from .tree import CfgDocument, StringNode

_CONTAINER_VALUES = {"Switch": "{}", "Priority": "{}", "ExceptionalPassOfO1Level": "[]"}


class _Candidate(NamedTuple):
    """A key that may be offered; `value_kind` decides what is inserted after it."""

    name: str
    detail: str
    documentation: str
    group: str  # sort group, prefixed to the name in `sort_text`
    value_kind: str  # "switch", "priority", or the key whose empty container follows


class Choice(NamedTuple):
    """A completion item without the span it replaces (see `Completion` for the fields)."""

    label: str
    new_text: str
    kind: str = "property"
    detail: str = ""
    documentation: str = ""
    sort_text: str | None = None
    filter_text: str | None = None
    is_snippet: bool = False


class SharedChoices(list):
    """A list of choices built once and shared by many answers: never mutate it. `rendered`
    is where the protocol layer keeps what it derives from the list (e.g. JSON text per
    client kind), so that dies with the list (i.e. with the catalogue)."""

    __slots__ = ("rendered",)

    def __init__(self, choices) -> None:
        super().__init__(choices)
        self.rendered: dict = {}


_NONE: frozenset[str] = frozenset()


class Completions(NamedTuple):
    """One answer; every choice replaces `span`. The choices, in order: `fixed`, then those
    of `shared` whose label is not in `skip`, then `after`."""

    span: Span
    fixed: list[Choice]
    shared: SharedChoices | None = None
    skip: frozenset[str] | set[str] = _NONE
    after: tuple[Choice, ...] = ()

    @property
    def choices(self) -> list[Choice]:
        out = list(self.fixed)
        if self.shared:
            skip = self.skip
            out += [c for c in self.shared if c.label not in skip] if skip else self.shared
        out += self.after
        return out

    def expanded(self) -> list[Completion]:
        span = self.span
        return [Completion(c[0], span, *c[1:]) for c in self.choices]


def complete(
    doc: CfgDocument, offset: int, ctx: Context, snippets: bool = False
) -> list[Completion]:
    """Completion items at `offset`; never raises."""
    return complete_choices(doc, offset, ctx, snippets).expanded()


def complete_choices(
    doc: CfgDocument, offset: int, ctx: Context, snippets: bool = False
) -> Completions:
    """`complete` as one span and its choices (what the server serialises); never raises."""
    offset = max(0, min(offset, len(doc.text)))
    try:
        if doc.format == "empty":
            skeleton = Choice(
                "fusion_switch.cfg skeleton",
                SKELETON,
                # plain text either way; only a snippet client is told it is a template
                kind="snippet" if snippets else "keyword",
                detail="Switch with GraphFusion and UBFusion",
                documentation=TOP_LEVEL_DOCS["Switch"],
            )
            return Completions(Span(0, len(doc.text)), [skeleton])
        if doc.format == "lines":
            return _complete_line(doc, offset, ctx)
        return _complete_json(doc, offset, ctx, snippets)
    except Exception:  # completion must never break the editor
        return Completions(Span(offset, offset), [])


# ---- JSON ---------------------------------------------------------------------------------
def _complete_json(doc: CfgDocument, offset: int, ctx: Context, snippets: bool) -> Completions:
    cur = locate(doc, offset)
    path = cur.path
    if cur.role == "key":
        return _keys(doc, cur, offset, ctx, snippets)
    if cur.role == "value" and switch_section(path) is not None:
        return _values(doc, cur, offset, ctx)
    if cur.role == "item" and path == ("ExceptionalPassOfO1Level",):
        return _items(doc, cur, offset, ctx)
    return Completions(Span(offset, offset), [])


def _key_candidates(path: tuple[str, ...], ctx: Context) -> tuple[list[_Candidate], tuple | None]:
    """The keys valid under `path`: a few fixed ones, then (section, value kind) when a
    section's rules follow them."""
    if path == ():
        return [
            _Candidate(k, "top-level key", TOP_LEVEL_DOCS[k], "0", k) for k in TOP_LEVEL_DOCS
        ], None
    if path in (("Switch",), ("Priority",)):
        return [
            _Candidate(s, f"{path[0]} section", SECTION_DOCS[s], "0", "{}") for s in SECTIONS
        ], None
    section = switch_section(path)
    if section is not None:
        every = _Candidate(
            "ALL", f"{section}: every rule not named", all_markdown(section), "0", "switch"
        )
        return [every], (section, "switch")
    if len(path) == 2 and path[0] == "Priority" and path[1] in SECTIONS:
        return [_Candidate(s, "priority stage", STAGE_DOCS[s], "0", "{}") for s in STAGE_DOCS], None
    if len(path) == 3 and path[0] == "Priority" and path[1] in SECTIONS and path[2] in STAGE_DOCS:
        return [], (path[1], "priority", path[2])
    return [], None


def _rule_candidates(section: str, ctx: Context, kind: str) -> list[_Candidate]:
    """The section's rules; built once per catalogue (rule markdown is the costly part)."""
    index = name_index(ctx.catalogue)
    cache = index.completions.get((section, kind))
    if cache is None:  # built whole, then stored: the server's warm-up runs on a thread
        cache = {
            name: _Candidate(name, section, rule_markdown(rule), _group(rule), kind)
            for name, rule in ctx.catalogue.rules.get(section, {}).items()
        }
        index.completions[(section, kind)] = cache
    return list(cache.values())


def _shared(ctx: Context, key: tuple, build) -> SharedChoices:
    """`build()`, made once per catalogue and `key` (the name index's cache dies with it)."""
    cache = name_index(ctx.catalogue).completions
    found = cache.get(key)
    if found is None:
        found = cache[key] = SharedChoices(build())
    return found


def _group(rule: Rule) -> str:
    """Sort order: documented rules that can be switched off, then others, then the rest."""
    if rule.cannot_switch_off:
        return "3"
    return "1" if rule.products else "2"


# the lowest value each stage's range takes in a user file (Top [0,1000), Main [1000,2000),
# Down [2000,3000)): 1000 everywhere made an accepted completion out of range under Top/Down
_STAGE_DEFAULT = {"Top": "0", "Main": "1000", "Down": "2000"}


def _key_choice(
    candidate: _Candidate,
    has_colon: bool,
    snippets: bool,
    needs_comma: bool,
    quoted: bool,
    stage: str | None = None,
) -> Choice:
    name, detail, documentation, group, value_kind = candidate
    key_text = _quoted(name)
    new_text = key_text
    is_snippet = False
    if not has_colon:
        if value_kind == "switch":
            if snippets:
                new_text = _escape(key_text) + ': "${1|on,off|}"'
                is_snippet = True
            else:
                new_text = key_text + ": "
        elif value_kind == "priority":
            new_text = key_text + ": "
            if snippets:
                default = _STAGE_DEFAULT.get(stage or "Main", "1000")
                new_text = _escape(key_text) + f': "${{1:{default}}}"'
                is_snippet = True
        else:
            empty = _CONTAINER_VALUES.get(value_kind, value_kind)
            if snippets:
                new_text = _escape(key_text) + f": {empty[0]}$0{empty[1]}"
                is_snippet = True
            else:
                new_text = key_text + ": " + empty
        if needs_comma and is_snippet:
            new_text += ","
    return Choice(
        label=name,
        new_text=new_text,
        kind="property",
        detail=detail,
        documentation=documentation,
        sort_text=group + name,
        filter_text=key_text if quoted else name,
        is_snippet=is_snippet,
    )


def _keys(doc: CfgDocument, cur: Cursor, offset: int, ctx: Context, snippets: bool) -> Completions:
    text = doc.text
    member = cur.member
    if member is not None:
        span = member.key_span
        has_colon = member.colon is not None
        quoted = text.startswith('"', span.start)
    else:
        span = Span(offset, offset)
        has_colon = False
        quoted = False
    present = {m.key for m in getattr(cur.container, "members", []) if m is not member}
    # Another member follows without a separator: a snippet inserts the value as well, so it
    # must end with the comma or the document breaks the moment the item is accepted.
    needs_comma = snippets and not has_colon and _next_char(text, span.end) == '"'
    flags = (has_colon, snippets, needs_comma, quoted)
    fixed, rules = _key_candidates(cur.path, ctx)
    items = [_key_choice(c, *flags) for c in fixed if c.name not in present]
    shared = None
    if rules is not None:
        section, kind, *stage = rules
        shared = _shared(
            ctx,
            ("keys", section, kind, *stage, *flags),
            lambda: [_key_choice(c, *flags, *stage) for c in _rule_candidates(section, ctx, kind)],
        )
    after: tuple[Choice, ...] = ()
    if snippets and not has_colon and len(cur.path) == 2 and cur.path[0] == "Switch":
        after = (
            Choice(
                label="New rule entry",
                new_text='"${1:Rule}": "${2|on,off|}"' + ("," if needs_comma else ""),
                kind="snippet",
                detail="a rule switch",
                documentation="Insert a rule name and its switch value.",
                sort_text="9",
                filter_text='"' if quoted else "",
                is_snippet=True,
            ),
        )
    return Completions(span, items, shared, present, after)


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("$", "\\$").replace("}", "\\}")


def _next_char(text: str, offset: int) -> str:
    i = offset
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return text[i] if i < len(text) else ""


def _values(doc: CfgDocument, cur: Cursor, offset: int, ctx: Context) -> Completions:
    text = doc.text
    member = cur.member
    node = cur.node
    if node is not None:
        span = node.span
        quoted = isinstance(node, StringNode)
        suffix = ""
    else:
        span = Span(offset, offset)
        quoted = False
        nxt = _next_char(text, offset)
        suffix = "," if nxt == '"' else ""
    name = member.key if member is not None else ""
    rule = ctx.catalogue.get(name, cur.path[1]) if name else None
    items = []
    for i, value in enumerate(("on", "off")):
        value_text = json.dumps(value)
        items.append(
            Choice(
                label=value,
                new_text=value_text + suffix,
                kind="value",
                detail=f"{shorten(name)}: {value}" if name else value,
                documentation=value_markdown(rule, name, value),
                sort_text=str(i),
                filter_text=value_text if quoted else value,
            )
        )
    return Completions(span, items)


def _items(doc: CfgDocument, cur: Cursor, offset: int, ctx: Context) -> Completions:
    node = cur.node
    span = node.span if node is not None else Span(offset, offset)
    quoted = isinstance(node, StringNode)
    present = {
        i.value
        for i in getattr(cur.container, "items", [])
        if isinstance(i, StringNode) and i is not node
    }

    def build() -> list[Choice]:
        out = []
        for name, section, documentation, group, _ in _rule_candidates(
            "GraphFusion", ctx, "switch"
        ):
            key_text = _quoted(name)
            out.append(
                Choice(
                    name,
                    key_text,
                    "value",
                    section,
                    documentation,
                    group + name,
                    key_text if quoted else name,
                )
            )
        return out

    return Completions(span, [], _shared(ctx, ("items", quoted), build), present)


# ---- line format --------------------------------------------------------------------------
def _complete_line(doc: CfgDocument, offset: int, ctx: Context) -> Completions:
    text = doc.text
    start, end = line_at(doc, offset)
    entry = entry_on_line(doc, offset)
    colon = entry.colon if entry is not None else -1
    if entry is not None and offset > colon:
        span = entry.value_span if entry.value_start <= offset else Span(offset, offset)
        rule = ctx.catalogue.get(entry.name)
        return Completions(
            span,
            [
                Choice(
                    v,
                    v,
                    "value",
                    f"{entry.name}: {v}",
                    value_markdown(rule, entry.name, v),
                    str(i),
                    v,
                )
                for i, v in enumerate(("on", "off"))
            ],
        )
    if entry is not None:
        span = entry.name_span if entry.name_start <= offset else Span(offset, offset)
        suffix = ""
    else:
        line = text[start:end]
        lead = start + len(line) - len(line.lstrip())
        trail = start + len(line.rstrip())
        span = (
            Span(lead, trail) if lead <= offset <= trail and trail > lead else Span(offset, offset)
        )
        suffix = ":"
    present = {e.name for e in doc.entries if e is not entry}
    items = []
    if "ALL" not in present:
        items.append(
            Choice(
                "ALL",
                "ALL" + suffix,
                "property",
                "both sections",
                all_markdown(None),
                "0ALL",
                "ALL",
            )
        )

    def build() -> list[Choice]:
        out = []
        seen = set()
        for section in SECTIONS:
            for name, sec, documentation, group, _ in _rule_candidates(section, ctx, "switch"):
                if name in seen:
                    continue
                seen.add(name)
                out.append(
                    Choice(name, name + suffix, "property", sec, documentation, group + name, name)
                )
        return out

    return Completions(span, items, _shared(ctx, ("lines", suffix), build), present)
