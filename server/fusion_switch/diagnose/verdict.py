"""Verdicts per rule from the replay of its fused ops; the heuristic only as a labelled fallback.

Per fused op the replay says ``introduces`` / ``propagates`` / ``clean`` / ``unverified``; a
multi-pass op that introduces error is localised to one pass or left ``undecided``. Per rule:

- ``introduces``: at least one of its fused ops introduces error and the rule is the pass that
  did it (the only pass of the op, or the one localisation named);
- ``undecided``: its op introduces error but the evidence cannot split it from another pass of
  the same op (neither is proven; bisection splits them);
- ``heuristic``: the replay could not verify its ops and the old row-based heuristic blames it
  (a labelled guess, never acted on by default);
- ``unverified``: some of its ops could not be replayed (the reasons are listed), none blamed;
- ``propagates`` / ``clean``: every op replayed agrees with the replay.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .replay_decide import CLEAN, INTRODUCES, PROPAGATES, UNVERIFIED
from .replay_result import ReplayReport, ReplayResult

UNDECIDED, HEURISTIC = "undecided", "heuristic"
_RANK = {INTRODUCES: 0, UNDECIDED: 1, HEURISTIC: 2, UNVERIFIED: 3, PROPAGATES: 4, CLEAN: 5}


@dataclass
class RuleVerdict:
    rule: str
    section: str
    section_source: str
    verdict: str
    ops: list[dict] = field(default_factory=list)  # {op, verdict, replay_score, tolerance}
    reasons: list[str] = field(default_factory=list)
    rule_source: str = ""

    @property
    def proven(self) -> bool:
        return self.verdict == INTRODUCES

    def to_json(self) -> dict:
        return {
            "rule": self.rule,
            "section": self.section,
            "section_source": self.section_source,
            "verdict": self.verdict,
            "rule_source": self.rule_source,
            "ops": self.ops,
            "reasons": self.reasons[:5],
        }


def op_verdict_for_rule(result: ReplayResult, rule: str) -> str:
    """What one fused op says about one of its rules. Rules the graph does not name (inferred
    from fusion_result.json and the catalogue's patterns) are candidates, not the passes that
    built the op: the op is proven wrong, they stay undecided (a review: a pattern's rule that
    never built the op was "proven" and switched off)."""
    if result.verdict != INTRODUCES:
        return result.verdict
    if result.rules_inferred:
        return UNDECIDED
    loc = result.localisation or {}
    if rule in (loc.get("guilty") or []):
        return INTRODUCES
    if rule in (loc.get("undecided") or []):
        return UNDECIDED
    if loc.get("guilty") or loc.get("undecided"):
        return CLEAN  # localised to another pass of the same op
    return UNDECIDED if len(result.rules) > 1 else INTRODUCES


def rule_verdicts(
    report: ReplayReport,
    section_of: Any,
    heuristic_blamed: Mapping[str, list[str]] | None = None,
) -> list[RuleVerdict]:
    """One verdict per rule seen on a fused op. ``section_of(rule, op_name)`` gives
    (section, source); ``heuristic_blamed``: rule -> ops the old heuristic blames."""
    by_rule: dict[str, RuleVerdict] = {}
    for result in report.results:
        for rule in result.rules:
            verdict = op_verdict_for_rule(result, rule)
            entry = by_rule.get(rule)
            if entry is None:
                section, source = section_of(rule, result.op)
                entry = by_rule[rule] = RuleVerdict(
                    rule, section, source, CLEAN, rule_source=result.rule_source
                )
            entry.ops.append(
                {
                    "op": result.op,
                    "verdict": verdict,
                    "replay_score": result.score_json,
                    "tolerance": result.tolerance,
                }
            )
            if verdict == UNVERIFIED and result.reason not in entry.reasons:
                entry.reasons.append(result.reason)
            if _RANK[verdict] < _RANK[entry.verdict]:
                entry.verdict = verdict
    unverified_ops = {r.op for r in report.results if r.verdict == UNVERIFIED}
    for rule, ops in (heuristic_blamed or {}).items():
        entry = by_rule.get(rule)
        if entry is not None and entry.verdict == UNVERIFIED and set(ops) & unverified_ops:
            entry.verdict = HEURISTIC
            entry.reasons.insert(
                0,
                "the replay could not verify "
                + ", ".join(sorted(set(ops) & unverified_ops)[:3])
                + "; the row heuristic (inputs agree, output does not) blames it",
            )
    return sorted(by_rule.values(), key=lambda v: (_RANK[v.verdict], v.rule))
