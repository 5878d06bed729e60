"""Structure check: validate the tree against schemas/fusion_switch.schema.json with jsonschema and
map each error back to the precise key or value.

python-jsonschema needs about 30 ms for a 5,000-entry section, too slow for every keystroke. Every
rule key of a section has the same value schema (named rules and `additionalProperties` both say
`enum: ["on", "off"]`), so the validated instance is *compacted*: all entries of a rule map that
share a value are represented by one synthetic key. An error on that key is then reported on every
entry with that value. The instance stays tiny whatever the file size. jsonschema is imported
only for an instance that `conforms.conforms` finds invalid (it is slow to import).
"""

from __future__ import annotations

import difflib
import json

from .conforms import conforms
from .docs import PRIORITY_RANGES
from .model import Finding, Span
from .syntax import shorten
from .tree import ArrayNode, Member, Node, ObjectNode, StringNode, top_level_key

# path -> [(member or None, value node)]: where an instance path lives in the document
Where = dict[tuple, list[tuple[Member | None, Node]]]


def _is_rule_map(path: tuple) -> bool:
    return (len(path) == 2 and path[0] == "Switch") or (len(path) == 3 and path[0] == "Priority")


def _scalar(node: Node):
    if isinstance(node, StringNode):
        return node.value
    kind = node.kind
    if kind == "true":
        return True
    if kind == "false":
        return False
    if kind == "null":
        return None
    try:
        return json.loads(node.text)  # number
    except ValueError:
        return 0


def compact(root: Node, where: Where) -> object:
    """The instance jsonschema validates (see module doc); fills `where`."""
    where[()] = [(None, root)]
    return _compact(root, (), where)


_SKIP = object()


def _compact(node: Node | None, path: tuple, where: Where) -> object:
    if node is None or node.kind == "invalid":
        return _SKIP
    if isinstance(node, ObjectNode):
        out: dict = {}
        if _is_rule_map(path):
            groups: dict = {}
            for m in node.members:
                v = m.value
                if v is None or v.kind == "invalid":
                    continue
                sig = v.value if v.kind == "string" else id(v)
                group = groups.get(sig)
                if group is None:
                    groups[sig] = group = []
                group.append(m)
            for i, group in enumerate(groups.values()):
                key = f"\x00{i}"
                sub = (*path, key)
                where[sub] = [(m, m.value) for m in group]
                value = _compact(group[0].value, sub, where)
                if value is not _SKIP:
                    out[key] = value
            return out
        effective: dict[str, Member] = {}
        for m in node.members:
            key = top_level_key(m.key) if not path else m.key
            # a top-level key with blanks stands for its name only when no key is exactly it
            if key not in effective or key == m.key or effective[key].key != key:
                effective[key] = m
            where.setdefault((*path, key), []).append((m, m.value))
        for key, m in effective.items():
            value = _compact(m.value, (*path, key), where)
            if value is not _SKIP:
                out[key] = value
        return out
    if isinstance(node, ArrayNode):
        items = []
        for i, item in enumerate(node.items):
            where[(*path, i)] = [(None, item)]
            value = _compact(item, (*path, i), where)
            items.append(value if value is not _SKIP else None)
        return items
    return _scalar(node)


def structure_findings(root: Node) -> list[Finding]:
    where: Where = {}
    instance = compact(root, where)
    findings: list[Finding] = []
    if isinstance(root, ObjectNode):
        spaced = [m for m in root.members if top_level_key(m.key) != m.key]
        exact = {m.key for m in root.members}
        findings += [_spaced_top_level_key(m, m.key.strip() in exact) for m in spaced]
    if conforms(instance):  # the usual case: no need to import jsonschema
        return findings
    from .schema import validator

    for error in validator().iter_errors(instance):
        path = tuple(error.absolute_path)
        keyword = error.validator
        if keyword == "additionalProperties":
            allowed = error.schema.get("properties", {})
            extra = [k for k in error.instance if k not in allowed]
            for key in extra:
                for member, _ in where.get((*path, key), []):
                    if member is not None:
                        findings.append(_unknown_key(path, member, list(allowed)))
            continue
        entries = where.get(path) or []
        # a value error concerns the effective (last) occurrence of an object key
        targets = entries if _is_rule_map(path[:-1]) else entries[-1:]
        for member, node in targets:
            findings.append(_bad_value(path, member, node, keyword))
    return findings


