"""What a comparison's summary means for one fusion_switch.cfg: diagnostics, fixes, lenses,
inlay hints and hover evidence, all as plain values in offsets (no protocol; `lsp/` converts).

Input is the summary written by `fusion-switch compare` (see diagnose/summary.py): `suspects`
[{rule, section, ops, original_ops, evidence: [{op, type, inputs, outputs}], score}] and
`harmless_rules` [{rule, section, ops}]. A suspect is annotated unless its rule is already
explicitly "off" in its section (then there is nothing left to do); when the rule is not in the
file, the annotation sits on the section key, else on `Switch`, else on the first character.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..catalogue.rules import CANNOT_SWITCH_OFF
from ..cfg.edits import is_rule_name, set_switches
from ..cfg.model import Edit, Finding, Fix, Span
from ..cfg.tree import CfgDocument, ObjectNode, StringNode
from ..diagnose.exit_status import exit_status, not_proven_clean
from ..diagnose.thresholds import side_kept
from .verdicts import assumed_section

SUSPECT_CODE = "fusion-suspect"
UNVERIFIED_CODE = "fusion-unverified"
NOT_PROVEN = ("heuristic", "undecided")  # suspected but not proven by the replay
HARMLESS_CODE = "fusion-harmless-off"
SECTIONS = ("GraphFusion", "UBFusion")
EVIDENCE_KEPT = 12  # fused ops of evidence kept per rule in the saved results
METRICS = (
    ("CosineSimilarity", "cosine"),
    ("RelativeEuclideanDistance", "RED"),
    ("KullbackLeiblerDivergence", "KL"),
    ("RootMeanSquareError", "RMSE"),
    ("MeanRelativeError", "MRE"),
)


@dataclass(frozen=True)
class Entry:
    """Where a rule's switch is in the file: its key, its value ("on"/"off"/other), its end."""

    key: Span
    value: str | None
    end: int


@dataclass
class Lens:
    span: Span
    title: str
    command: str
    arguments: dict = field(default_factory=dict)


@dataclass
class Hint:
    offset: int
    label: str
    tooltip: str


# ------------------------------------------------------------------------- the summary


def compact_summary(summary: dict) -> dict:
    """What is kept next to the configuration: everything but the per-op table, with at most
    `EVIDENCE_KEPT` fused ops of evidence per suspect (a 5,000-op model stays small)."""
    out = {k: v for k, v in summary.items() if k not in ("ops", "fused_ops")}
    # the fused ops the verdict rests on, briefly: the exit status reads the unverified ones
    # (a review: without them the editor called "clean" a run the command exited 3 for)
    out["fused_ops"] = [
        {"op": r.get("op"), "verdict": r.get("verdict"), "rules": r.get("rules")}
        for r in summary.get("fused_ops") or []
        if isinstance(r, dict) and r.get("verdict") not in ("clean", "propagates")
    ][:EVIDENCE_KEPT]
    for key in ("rules", "unverified_rules"):  # one entry per rule, its ops cut short
        if isinstance(out.get(key), list):
            out[key] = [
                {**r, "ops": list(r.get("ops") or [])[:EVIDENCE_KEPT]} if isinstance(r, dict) else r
                for r in out[key]
            ]
    out["suspects"] = [  # every suspect, proven or a labelled guess (a review: the guesses
        # of a run without the replay were dropped here, so the editor never showed them)
        {**s, "evidence": list(s.get("evidence") or [])[:EVIDENCE_KEPT]}
        for s in summary.get("suspects") or []
        if isinstance(s, dict) and isinstance(s.get("rule"), str)
    ]
    return out


def suspects(summary: dict) -> list[dict]:
    """Rules proven to introduce error (``verdict`` "introduces")."""
    return [
        s
        for s in summary.get("suspects") or []
        if isinstance(s, dict)
        and is_rule_name(s.get("rule"))
        and _verdict(s, summary) == "introduces"
    ]


