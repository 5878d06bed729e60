"""Which rules a comparison proved guilty, read from its summary.json (pure).

Newer summaries carry per-rule verdicts: `rules: [{"rule", "section", "verdict", "ops"}]` with
verdict `introduces` (the replay shows this fusion creates the error: proven), `propagates`
(the error comes from upstream: innocent) or `unverified`. Older ones only have heuristic
`suspects` (a `verdict` field there is honoured when present). Only `introduces` is proven;
`heuristic` and `undecided` are suspected, applied only when asked for, labelled; a rule the
replay merely could not check (`unverified`, which no row blames) is not blamed at all: the
editor's "include unverified" takes the same rules (a review found the two apart).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

SECTIONS = ("GraphFusion", "UBFusion")
PROVEN = "introduces"
INNOCENT = ("propagates", "harmless", "clean")  # the replay showed these right
UNBLAMED = "unverified"  # the replay could not check its ops and nothing else blames it


@dataclass(frozen=True)
class RuleVerdict:
    section: str
    rule: str
    verdict: str  # introduces | unverified | heuristic
    ops: tuple[str, ...]
    section_note: str = ""  # said when the section is assumed (see assumed_section)

    @property
    def proven(self) -> bool:
        return self.verdict == PROVEN

    @property
    def label(self) -> str:
        if self.proven:
            return "proven by replay"
        if self.verdict == "heuristic":
            return "unverified: heuristic suspect"
        if self.verdict == "unverified":
            return "unverified"
        return f"unverified ({self.verdict})"


def assumed_section(entry: dict) -> str:
    """Words saying a rule's section is a guess, or "" (a review: a UB pass named only in
    pass_name, unknown to the catalogue, was put under GraphFusion without a word)."""
    if not str(entry.get("section_source", "")).startswith("assumed"):
        return ""
    return (
        f"the section is assumed: the graph names {entry.get('rule')} without its section and "
        "neither the run's fusion_result.json nor the catalogue knows it"
    )


class SummaryError(Exception):
    pass


def load_summary(results: str | Path) -> tuple[Path, dict]:
    """RESULTS is a compare output folder or its summary.json."""
    path = Path(results)
    if path.is_dir():
        path = path / "summary.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SummaryError(
            f"{path}: no such file (give a 'fusion-switch compare' output folder or its "
            "summary.json)"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SummaryError(f"{path}: cannot read: {exc}") from None
    except ValueError as exc:
        raise SummaryError(f"{path}: not valid JSON ({exc})") from None
    except RecursionError:  # arrays or objects nested thousands deep: not a summary
        raise SummaryError(f"{path}: not valid JSON (nested too deep to read)") from None
    if not isinstance(data, dict) or not ("rules" in data or "suspects" in data):
        raise SummaryError(
            f"{path}: not a fusion-switch comparison summary (no 'rules' or 'suspects')"
        )
    return path, data


def rule_verdicts(summary: dict) -> list[RuleVerdict]:
    """Every rule the summary blames, proven ones first, innocent ones left out."""
    out: list[RuleVerdict] = []
    seen: set[tuple[str, str]] = set()
    rules = summary.get("rules")
    entries = rules if isinstance(rules, list) else []
    fallback = not entries
    if fallback:
        entries = summary.get("suspects") or []
    behind = {  # a guess's ops as the summary lists them: those the rows blame
        (u.get("section"), u.get("rule")): u.get("ops")
        for u in summary.get("unverified_rules") or []
        if isinstance(u, dict) and u.get("verdict") == "heuristic"
    }
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        rule, section = entry.get("rule"), entry.get("section")
        if not isinstance(rule, str) or section not in SECTIONS:
            continue
        verdict = entry.get("verdict")
        if verdict in INNOCENT or verdict == UNBLAMED:
            continue
        if not isinstance(verdict, str) or not verdict:
            verdict = "heuristic" if fallback else "unverified"
        if (section, rule) in seen:
            continue
        seen.add((section, rule))
        ops = _op_names(
            behind.get((section, rule), entry.get("ops")), OP_VERDICT.get(verdict, verdict)
        )
        out.append(RuleVerdict(section, rule, verdict, ops, assumed_section(entry)))
    out.sort(key=lambda v: not v.proven)
    return out


OP_VERDICT = {"heuristic": "unverified"}  # a heuristic guess stands on ops not replayed


def _op_names(ops: object, verdict: str) -> tuple[str, ...]:
    """A rule's ops behind its ``verdict``, as compare writes them (objects with an "op" and
    their own "verdict") or as names (a review: every op of a proven rule was listed as
    proven)."""
    if not isinstance(ops, list):
        return ()
    names = []
    for op in ops:
        if isinstance(op, dict):
            if op.get("verdict", verdict) != verdict:
                continue
            op = op.get("op")
        if isinstance(op, str):
            names.append(op)
    return tuple(names)