def _unknown_key(path: tuple, member: Member, allowed: list[str]) -> Finding:
    key = member.key
    suggestions = _close(key, allowed)
    hint = f" Did you mean {' or '.join(repr(s) for s in suggestions)}?" if suggestions else ""
    data = {"key": key, "suggestions": suggestions, "path": list(path)}
    span = member.key_span
    if not path:
        return Finding(
            "unknown-top-level-key",
            "error",
            span,
            f"Unknown top-level key {shorten(key)!r}: CANN accepts only Switch, Priority and "
            f'ExceptionalPassOfO1Level ("first level key … should be Switch or Priority") and '
            f"rejects the whole file.{hint}",
            data,
        )
    if len(path) == 1:
        return Finding(
            "unknown-section",
            "error",
            span,
            f"Unknown section {shorten(key)!r} under {path[0]}: CANN accepts only GraphFusion and "
            f"UBFusion and rejects the whole file.{hint}",
            data,
        )
    return Finding(
        "invalid-priority",
        "error",
        span,
        f"Unknown priority stage {shorten(key)!r} under Priority.{path[1]}: use Top, Main or Down; "
        f"CANN rejects the file.{hint}",
        data,
    )


def _spaced_top_level_key(member: Member, exact_too: bool) -> Finding:
    """CANN's check trims a top-level key in place and looks the trimmed key up: with no key
    of exactly that name the lookup finds nothing and the file is rejected; with one, that
    one is read and this one is ignored."""
    key, trimmed = member.key, member.key.strip()
    if exact_too:
        return Finding(
            "unknown-top-level-key",
            "warning",
            member.key_span,
            f'Top-level key "{key}" has surrounding spaces: CANN reads the "{trimmed}" written '
            "without them and ignores this one. Merge it into that one.",
            {"key": key, "path": []},  # no rename: it would replace the one CANN reads
        )
    return Finding(
        "unknown-top-level-key",
        "error",
        member.key_span,
        f'Top-level key "{key}" has surrounding spaces: CANN\'s check trims it, then finds no '
        f'"{trimmed}" in the file and rejects the whole file. Write it without spaces.',
        {"key": key, "suggestions": [trimmed], "path": []},
    )


def _close(key: str, allowed: list[str]) -> list[str]:
    lower = {a.lower(): a for a in allowed}
    if key.strip().lower() in lower:
        return [lower[key.strip().lower()]]
    return difflib.get_close_matches(key, allowed, n=2, cutoff=0.6)


def _describe(node: Node) -> str:
    if isinstance(node, StringNode):
        return f'the string "{shorten(node.value)}"'
    if isinstance(node, ObjectNode):
        return "an object"
    if isinstance(node, ArrayNode):
        return "an array"
    return f"{node.kind} {getattr(node, 'text', '')}".strip()