def _verdict(entry: dict, summary: dict) -> str | None:
    """``entry``'s verdict. Summaries written before the replay existed list only suspects,
    without one: the rows' guesses, ``heuristic``, as :func:`.verdicts.rule_verdicts` reads
    them (a review: the editor took them for proofs and switched them off)."""
    verdict = entry.get("verdict")
    if isinstance(verdict, str) and verdict:
        return verdict
    return "heuristic" if not isinstance(summary.get("rules"), list) else None


def unverified(summary: dict) -> list[dict]:
    """Rules suspected but not proven: the replay could not verify their ops and the row
    heuristic blames them, or localisation could not split them from another pass; and the
    row heuristic's suspects of a run whose replay did not run (``--no-replay``, the memory
    budget), which it lists only among its suspects (a review: the editor dropped them)."""
    found = [
        u
        for u in [*(summary.get("unverified_rules") or []), *(summary.get("suspects") or [])]
        if isinstance(u, dict)
        and is_rule_name(u.get("rule"))
        and _verdict(u, summary) in NOT_PROVEN
    ]
    first: dict[tuple, dict] = {}
    for u in found:
        first.setdefault((u.get("section"), u["rule"]), u)
    return list(first.values())


def unverified_message(u: dict) -> str:
    reasons = [r for r in u.get("reasons") or [] if isinstance(r, str)]
    ops = ", ".join((u.get("ops") or [])[:3]) or "its fused ops"
    kind = (
        "undecided: the replay shows its fused op introduces error, but cannot tell this rule "
        "from another pass of the same op; bisect (switch one off and re-run) to split them"
        if u.get("verdict") == "undecided"
        else "unverified: a heuristic guess, not proven by replay"
    )
    because = f" ({reasons[0]})" if reasons else ""
    return (
        f"{u['rule']} ({u.get('section')}) at {ops}: {kind}{because}.{_assumed_note(u)}"
        f"{_forbidden_note(u)}"
    )


def _forbidden_note(entry: dict) -> str:
    return f" It {CANNOT_SWITCH_OFF}." if entry.get("cannot_switch_off") else ""


def _assumed_note(entry: dict) -> str:
    said = assumed_section(entry)  # (str.capitalize lowered the rule's name too)
    return f" ({said[:1].upper()}{said[1:]}.)" if said else ""


def harmless(summary: dict) -> list[dict]:
    return [
        h
        for h in summary.get("harmless_rules") or []
        if isinstance(h, dict) and isinstance(h.get("rule"), str)
    ]


def brief(summary: dict) -> dict:
    """The small answer of the compare command."""
    return {
        "verdict": summary.get("verdict", ""),
        "suspects": [
            {"rule": s["rule"], "section": s.get("section"), "ops": list(s.get("ops") or [])}
            for s in suspects(summary)
        ],
        "report": summary.get("report"),
        "csv": summary.get("csv"),
        "counts": {
            k: v for k, v in (summary.get("counts") or {}).items() if not isinstance(v, dict)
        },
        "soc_version": summary.get("soc_version"),
    }


def alarming(summary: dict) -> bool:
    """Anything but a clean run (`compare`'s exit status other than 0): shown as a warning."""
    return exit_status(summary) != 0


def incomplete(summary: dict) -> bool:
    """The verdict lacks evidence it needs: a dump that cannot be read, the replay left out
    by the memory budget, a fused op not verified where the outputs diverge (`compare` exits
    3 with no suspect: never "clean")."""
    return not_proven_clean(summary)


