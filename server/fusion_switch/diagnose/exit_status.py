"""`compare`'s exit status, read from its summary (plain dicts: the editor reads it too).

2 nothing compared; 1 a rule proven, or suspected (a fused op proven wrong between undecided
passes, or a heuristic guess), or a fused op proven or guessed wrong whose graph names no
rule; 3 not proven clean: a dump a verdict needs cannot be read, the replay left out by the
memory budget, a fused op the replay could not verify while the
outputs diverge (a review: that last ended 0, the status of a clean run), a fused op whose
dumped outputs neither a row nor the replay could judge, one that disagrees with its
replay in a channel far smaller than its tensor's largest value, or ops dumped under -m that
the fusion-on graph does not name (in no row: a review left that at 0 while the verdict said
"not proven clean"); 0 otherwise.

``--rank all`` combines its ranks' statuses in that order (:func:`ranks_exit_status`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

NOTHING_COMPARED = "nothing compared"
DIVERGING = ("introduces", "amplifies", "propagates")  # a row verdict: outputs out of band


def exit_status(summary: Mapping[str, Any]) -> int:
    if str(summary.get("verdict", "")).startswith(NOTHING_COMPARED):
        return 2
    if summary.get("suspects") or summary.get("fused_ops_without_rule"):
        return 1
    rules = [r for r in summary.get("rules") or [] if isinstance(r, Mapping)]
    if any(r.get("verdict") in ("undecided", "heuristic") for r in rules):
        return 1
    return 3 if not_proven_clean(summary) else 0


def ranks_exit_status(statuses: Iterable[int]) -> int:
    """``--rank all``'s status from its ranks', in the single run's order: 1 when any rank
    proves (or suspects) a rule, whatever the others: its rule is the one to act on, and the
    ranks that failed or lack evidence stay listed beside it (a review: the largest status
    made a proven rule "evidence missing" when another rank was dumped on one side only);
    else 2 when a rank could not be compared (unusable input, its process killed or crashed);
    else 3 when a rank lacks evidence (not proven clean, or no dump to compare on a side);
    0 only when every rank is 0."""
    found = set(statuses)
    return next((status for status in (1, 2, 3) if status in found), 0)


def not_proven_clean(summary: Mapping[str, Any]) -> bool:
    """Evidence a clean verdict needs is missing (see the module's text)."""
    if summary.get("evidence_missing") or summary.get("replay_left_out"):
        return True
    if summary.get("unjudged_fused_ops"):  # outputs no row and no replay judged
        return True
    if summary.get("channel_disagreements"):  # a channel disagrees with its replay
        return True
    counts = summary.get("counts") or {}
    if counts.get("unnamed_dumps"):  # dumped ops no row judged (summary._unjudged_tail)
        return True
    by_verdict = counts.get("ops_by_verdict") or {}
    diverging = any(by_verdict.get(v) for v in DIVERGING)
    replay = summary.get("replay")  # None without it; with no fused op to replay, the rows'
    rows_only = "replay" in summary and (
        replay is None or (isinstance(replay, Mapping) and replay.get("fused_ops") == 0)
    )
    if rows_only and summary.get("ops_with_unjudged_inputs"):  # outputs out of band
        return True
    # outputs diverge and no op is named: an op not dumped may be where the error starts (a
    # review: the verdict said "not proven clean" and the run exited 0)
    named = summary.get("unattributed_ops")
    if rows_only and by_verdict.get("propagates") and counts.get("undumped_tasks") and not named:
        return True
    unverified = any(  # a fused op of no known rule is in fused_ops only (the editor's
        # compact summary keeps unverified_rules only)
        isinstance(r, Mapping) and r.get("verdict") == "unverified"
        for key in ("unverified_rules", "fused_ops")
        for r in summary.get(key) or []
    )
    return unverified and diverging
