"""Which switches a rule name means, and the configuration text with them set (pure).

A rule goes to the section(s) the catalogue puts it in; `Section:Rule` names the section
explicitly (for rules the catalogue does not know). A rule on CANN's forbidden-close list is
refused for "off": writing it would change nothing, which is worse than an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..catalogue import SECTIONS, Catalogue
from ..catalogue.rules import CANNOT_SWITCH_OFF
from ..cfg.edits import is_rule_name

Change = tuple[str, str, str]  # (section, rule, "on" | "off")
NOT_A_RULE_NAME = (
    "not a rule name (no spaces, ':', quotes, backslashes or control characters; a whole "
    "section is switched with 'off --all')"
)


@dataclass
class Resolved:
    changes: list[Change]
    problems: list[str]  # one sentence per refused name


def split_name(name: str) -> tuple[str | None, str]:
    """`GraphFusion:Rule` → ("GraphFusion", "Rule"); a plain name → (None, name)."""
    for sep in (":", "/"):
        head, found, tail = name.partition(sep)
        if found and head in SECTIONS and tail:
            return head, tail
    return None, name


FORCED_ON = (
    "is listed in ExceptionalPassOfO1Level{where}: FE turns such a pass on before it reads its "
    'switch (fusion_config_parser.cc GetFusionSwitchByOptimizationOption), so "off" would '
    "change nothing{remedy}"
)


def forced_on(text: str) -> frozenset[str]:
    """The rules a configuration's own ``ExceptionalPassOfO1Level`` lists (FE keeps them on
    whatever their switch says)."""
    from ..cfg import parse
    from ..cfg.tree import ArrayNode, ObjectNode, StringNode, top_level_member

    doc = parse(text)
    if not isinstance(doc.root, ObjectNode):
        return frozenset()
    member = top_level_member(doc.root, "ExceptionalPassOfO1Level")
    if member is None or not isinstance(member.value, ArrayNode):
        return frozenset()
    return frozenset(i.value for i in member.value.items if isinstance(i, StringNode))


def resolve_rules(
    names: Iterable[str], catalogue: Catalogue, value: str, listed_on: frozenset[str] = frozenset()
) -> Resolved:
    """The switches ``names`` mean, and a sentence per name refused. ``listed_on``: the rules
    the configuration's own ``ExceptionalPassOfO1Level`` lists (:func:`forced_on`)."""
    changes: list[Change] = []
    problems: list[str] = []
    for raw in names:
        section, name = split_name(raw.strip())
        if not name:
            continue
        if not is_rule_name(name):
            problems.append(f"{name!r}: {NOT_A_RULE_NAME}")
            continue
        if section is not None:
            sections = [section]
        else:
            sections = catalogue.section_of(name)
            if not sections:
                close = catalogue.suggest(name)
                hint = f" Did you mean {' or '.join(close)}?" if close else ""
                problems.append(
                    f"{name}: not a rule in the catalogue (CANN ignores unknown names silently)."
                    f"{hint} To write it anyway, name its section: GraphFusion:{name} or "
                    f"UBFusion:{name}."
                )
                continue
        for sec in sections:
            rule = catalogue.get(name, sec)
            if value == "off" and (name in listed_on or (rule is not None and rule.o1_exceptional)):
                mine = name in listed_on
                problems.append(
                    f"{name} ({sec}) "
                    + FORCED_ON.format(
                        where=" in this file" if mine else " in CANN's fusion config",
                        remedy="; take it out of that list first" if mine else "",
                    )
                    + "."
                )
                continue
            if value == "off" and rule is not None and rule.cannot_switch_off:
                problems.append(
                    f"{name} ({sec}) {CANNOT_SWITCH_OFF} (source: "
                    "FE fusion_pass_util.h ForbiddenClosedPass)."
                )
                continue
            change = (sec, name, value)
            if change not in changes:
                changes.append(change)
    return Resolved(changes, problems)


def switched_text(text: str, changes: Sequence[Change], catalogue: Catalogue | None = None) -> str:
    """`text` with the switches set, keeping every other byte; ValueError when the file is
    too broken to edit safely. Given the ``catalogue``, a line-format file that must switch a
    rule GE reads is rewritten as JSON (:func:`ge_needs_json` says which)."""
    from ..cfg import apply_edits, parse, set_switches

    doc = parse(text)
    edits = set_switches(doc, list(changes), catalogue)
    if not edits:
        if doc.has_syntax_errors:
            raise ValueError("it has syntax errors; fix them first (see 'fusion-switch check')")
        return text
    return apply_edits(text, edits)


def ge_needs_json(text: str, changes: Sequence[Change], catalogue: Catalogue) -> list[str]:
    """The rules of ``changes`` that make :func:`switched_text` rewrite ``text`` (in the old
    line format) as JSON: GE's pass executor runs them and reads no other format."""
    from ..cfg import parse
    from ..cfg.edits import read_by_ge

    return read_by_ge(changes, catalogue) if parse(text).format == "lines" else []