def verdict_message(summary: dict) -> str:
    found = suspects(summary)
    no_rule = [f for f in summary.get("fused_ops_without_rule") or [] if isinstance(f, dict)]
    if not found and no_rule:  # the verdict names the op and how to name its rule
        return f"fusion-switch: comparison done: {summary.get('verdict', '')}."
    unwritable = [  # proven, but no switch can hold the name: said, no quick fix (a review)
        str(s.get("rule"))
        for s in summary.get("suspects") or []
        if isinstance(s, dict) and _verdict(s, summary) == "introduces" and s not in found
    ]
    if not found and unwritable:
        return (
            f"fusion-switch: comparison done: {summary.get('verdict', '')}. The rule name "
            f"{unwritable[0]!r} cannot be written as a switch in fusion_switch.cfg (a space, "
            "a colon, a quote or a line break in it): check it in the summary."
        )
    if not found and incomplete(summary):
        return f"fusion-switch: comparison done, not proven clean: {summary.get('verdict', '')}"
    if not found:
        verdict = summary.get("verdict", "")
        guessed = unverified(summary)
        if guessed:
            names = ", ".join(f"{u['rule']} ({u.get('verdict')})" for u in guessed[:3])
            return (
                f"fusion-switch: comparison done, no rule proven; suspected but not proven: "
                f"{names} ({verdict})."
            )
        return f"fusion-switch: comparison done, no fusion rule is suspect ({verdict})."
    top = found[0]
    if top.get("cannot_switch_off"):
        return f"fusion-switch: {summary.get('verdict', '')}."
    names = ", ".join(f"{s['rule']} ({s.get('section')})" for s in found[:3])
    more = f" and {len(found) - 3} more" if len(found) > 3 else ""
    return (
        f"fusion-switch: {len(found)} suspected fusion rule{'s' if len(found) != 1 else ''}: "
        f"{names}{more}. Most likely {top['rule']} at {', '.join(top.get('ops') or [])[:80]}. "
        "Run 'Turn Suspected Rules Off' (fusionSwitch.applySuspects) to switch them off."
    )


def suspect_changes(
    summary: dict, rules: Iterable[str] | None = None, include_unverified: bool = False
) -> list[tuple[str, str, str]]:
    """(section, rule, "off") for the proven suspects (all, or only those named in `rules`);
    with `include_unverified`, also the rules suspected but not proven (labelled elsewhere)."""
    wanted = set(rules) if rules is not None else None
    out: list[tuple[str, str, str]] = []
    candidates = suspects(summary) + (unverified(summary) if include_unverified else [])
    for s in candidates:
        section = s.get("section")
        if s.get("cannot_switch_off"):  # CANN ignores "off" for it
            continue
        if section in SECTIONS and (wanted is None or s["rule"] in wanted):
            change = (section, s["rule"], "off")
            if change not in out:
                out.append(change)
    return out


# ------------------------------------------------------------------------- metrics


INFINITE = 1e308  # summary.json writes ±infinity as ±1.7976931348623157e308 (strict JSON)


