"""`analyse`: syntax + structure + semantic findings for one document.

Structure comes from the JSON schema (structure.py). What a schema cannot say is checked here:
unknown names with "did you mean", rules in the wrong section, rules CANN never switches off,
what `ALL` does not override, the target's missing UB fusion, duplicates, the line format.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..catalogue import OTHER_SECTION, SECTIONS
from .docs import EMPTY_NAME_MESSAGE, PRIORITY_RANGES
from .model import Context, Finding, Related, Span
from .structure import invalid_switch_value, structure_findings, switch_value
from .suggest import NameIndex, name_index
from .syntax import gc_paused, internal_error, parse, shorten
from .tree import CfgDocument, LineEntry, Member, ObjectNode, StringNode, top_level_member

LISTED = 5  # names quoted in a message before "and N more"
MAX_PER_CODE = 10_000  # findings of one code reported per document
SUGGEST_LIMIT = 1000  # unknown names per document that get "did you mean" (bounded work)
# With `defer_suggestions`, up to this many new unknown names still get their suggestions at
# once (a few typos cost well under a millisecond each); more are left for `fill_suggestions`.
DEFER_ABOVE = 20


class _Budget:
    """How many more unknown names get suggestions; deterministic for a given text.

    `deferred` (defer mode only) collects the unknown-rule findings whose suggestions are not
    computed yet, with the cache key of their final message."""

    def __init__(self, limit: int = SUGGEST_LIMIT, defer: bool = False) -> None:
        self.left = limit
        self.deferred: list[tuple[Finding, tuple]] | None = [] if defer else None

    def take(self) -> bool:
        self.left -= 1
        return self.left >= 0


@dataclass
class Analysis:
    document: CfgDocument
    findings: list[Finding] = field(default_factory=list)
    # unknown-rule findings still without their "did you mean" (see `fill_suggestions`)
    deferred: list[tuple[Finding, tuple]] = field(default_factory=list)
    catalogue: object = None  # the catalogue the deferred suggestions are searched in


def analyse(text: str, ctx: Context | None = None, *, defer_suggestions: bool = False) -> Analysis:
    """Parse and check; never raises on any text.

    `defer_suggestions`: when more than `DEFER_ABOVE` unknown names need a "did you mean"
    search not done before (in this catalogue), their findings come without it and are listed
    in `Analysis.deferred`; `fill_suggestions` then completes them in place, after which the
    findings are exactly those of a plain `analyse` (the server publishes the findings first,
    the suggestions a moment later)."""
    with gc_paused():
        return _analyse(text, ctx if ctx is not None else Context(), defer_suggestions)


def fill_suggestions(analysis: Analysis) -> None:
    """Complete the deferred unknown-rule findings of `analysis` in place (idempotent)."""
    if not analysis.deferred:
        return
    with gc_paused():
        index = name_index(analysis.catalogue)  # type: ignore[arg-type]
        for finding, key in analysis.deferred:
            message, data = _unknown_rule_message(index, *key)
            finding.message, finding.data = message, dict(data)
        analysis.deferred = []


def _analyse(text: str, ctx: Context, defer: bool = False) -> Analysis:
    doc = parse(text)
    findings = list(doc.syntax_findings)
    budget = _Budget(defer=defer)
    try:
        findings += _checks(doc, ctx, budget)
    except Exception as exc:  # a checker bug must not take the editor down
        findings.append(internal_error(exc, len(doc.text)))
    findings.sort(key=lambda f: (f.span.start, f.span.end))
    analysis = Analysis(doc, _capped(findings), budget.deferred or [], ctx.catalogue)
    if len(analysis.deferred) <= DEFER_ABOVE:
        fill_suggestions(analysis)
    return analysis


def _checks(doc: CfgDocument, ctx: Context, budget: _Budget) -> list[Finding]:
    findings: list[Finding] = []
    index = name_index(ctx.catalogue)
    if doc.format == "json" and doc.root is not None:
        findings += structure_findings(doc.root)
        findings += _duplicates(doc)
        if isinstance(doc.root, ObjectNode):
            findings += _json_semantics(doc.root, ctx, index, budget)
    elif doc.format == "lines":
        findings += _line_semantics(doc, ctx, index, budget)
    return findings


def _capped(findings: list[Finding]) -> list[Finding]:
    """At most MAX_PER_CODE findings of each code (an editor cannot show a million), then one
    information finding saying how many more there are."""
    if len(findings) <= MAX_PER_CODE:
        return findings
    counts: dict[str, int] = {}
    kept: list[Finding] = []
    last: dict[str, Finding] = {}
    for f in findings:
        n = counts[f.code] = counts.get(f.code, 0) + 1
        if n <= MAX_PER_CODE:
            kept.append(f)
        else:
            last[f.code] = f
    for code, f in last.items():
        more = counts[code] - MAX_PER_CODE
        kept.append(
            Finding(
                code,
                "information",
                f.span,
                f"{more} more {code} findings are not shown (at most {MAX_PER_CODE} per code).",
                {"omitted": more},
            )
        )
    kept.sort(key=lambda f: (f.span.start, f.span.end))
    return kept


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:LISTED])
    return shown + (f" and {len(names) - LISTED} more" if len(names) > LISTED else "")


# ---- duplicates ----------------------------------------------------------------------------
def _duplicates(doc: CfgDocument) -> list[Finding]:
    findings: list[Finding] = []
    for node in doc.containers():
        if isinstance(node, ObjectNode):
            members = node.members
            keys = [m.key for m in members]
            if len(set(keys)) != len(keys):
                last: dict[str, Member] = {}
                for m in members:
                    last[m.key] = m
                for m in members:
                    kept = last[m.key]
                    if kept is m:
                        continue
                    line = doc.line_col(kept.key_start)[0]
                    findings.append(
                        Finding(
                            "duplicate-key",
                            "warning",
                            m.key_span,
                            f"Duplicate key {shorten(m.key)!r}: CANN keeps only the last one "
                            f"(line {line}), so this entry is ignored.",
                            {"key": m.key, "kept": [kept.key_start, kept.key_end]},
                            [Related(kept.key_span, "the entry CANN uses")],
                        )
                    )
    return findings


# ---- JSON semantics ------------------------------------------------------------------------
def _json_semantics(
    root: ObjectNode, ctx: Context, index: NameIndex, budget: _Budget
) -> list[Finding]:
    findings: list[Finding] = []
    no_ub = ctx.target is not None and not ctx.target.ub_fusion
    for top in ("Switch", "Priority"):
        top_member = top_level_member(root, top)
        sections = top_member.value if top_member is not None else None
        if not isinstance(sections, ObjectNode):
            continue
        for section in SECTIONS:
            member = sections.get(section)
            if member is None or not isinstance(member.value, ObjectNode):
                continue
            if top == "Switch":
                _section(member.value, section, ctx, index, findings, budget)
            else:
                _priority_section(member.value, section, index, findings, budget)
            if no_ub and section == "UBFusion":
                _ub_unsupported(member, (top, section), ctx, findings)
    return findings


def _section(
    obj: ObjectNode,
    section: str,
    ctx: Context,
    index: NameIndex,
    findings: list[Finding],
    budget: _Budget,
) -> None:
    rules = ctx.catalogue.rules.get(section, {})
    other_section = OTHER_SECTION[section]
    others = ctx.catalogue.rules.get(other_section, {})
    all_member: Member | None = None
    append = findings.append
    for m in obj.members:
        name = m.key
        if name == "ALL":
            all_member = m
            continue
        value_node = m.value
        rule = rules.get(name)
        if rule is None:
            if name in others:
                append(
                    Finding(
                        "wrong-section",
                        "warning",
                        m.key_span,
                        f"{name} is a {other_section} rule, not a {section} rule: CANN looks it up "
                        f"only in {other_section}, so this entry has no effect. Move it.",
                        {
                            "name": name,
                            "section": section,
                            "target_section": other_section,
                            "value": value_node.value if type(value_node) is StringNode else None,
                        },
                    )
                )
            else:
                append(_unknown_rule(m, name, section, budget, index))
            continue
        if name in index.twins and switch_value(value_node) == "off":
            append(_spelling_twin(m.key_span, name, index.twins[name], False))
        if rule.cannot_switch_off and switch_value(value_node) == "off":
            append(
                Finding(
                    "cannot-switch-off",
                    "warning",
                    value_node.span,
                    f"{name} is on CANN's forbidden-close list: it stays on, so switching it off "
                    "has no effect.",
                    {"name": name, "section": section},
                )
            )
    if all_member is not None:
        _all_overridden(all_member, obj.members, (section,), index, findings)


def _spelling_twin(span: Span, name: str, twins: list[str], line: bool) -> Finding:
    """A pass switched off whose name the catalogue also knows in other capitals: passes
    renamed between CANN versions (TbeMatmulFixpipeFusionPass, TbeMatmulFixPipeFusionPass), and
    CANN matches names exactly (a review: the other spelling's "off" did nothing)."""
    others = " or ".join(twins)
    return Finding(
        "spelling-twin",
        "information",
        span,
        f"{name} is also spelled {others} (CANN versions differ): CANN matches names exactly, "
        "so this switches off only a pass registered under this spelling. Check the name in "
        "your run's fusion_result.json or the graph's pass_name.",
        {"name": name, "twins": list(twins), "line": line},
    )


def _unknown_rule(
    m: Member | LineEntry,
    name: str,
    section: str | None,
    budget: _Budget,
    index: NameIndex,
    priority: bool = False,
) -> Finding:
    """The finding for an unknown name; its text-independent part is cached per catalogue."""
    span = Span(m.key_start, m.key_end) if type(m) is Member else m.name_span
    budget.left -= 1  # `budget.take()`, inline: this runs for every unknown name
    key = (name, section, priority, budget.left >= 0)
    cached = index.messages.get(key)
    if cached is None:
        if budget.deferred is not None and key[3] and name:
            message, data = _unknown_rule_parts(name, section, index, priority, key[3], False)
            finding = Finding("unknown-rule", "warning", span, message, data)
            budget.deferred.append((finding, key))
            return finding
        cached = _unknown_rule_message(index, *key)
    message, data = cached
    return Finding("unknown-rule", "warning", span, message, dict(data))


def _unknown_rule_message(
    index: NameIndex, name: str, section: str | None, priority: bool, suggest: bool
) -> tuple[str, dict]:
    """The (cached) message and data of an unknown-rule finding."""
    key = (name, section, priority, suggest)
    cached = index.messages.get(key)
    if cached is None:
        if len(index.messages) > 50_000:
            index.messages.clear()
        cached = index.messages[key] = _unknown_rule_parts(name, section, index, priority, suggest)
    return cached


def _unknown_rule_parts(
    name: str,
    section: str | None,
    index: NameIndex,
    priority: bool,
    suggest: bool,
    search: bool = True,
) -> tuple[str, dict]:
    """`search=False`: the message as if no close name were found (a deferred finding's
    first text; the search runs later, see `fill_suggestions`)."""
    own: list[str] = []
    other: list[str] = []
    if not name:
        data = {"name": "", "section": section, "suggestions": [], "other_section_suggestions": []}
        return EMPTY_NAME_MESSAGE, data
    if suggest and search:
        own = index.suggest(name, section)
        if section is not None:
            other = [s for s in index.suggest(name, OTHER_SECTION[section]) if s not in own]
    suggestions = (own + other)[:3]
    where = f"the {section} catalogue" if section else "the catalogue"
    hint = "" if suggest else f" (No suggestions: more than {SUGGEST_LIMIT} unknown names.)"
    if suggestions:
        labels = [f"{s} ({OTHER_SECTION[section]})" if s in other else s for s in suggestions]
        hint = " Did you mean " + " or ".join(labels) + "?"
    what = "its priority" if priority else "this switch"
    return (
        f"Unknown rule {shorten(name)!r}: not in {where}. CANN ignores this name silently, so "
        f"{what} has no effect.{hint}",
        {
            "name": shorten(name, 1000),
            "section": section,
            "suggestions": suggestions,
            "other_section_suggestions": other,
        },
    )


def _all_overridden(
    all_entry: Member | LineEntry,
    entries: list,
    sections: tuple[str, ...],
    index: NameIndex,
    findings: list[Finding],
) -> None:
    """Say what an `ALL` entry does not reach: explicit entries, built-in defaults (CANN looks a
    rule up by name before `ALL`, and its built-in config is merged after the user file), and
    forbidden-close rules."""
    if isinstance(all_entry, Member):
        value = switch_value(all_entry.value)
        span = all_entry.key_span
        names = {m.key: switch_value(m.value) for m in entries}
    else:
        value = all_entry.value
        span = all_entry.name_span
        names = {e.name: e.value for e in entries}
    if value not in ("on", "off"):
        return
    names.pop("ALL", None)
    explicit = sorted(n for n, v in names.items() if v in ("on", "off") and v != value)
    builtin: list[str] = []
    forbidden: list[str] = []
    for section in sections:
        builtin += [n for n, d in index.defaults[section].items() if d != value and n not in names]
        if value == "off":
            forbidden += [n for n in index.forbidden[section] if n not in names]
    builtin = sorted(set(builtin))
    forbidden = sorted(set(forbidden))
    if not (explicit or builtin or forbidden):
        return
    where = " and ".join(sections)
    parts = []
    if explicit:
        parts.append(
            f"{len(explicit)} entr{'y' if len(explicit) == 1 else 'ies'} in this file "
            f'set "{_flip(value)}" and win over ALL ({_names(explicit)})'
        )
    if builtin:
        parts.append(
            f"{len(builtin)} rule{'s keep their' if len(builtin) != 1 else ' keeps its'} "
            f'built-in default "{_flip(value)}" ({_names(builtin)})'
        )
    if forbidden:
        parts.append(
            f"{len(forbidden)} rule{'s' if len(forbidden) != 1 else ''} CANN never "
            f"switches off stay{'s' if len(forbidden) == 1 else ''} on ({_names(forbidden)})"
        )
    findings.append(
        Finding(
            "all-overridden",
            "information",
            span,
            f'"ALL": "{value}" covers only the {where} rules not set otherwise: '
            + "; ".join(parts)
            + ".",
            {
                "sections": list(sections),
                "value": value,
                "explicit": explicit,
                "builtin_defaults": builtin,
                "forbidden_close": forbidden,
            },
        )
    )


def _flip(value: str) -> str:
    return "on" if value == "off" else "off"


def _ub_unsupported(
    member: Member, path: tuple[str, str], ctx: Context, findings: list[Finding]
) -> None:
    target = ctx.target
    label = target.label if target else "this target"
    data = {"path": list(path), "target": target.given if target else None}
    findings.append(
        Finding(
            "ub-unsupported-on-target",
            "warning",
            member.key_span,
            f"{label} has no UB fusion: CANN applies nothing from {'.'.join(path)}. The section "
            "can be removed.",
            dict(data),
        )
    )
    value = member.value
    if not isinstance(value, ObjectNode):
        return
    entries = value.members
    if path[0] == "Priority":
        entries = [
            m
            for stage in entries
            if isinstance(stage.value, ObjectNode)
            for m in stage.value.members
        ]
    for m in entries:
        findings.append(
            Finding(
                "ub-unsupported-on-target",
                "warning",
                m.key_span,
                f"{label} has no UB fusion: this {shorten(m.key)} entry has no effect.",
                dict(data),
            )
        )


def _priority_section(
    obj: ObjectNode, section: str, index: NameIndex, findings: list[Finding], budget: _Budget
) -> None:
    seen: dict[str, tuple[Member, ObjectNode]] = {}
    for stage_member in obj.members:
        stage = stage_member.value
        if not isinstance(stage, ObjectNode) or stage_member.key not in PRIORITY_RANGES:
            continue
        for m in stage.members:
            first, first_stage = seen.get(m.key, (None, None))
            if first is not None and first_stage is not stage:
                findings.append(
                    Finding(
                        "invalid-priority",
                        "error",
                        m.key_span,
                        f"{shorten(m.key)} already has a priority in this section: CANN rejects a "
                        "repeated pass.",
                        {"name": m.key, "section": section},
                        [Related(first.key_span, "first priority for this pass")],
                    )
                )
            else:
                seen.setdefault(m.key, (m, stage))
            if m.key not in index.all_names:
                findings.append(_unknown_rule(m, m.key, None, budget, index, True))


# ---- line format ---------------------------------------------------------------------------
def _line_semantics(
    doc: CfgDocument, ctx: Context, index: NameIndex, budget: _Budget
) -> list[Finding]:
    findings: list[Finding] = []
    entries = doc.entries
    first_line_end = doc.text.find("\n")
    first_line_end = len(doc.text) if first_line_end < 0 else first_line_end
    start = 1 if doc.text.startswith("\ufeff") else 0
    findings.append(
        Finding(
            "legacy-line-format",
            "information",
            Span(start, max(start, first_line_end)),
            "Old line format (Name:on|off): FE still reads it, applying each name to both "
            "GraphFusion and UBFusion, but it is ignored by newer GE-framework passes "
            "(REG_FUSION_PASS). Convert it to JSON.",
            {"convert": True},
        )
    )
    last = {e.name: e for e in entries}  # the entry CANN would keep
    no_ub = ctx.target is not None and not ctx.target.ub_fusion
    all_entry: LineEntry | None = None
    for e in entries:
        if not e.name:  # CANN skips the entry, having read its value
            if e.value not in ("on", "off"):
                finding = invalid_switch_value(
                    StringNode(e.value_start, e.value_end, e.value), e.name, None
                )
                finding.severity = "error"
                finding.data["line"] = True
                findings.append(finding)
            continue
        kept = last[e.name]
        if kept is not e:
            line = doc.line_col(kept.name_start)[0]
            findings.append(
                Finding(
                    "duplicate-key",
                    "error",
                    e.name_span,
                    f"{shorten(e.name)!r} is repeated (again on line {line}): CANN's old-format "
                    'reader rejects the whole file ("is repetitive"). Remove one of them.',
                    {"key": e.name, "kept": [kept.name_start, kept.name_end], "line": True},
                    [Related(kept.name_span, "the other occurrence")],
                )
            )
        if e.value not in ("on", "off"):
            node = StringNode(e.value_start, e.value_end, e.value)
            finding = invalid_switch_value(node, e.name, None)
            finding.severity = "error"
            finding.data["line"] = True
            findings.append(finding)
        if e.name == "ALL":
            all_entry = e
            continue
        sections = ctx.catalogue.section_of(e.name)
        if not sections:
            findings.append(_unknown_rule(e, e.name, None, budget, index))
            continue
        if e.value == "off" and e.name in index.twins:
            findings.append(_spelling_twin(e.name_span, e.name, index.twins[e.name], True))
        if e.value == "off" and any(ctx.catalogue.rules[s][e.name].read_by_ge for s in sections):
            findings.append(
                Finding(
                    "ge-pass-in-line-format",
                    "warning",
                    e.span,
                    f"{e.name} is run by GE's own pass executor, which reads switches from a "
                    "JSON file only (FusionUtils::ParseFusionSwitch): in the old line format "
                    "this line does not switch it off. Convert the file to JSON.",
                    {"name": e.name, "line": True, "convert": True},
                )
            )
        if e.value == "off" and any(
            ctx.catalogue.rules[s][e.name].cannot_switch_off for s in sections
        ):
            rule = ctx.catalogue.get(e.name)
            findings.append(
                Finding(
                    "cannot-switch-off",
                    "warning",
                    e.value_span,
                    f"{e.name} is on CANN's forbidden-close list: it stays on, so switching it "
                    "off has no effect.",
                    {"name": e.name, "section": rule.section if rule else None, "line": True},
                )
            )
        if no_ub and sections == ["UBFusion"]:
            findings.append(
                Finding(
                    "ub-unsupported-on-target",
                    "warning",
                    e.name_span,
                    f"{ctx.target.label} has no UB fusion: {e.name} is a UBFusion rule, so this "
                    "line has no effect.",
                    {"line": True, "target": ctx.target.given},
                )
            )
    if all_entry is not None:
        _all_overridden(all_entry, entries, SECTIONS, index, findings)
    return findings