def ignored_by_ge(text: str, catalogue: Catalogue) -> list[tuple[str, str]]:
    """(section, rule) GE runs that ``text``, in the old line format, switches off: GE read
    none of them, so they ran on; rewritten as JSON, the file switches them off."""
    from ..cfg import parse

    doc = parse(text)
    if doc.format != "lines":
        return []
    found = []
    for entry in doc.entries:
        for section in catalogue.section_of(entry.name) if entry.value == "off" else ():
            known = catalogue.get(entry.name, section)
            if known is not None and known.read_by_ge and (section, entry.name) not in found:
                found.append((section, entry.name))
    return found


def as_run_changes(
    text: str, on: Iterable[tuple[str, str]], off: Sequence[Change], catalogue: Catalogue
) -> list[Change]:
    """``off`` and, when they rewrite ``text`` as JSON, "on" for the rules GE ran in ``text``
    that must stay on: the rules of ``on`` GE reads, and those :func:`ignored_by_ge` not in
    ``off``. A bisection's trial labelled "on" for a GE pass the line-format file had "off"
    for ran it off once rewritten (a review), so the pass guilty as it was never ran."""
    if not ge_needs_json(text, off, catalogue):
        return list(off)
    switched = {(s, r) for s, r, _ in off}
    kept = [(s, r) for s, r in on if (k := catalogue.get(r, s)) is not None and k.read_by_ge]
    kept += [rule for rule in ignored_by_ge(text, catalogue) if rule not in switched]
    return [*off, *((s, r, "on") for s, r in dict.fromkeys(kept) if (s, r) not in switched)]


JSON_NOTE = (
    "{path} was in the old line format, which GE's pass executor does not read (it reads the "
    "switches of {rules} from JSON only, FusionUtils::ParseFusionSwitch): it is now JSON, with "
    "the same switches (FE reads both formats)"
)


def json_note(path, text: str, changes: Sequence[Change], catalogue: Catalogue) -> str:
    """What to say when :func:`switched_text` rewrites ``text`` as JSON ('' when it does not):
    :data:`JSON_NOTE`, and the lines GE now obeys (:func:`now_obeyed_by_ge`)."""
    rules = ge_needs_json(text, changes, catalogue)
    if not rules:
        return ""
    note = JSON_NOTE.format(path=path, rules=", ".join(rules))
    now_read = now_obeyed_by_ge(text, changes, catalogue)
    if now_read:
        note += (
            f"; GE now switches {', '.join(now_read)} off too, as the file says, which it "
            "ignored in the line format"
        )
    return note


def now_obeyed_by_ge(text: str, changes: Sequence[Change], catalogue: Catalogue) -> list[str]:
    """The "off" lines of ``text`` GE ignored and obeys once ``changes`` rewrite it as JSON:
    :func:`ignored_by_ge` beyond ``changes``, and ``ALL`` (FE read it; GE did not)."""
    if not ge_needs_json(text, changes, catalogue):
        return []
    switched = {(s, r) for s, r, _ in changes}
    now_read = [r for s, r in ignored_by_ge(text, catalogue) if (s, r) not in switched]
    return now_read + (["ALL"] if sections_all_off(text) else [])


def kept_on_by_cann(catalogue: Catalogue) -> list[tuple[str, str]]:
    """(section, rule) that CANN's own fusion configuration switches on by name: FE reads a
    name before ``ALL`` and adds its built-in entries after the user's, so ``"ALL": "off"``
    leaves them on (a review: `off --all` said "all fusion off")."""
    return [
        (section, rule.name)
        for section in SECTIONS
        for rule in catalogue.rules.get(section, {}).values()
        if rule.default == "on" and not rule.cannot_switch_off and not rule.o1_exceptional
    ]


def sections_all_off(text: str) -> list[str]:
    """The sections whose ``"ALL"`` is ``"off"`` in ``text`` (``ALL`` for the line format)."""
    from ..cfg import parse
    from ..cfg.tree import ObjectNode, StringNode, top_level_member

    doc = parse(text)
    if doc.format == "lines":
        return ["ALL"] if any(e.name == "ALL" and e.value == "off" for e in doc.entries) else []
    if not isinstance(doc.root, ObjectNode):
        return []
    switch = top_level_member(doc.root, "Switch")
    if switch is None or not isinstance(switch.value, ObjectNode):
        return []
    found = []
    for section in switch.value.members:
        if section.key in SECTIONS and isinstance(section.value, ObjectNode):
            for member in section.value.members:
                value = member.value
                if member.key == "ALL" and isinstance(value, StringNode) and value.value == "off":
                    found.append(section.key)
                    break
    return found


def all_off(text: str) -> str:
    """Both sections `"ALL": "off"` (Priority and ExceptionalPassOfO1Level kept)."""
    from ..cfg import all_off_text, parse

    return all_off_text(parse(text))


def errors(text: str, catalogue: Catalogue) -> list[str]:
    """Error-severity findings of `check` for `text`, as `line:col: code: message`."""
    from ..cfg import analyse
    from ..cfg.model import Context

    out = []
    for f in analyse(text, Context(catalogue=catalogue)).findings:
        if f.severity == "error":
            line = text.count("\n", 0, f.span.start) + 1
            col = f.span.start - (text.rfind("\n", 0, f.span.start) + 1) + 1
            out.append(f"{line}:{col}: {f.code}: {f.message}")
    return out