def _num(value: Any) -> float | None:
    """A metric from the summary: a float, ±inf for the stand-in of infinity, None for NaN
    (written as null) and for anything that is not a number."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value):
        return None
    value = float(value)
    if abs(value) >= INFINITE:
        return math.copysign(math.inf, value)
    return value


def _fmt(value: float | None, digits: int = 4) -> str:
    """A metric for people: "–" when missing or NaN, "inf"/"-inf" when infinite."""
    if value is None:
        return "–"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0 or 1e-3 <= abs(value) < 1e4:
        return f"{value:.{digits}f}"
    return f"{value:.2e}"


def cosine_text(cosine: float, summary: dict) -> str:
    """A cosine in two decimals, or as many as keep it below the run's cosine limit where it
    is below (a review: a failing 0.9896 read "cosine 0.99" beside a limit of 0.99)."""
    limit = ((summary.get("thresholds") or {}).get("CosineSimilarity") or {}).get("limit")
    if not isinstance(limit, (int, float)) or not math.isfinite(cosine) or cosine >= limit:
        return _fmt(cosine, 2)
    return side_kept(cosine, limit, (_fmt(cosine, digits) for digits in range(2, 13)))


def worst_cosine(suspect: dict) -> float | None:
    values = [
        _num(t.get("metrics", {}).get("CosineSimilarity"))
        for ev in suspect.get("evidence") or []
        for t in ev.get("outputs") or []
    ]
    values = [v for v in values if v is not None]
    return min(values) if values else None


def _metrics_text(tensors: Sequence[dict]) -> str:
    """`cosine 0.8705, RED 0.5017` for the worst tensor of the list."""
    parts = []
    for name, short in METRICS[:2]:
        values = [_num((t.get("metrics") or {}).get(name)) for t in tensors]
        values = [v for v in values if v is not None]
        if values:
            worst = min(values) if name == "CosineSimilarity" else max(values)
            parts.append(f"{short} {_fmt(worst)}")
    return ", ".join(parts) or "no metrics"


def suspect_message(s: dict) -> str:
    evidence = list(s.get("evidence") or [])
    ops = list(s.get("ops") or [])
    head = f"{s['rule']} ({s.get('section')}) is suspected by the last comparison"
    if not evidence:
        return f"{head}: fused op {', '.join(ops[:3]) or '?'} diverges. Switch it off to confirm."
    first = evidence[0]
    originals = ", ".join(first.get("original_ops") or [])
    crossed = [c for t in first.get("outputs") or [] for c in t.get("crossed") or []]
    inputs = first.get("inputs") or []
    more = f" (and {len(ops) - 1} more fused ops)" if len(ops) > 1 else ""
    return (
        f"{head}: fused op {first.get('op')} ({first.get('type', '?')}"
        + (f", from {originals}" if originals else "")
        + f"){more}: inputs {_metrics_text(inputs) if inputs else 'not compared'}, "
        f"outputs {_metrics_text(first.get('outputs') or [])}; threshold crossed: "
        + ("; ".join(crossed[:3]) or "outputs out of band")
        + ". Switch it off to confirm."
    )


# ------------------------------------------------------------------------- the document


def _text(node) -> str | None:
    return node.value.strip() if isinstance(node, StringNode) else None


def _switch(doc: CfgDocument) -> tuple[ObjectNode | None, Any]:
    root = doc.root if doc.format == "json" else None
    if not isinstance(root, ObjectNode):
        return None, None
    member = root.get("Switch")
    value = member.value if member else None
    return (value if isinstance(value, ObjectNode) else None), member


def locate(doc: CfgDocument, section: str, rule: str) -> Entry | None:
    """The rule's switch in `section` (the line format has no sections: any line counts)."""
    if doc.format == "lines":
        for entry in reversed(doc.entries):
            if entry.name == rule:
                return Entry(entry.name_span, entry.value.strip(), entry.value_end)
        return None
    switch, _ = _switch(doc)
    section_node = switch.object(section) if switch is not None else None
    member = section_node.get(rule) if section_node is not None else None
    if member is None:
        return None
    return Entry(member.key_span, _text(member.value), member.end)


def anchor(doc: CfgDocument, section: str) -> Span:
    """Where to report a rule that is not in the file: section key, `Switch`, first character."""
    switch, switch_member = _switch(doc)
    if switch is not None:
        member = switch.get(section)
        if member is not None:
            return member.key_span
    if switch_member is not None:
        return switch_member.key_span
    return Span(0, min(1, len(doc.text)))