def _bad_value(path: tuple, member: Member | None, node: Node, keyword: str) -> Finding:
    span = Span(node.start, node.end)
    found = _describe(node)
    if not path:
        return Finding(
            "unknown-top-level-key",
            "error",
            span,
            f'The top level must be an object such as {{"Switch": {{...}}}}, found {found}: '
            "CANN rejects the whole file.",
            {"path": []},
        )
    head = path[0]
    name = member.key if member is not None else str(path[-1])
    if head == "Switch":
        if len(path) > 2:
            return invalid_switch_value(node, name, path[1])
        what = (
            "Switch must be an object of sections (GraphFusion, UBFusion)"
            if len(path) == 1
            else f"{shorten(name)} must be an object of rule switches"
        )
        return Finding(
            "unknown-section",
            "error",
            span,
            f"{what}, found {found}. CANN rejects the whole file.",
            {"path": list(path)},
        )
    if head == "Priority":
        if len(path) == 1:
            return Finding(
                "unknown-section",
                "error",
                span,
                f"Priority must be an object of sections (GraphFusion, UBFusion), found "
                f"{found}. CANN rejects the whole file.",
                {"path": list(path)},
            )
        if len(path) in (2, 3):
            what = "stages (Top, Main, Down)" if len(path) == 2 else "rule priorities"
            return Finding(
                "invalid-priority",
                "error",
                span,
                f"{'.'.join(str(p) for p in path)} must be an object of {what}, found "
                f"{found}. CANN rejects the file.",
                {"path": list(path)},
            )
        low, high = PRIORITY_RANGES.get(str(path[2]), (0, 3000))
        return Finding(
            "invalid-priority",
            "error",
            span,
            f"Priority of {shorten(name)!r} in {path[2]} must be an integer string in "
            f"[{low}, {high}), found {found}. CANN rejects the file.",
            {"path": [*map(str, path[:3]), name], "range": [low, high]},
        )
    if head == "ExceptionalPassOfO1Level":
        what = "an array of pass names" if len(path) == 1 else "a pass name string"
        return Finding(
            "unknown-section",
            "error",
            span,
            f"ExceptionalPassOfO1Level must be {what}, found {found}. CANN rejects the whole file.",
            {"path": list(path)},
        )
    return Finding("json-syntax", "error", span, f"Unexpected value {found}.", {})


C_SPACE = " \t\n\v\f\r"  # what C's isspace trims (FE's Trim); str.strip() trims more


def switch_value(node: Node | None) -> str | None:
    """What CANN reads from a switch value: "on" or "off", else None (a value it rejects).
    Its check trims the string, but the rule is switched on only by exactly "on"
    (ModifyFusionSwitchMap compares the value as written): " on " is off."""
    if type(node) is not StringNode:
        return None
    value = node.value
    if value == "on" or value == "off":
        return value
    return "off" if value.strip(C_SPACE) in ("on", "off") else None


def invalid_switch_value(node: Node, name: str, section: str | None) -> Finding:
    """A switch value that is not exactly "on" / "off" (shared with the line format)."""
    span = Span(node.start, node.end)
    name = shorten(name, 1000)  # data and messages stay small whatever the file holds
    if isinstance(node, StringNode):
        full = node.value
        stripped = full.strip(C_SPACE)
        raw = shorten(full)
        if stripped in ("on", "off"):
            return Finding(
                "invalid-switch-value",
                "warning",
                span,
                f'Value "{raw}" has surrounding spaces: CANN accepts the file but switches a '
                'rule on only for exactly "on", so this one is OFF. Write '
                f'"{stripped}" without spaces.',
                {"value": full, "suggested": stripped, "name": name, "section": section},
            )
        lower = full.strip().lower()
        suggested = lower if lower in ("on", "off") else None
        data = {"value": shorten(full, 1000), "name": name, "section": section}
        if suggested:
            data["suggested"] = suggested
        hint = f' Write "{suggested}".' if suggested else ""
        return Finding(
            "invalid-switch-value",
            "error",
            span,
            f'Invalid switch value "{raw}" for {shorten(name)}: must be "on" or "off" (lower '
            f'case); CANN rejects the whole file ("Illegal switch value").{hint}',
            data,
        )
    return Finding(
        "invalid-switch-value",
        "error",
        span,
        f'Invalid switch value {_describe(node)} for {name}: must be the string "on" or "off"; '
        "CANN fails to read it and rejects the whole file.",
        {"value": None, "name": name, "section": section},
    )
