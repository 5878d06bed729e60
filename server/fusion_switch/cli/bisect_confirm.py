"""How `bisect` confirms the rules its search found, in runs of their own (:class:`.bisect.Bisect`
runs them): the search answers a set it tried once from the journal, and one spurious failure of
the job named an innocent rule (a review). A rule is kept when the job runs bad with only it
on, and, beside other rules found, bad with it alone of them on, in every one of its --repeat
runs; and the job must run good with them all off, else the bisection is not sure."""

from __future__ import annotations

from typing import Any


def confirmed(bisect: Any, guilty: list) -> tuple[list, list]:
    """(kept, lost): the rules of ``guilty`` one more run with only that rule on finds bad,
    then those :func:`needed` beside the others; and the rules that were not. A job that
    fails now and then for reasons of its own made the halving name innocent rules, which
    were switched off (a review); such a rule runs good alone and is said, not kept. A rule
    lost shows the job failing on its own: the caller trusts none of the rest either (a
    second review: two spurious failures confirmed an innocent rule beside the one lost)."""
    if not guilty:
        return guilty, []
    items = []
    for rule in guilty:
        text = bisect.trial_text([rule])
        items.append((f"confirm {rule[1]}: only it on", text, "confirm\n" + text))
    bad_alone = _still_bad(
        bisect,
        guilty,
        items,
        "the job ran good with only it on; a run that named it failed for another reason, "
        "or the fault shows only sometimes (a rule is confirmed only when every run with it "
        "on is bad: a fault that shows sometimes looks like a job failing on its own)",
    )
    kept = needed(bisect, bad_alone)
    lost = [rule for rule in guilty if rule not in kept]
    if kept and not lost:
        bisect.say("confirmed: " + _names(kept))
    return kept, lost


def needed(bisect: Any, found: list) -> list:
    """The rules of ``found`` that make the job bad when they alone of ``found`` are on (the
    other candidates as they are). A spurious failure in the halving and another in the run
    with only that rule on named an innocent rule beside the guilty one (a review); with the
    guilty one off, it runs good."""
    if len(found) < 2:
        return found  # alone: the configuration as it is, bad in the preflight
    items = []
    for rule in found:
        on = [c for c in bisect.candidates_list if c == rule or c not in found]
        text = bisect.trial_text(on)
        items.append((f"confirm {rule[1]}: the others found off", text, "needed\n" + text))
    return _still_bad(
        bisect,
        found,
        items,
        "the job ran good with it on and the other rules found off; a run that named it "
        "failed for another reason",
    )


def _still_bad(bisect: Any, rules: list, items: list[tuple], why: str) -> list:
    """The rules of ``rules`` whose run in ``items`` (one each, in order) is bad; the others
    are said, "not confirmed" and ``why``."""
    results = bisect.evaluate(items, every=True)
    lost = [rule for rule, bad in zip(rules, results, strict=True) if not bad]
    if lost:
        bisect.say(f"not confirmed: {_names(lost)}: {why}")
    return [rule for rule in rules if rule not in lost]


def unsure_without(bisect: Any, guilty: list) -> str:
    """Why the job is not shown good with ``guilty`` switched off ('' when it is), in a run of
    its own: a job that began failing whatever its configuration midway (a device lost, a disk
    full) had every candidate confirmed and switched off (a review)."""
    text = bisect.trial_text([c for c in bisect.candidates_list if c not in guilty])
    (bad,) = bisect.evaluate([("check: the rules found off", text, "control\n" + text)])
    if not bad:
        return ""
    return (
        f"the job is still bad with {_names(guilty)} switched off, which the search found "
        "guilty: it now fails for another reason too, or whatever the configuration (see "
        f"{bisect.last_log}); nothing is switched off"
    )


def undecided(kept: list, lost: list, cfg) -> str:
    """The verdict once a rule found was ``lost`` (not confirmed): the job fails on its own,
    or its fault shows only sometimes; no run is trusted, and nothing is switched off."""
    return (
        f"could not decide: {_names(lost)} found by the search but not confirmed in runs of "
        "its own: the job fails for reasons of its own, or the fault shows only sometimes, or "
        "needs several rules on together; nothing is switched off (still standing: "
        f"{_names(kept) or 'none'}). Make the job's runs repeatable (check its logs) and "
        f"bisect again, or try a rule found yourself: fusion-switch off {cfg} RULE"
    )


def _names(rules: list) -> str:
    return ", ".join(f"{r} ({s})" for s, r in rules)