def findings(doc: CfgDocument, summary: dict | None) -> list[Finding]:
    """`fusion-suspect` warnings and `fusion-harmless-off` information for this document."""
    if not summary:
        return []
    out: list[Finding] = []
    for s in suspects(summary):
        section = s.get("section")
        if section not in SECTIONS:
            continue
        entry = locate(doc, section, s["rule"])
        if entry is not None and entry.value == "off":
            continue
        data = {"rule": s["rule"], "section": section, "present": entry is not None}
        message = suspect_message(s)
        message += _assumed_note(s)
        if s.get("cannot_switch_off"):
            data["cannot_switch_off"] = True
            message = message.replace(" Switch it off to confirm.", "") + _forbidden_note(s)
        elif entry is None:
            message += f' It is not in this file: add "{s["rule"]}": "off" under {section}.'
        span = entry.key if entry is not None else anchor(doc, section)
        out.append(Finding(SUSPECT_CODE, "warning", span, message, data))
    for u in unverified(summary):
        section = u.get("section")
        if section not in SECTIONS:
            continue
        entry = locate(doc, section, u["rule"])
        if entry is not None and entry.value == "off":
            continue
        span = entry.key if entry is not None else anchor(doc, section)
        data = {"rule": u["rule"], "section": section, "verdict": u.get("verdict")}
        if u.get("cannot_switch_off"):
            data["cannot_switch_off"] = True
        out.append(Finding(UNVERIFIED_CODE, "information", span, unverified_message(u), data))
    for h in harmless(summary):
        section = h.get("section")
        entry = locate(doc, section, h["rule"]) if section in SECTIONS else None
        if entry is None or entry.value != "off":
            continue
        ops = h.get("ops")
        count = f"{ops} fused op{'s' if ops != 1 else ''}" if isinstance(ops, int) else "its ops"
        out.append(
            Finding(
                HARMLESS_CODE,
                "information",
                entry.key,
                f"{h['rule']} could be switched back on: in the last comparison {count} built by "
                "it agreed with fusion off.",
                {"rule": h["rule"], "section": section},
            )
        )
    return out


def fixes(doc: CfgDocument, found: Sequence[Finding]) -> list[Fix]:
    """Quick fixes for our findings, from their data alone (set_switches keeps the layout)."""
    out: list[Fix] = []
    for f in found:
        data = f.data or {}
        rule, section = data.get("rule"), data.get("section")
        if f.code not in (SUSPECT_CODE, HARMLESS_CODE, UNVERIFIED_CODE):
            continue
        if not isinstance(rule, str) or section not in SECTIONS or data.get("cannot_switch_off"):
            continue
        value, title = (
            ("off", f"Turn {rule} off (proven by replay in the last comparison)")
            if f.code == SUSPECT_CODE
            else ("off", f"Turn {rule} off anyway (not proven by replay)")
            if f.code == UNVERIFIED_CODE
            else ("on", f"Switch {rule} back on (harmless in the last comparison)")
        )
        edits: list[Edit] = set_switches(doc, [(section, rule, value)])
        if edits:
            out.append(Fix(title, edits, "quickfix", [f.code], preferred=f.code == SUSPECT_CODE))
    return out


def evidence_markdown(summary: dict | None) -> dict[str, str]:
    """Rule name → markdown added to its hover: the per-tensor evidence table."""
    if not summary:
        return {}
    out: dict[str, str] = {}
    for s in suspects(summary):
        rows = ["| fused op | tensor | cosine | RED | threshold crossed |", "|---|---|---|---|---|"]
        for ev in (s.get("evidence") or [])[:6]:
            for kind in ("inputs", "outputs"):
                for t in ev.get(kind) or []:
                    m = t.get("metrics") or {}
                    index = str(t.get("tensor", "")).rsplit(":", 1)[-1]
                    rows.append(
                        f"| {ev.get('op')} | {kind[:-1]} {index} "
                        f"| {_fmt(_num(m.get('CosineSimilarity')))} "
                        f"| {_fmt(_num(m.get('RelativeEuclideanDistance')))} "
                        f"| {'; '.join(t.get('crossed') or []) or '–'} |"
                    )
        ops = list(s.get("ops") or [])
        out[s["rule"]] = (
            _replay_markdown(s) + f"**Last comparison: suspected** ({s.get('section')}, score "
            f"{_fmt(_num(s.get('score')))}; "
            + ("1 fused op diverges" if len(ops) == 1 else f"{len(ops)} fused ops diverge")
            + ")\n\n"
            + "\n".join(rows)
        )
    for u in unverified(summary):
        text = f"**Last comparison: {u.get('verdict')}** (not proven): {unverified_message(u)}"
        out.setdefault(u["rule"], text)
    for h in harmless(summary):
        out.setdefault(
            h["rule"],
            f"**Last comparison: harmless** ({h.get('section')}): the fused ops it built agree "
            "with fusion off.",
        )
    return out


def _replay_markdown(s: dict) -> str:
    """The replay's proof for a suspect: replay error against the tolerance, localisation."""
    lines = []
    for r in (s.get("replay") or [])[:3]:
        score, tol = _num(r.get("replay_score")), _num(r.get("tolerance"))
        observed = _num(r.get("observed_score"))
        lines.append(
            f"- {r.get('op')}: replay error {_fmt(score, 1)} x the dtype floor "
            f"(tolerance {_fmt(tol, 1)}; fusion on vs off {_fmt(observed, 1)})"
        )
        loc = r.get("localisation") or {}
        for item in (loc.get("explained_by") or [])[:1]:
            lines.append(f"  - localised: {item.get('original_op')} {item.get('variant')}")
    if not lines:
        return ""
    return "**Proven by replay** (introduces)\n\n" + "\n".join(lines) + "\n\n"


def lenses(doc: CfgDocument, summary: dict | None, cfg_uri: str) -> list[Lens]:
    """A summary lens at the top, and one per suspect still to switch off."""
    if not summary:
        return []
    found = suspects(summary)
    top = Span(0, 0)
    n = len(found)
    guessed = len(unverified(summary))
    not_proven = f" · {guessed} not proven" if guessed else ""
    out = [
        Lens(
            top,
            f"Last comparison: {n} suspect{'s' if n != 1 else ''}{not_proven} · Show report",
            "fusionSwitch.showReport",
            {"cfgUri": cfg_uri},
        ),
        Lens(top, "Compare again", "fusionSwitch.compare", {"cfgUri": cfg_uri}),
    ]
    for f in findings(doc, summary):
        if f.data.get("cannot_switch_off"):  # nothing to turn off: CANN ignores it
            continue
        if f.code == UNVERIFIED_CODE:
            out.append(
                Lens(
                    f.span,
                    f"{f.data.get('verdict')} (not proven) · Turn {f.data['rule']} off anyway",
                    "fusionSwitch.applySuspects",
                    {"cfgUri": cfg_uri, "rules": [f.data["rule"]], "includeUnverified": True},
                )
            )
            continue
        if f.code != SUSPECT_CODE:
            continue
        s = next(s for s in found if s["rule"] == f.data["rule"])
        ops = len(s.get("ops") or [])
        cosine = worst_cosine(s)
        title = ("1 fused op diverges" if ops == 1 else f"{ops} fused ops diverge") + (
            f" · worst cosine {cosine_text(cosine, summary)}" if cosine is not None else ""
        )
        out.append(
            Lens(
                f.span,
                f"{title} · Turn {s['rule']} off",
                "fusionSwitch.applySuspects",
                {"cfgUri": cfg_uri, "rules": [s["rule"]]},
            )
        )
    return out


def hints(doc: CfgDocument, summary: dict | None) -> list[Hint]:
    """After each suspected entry that is in the file: `suspect · cosine 0.87`."""
    if not summary:
        return []
    out = []
    for s in suspects(summary):
        section = s.get("section")
        entry = locate(doc, section, s["rule"]) if section in SECTIONS else None
        if entry is None or entry.value == "off":
            continue
        cosine = worst_cosine(s)
        label = " suspect" + (
            f" · cosine {cosine_text(cosine, summary)}" if cosine is not None else ""
        )
        out.append(Hint(entry.end, label, suspect_message(s)))
    return out
