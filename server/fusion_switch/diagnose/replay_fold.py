"""Whether a flagged op's weight that differs between the runs was folded in place by its rule
or comes from another step (:mod:`.replay`).

A flagged op whose weight differs between the runs, and whose replay disagrees with the fusion-
off weight and with its own, is either wrong under a rule that rewrites the weight in place
(GE's passes do: the replay with the folded weight applies the fold twice), or right and dumped
at another step or checkpoint than the fusion-off run. The dumps of the op alone cannot tell
them apart; the same rule's other fused ops can, on the same weight slot (member type and
input):
- one that agrees with its replay on the fusion-off value of a slot that differs shows the
  rule folds it and the runs hold the same weights; one that reads the slot alike in both
  runs shows the same weights;
- one that agrees only with its own values shows other weights, and one that disagrees with
  both as the flagged op does leaves it open (an agreeing sibling may be a frozen layer's,
  which shows nothing of a trained one's): then nothing is proven.
A first version looked at any constant with one name in both runs (a review: a mask, position
ids or a fixed table hold alike at any step, and a rule that folds at every match leaves no
same-named weight alike)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .noise import NoiseFloor
from .replay_decide import tolerance_of
from .replay_parameters import constant_parameters, parameter_state
from .subgraph import Subgraph

MAX_SIBLINGS = 8  # the same rule's agreeing ops whose weights are read, for one flagged op


class FoldWitness:
    """For a flagged op, (what shows the runs held the same weights, or None; why not)."""

    def __init__(
        self,
        replayer: Any,
        subs: list[tuple[Any, Subgraph]],
        measured: dict[str, tuple],
        noise: NoiseFloor,
        rules_for: Callable[[Any, Subgraph], list[str]],
    ) -> None:
        self.replayer = replayer
        self.subs = subs
        self.measured = measured
        self.noise = noise
        self.rules_for = rules_for
        self._rules: dict[str, set[str]] | None = None

    def __call__(self, op: Any, sub: Subgraph) -> tuple[str | None, str]:
        if self._rules is None:
            self._rules = {o.name: set(self.rules_for(o, s)) for o, s in self.subs}
        rules = self._rules.get(op.name, set())
        evidence = self.measured[op.name][2]
        slots = {tuple(slot) for slot in evidence.get("differing_slots") or ()}
        siblings = [s for o, s in self.subs if o.name != op.name and rules & self._rules[o.name]]
        agreeing = []
        for sibling in siblings:  # every one: what tells against needs no read
            against, agrees = self._measured(sibling)
            if against:
                return None, against
            if agrees:
                agreeing.append(sibling)
        for sibling in agreeing[:MAX_SIBLINGS]:
            shown = self._shown(sibling, slots)
            if shown:
                return shown, ""
        return None, "no other op of its rule shows the runs held the same weights"

    def _measured(self, sub: Subgraph) -> tuple[str, bool]:
        """(why ``sub`` tells against the same weights, or ''; whether it agrees with its
        replay). Against: it agrees only with its own weights, which differ between the runs
        (other weights); or it disagrees with both replays too, as the flagged op does: a rule
        wrong at every match and a right one dumped at another step then look alike, and a
        sibling that agrees may be a frozen layer's (a review: one proved a right rule)."""
        measured = self.measured.get(sub.fused.name)
        if not measured or measured[0] != "ok":
            return "", False
        outputs, evidence = measured[1], measured[2]
        tolerance = tolerance_of(sub, self.noise)
        worst = max(o.score for o in outputs)
        own = evidence.get("own_parameters_score")
        name = sub.fused.name
        if worst > tolerance and own is not None and own <= tolerance:
            return (
                f"{name}, of the same rule, agrees with its replay only on its own weights, "
                "which differ between the runs: the runs hold other weights"
            ), False
        if worst > tolerance and own is not None:
            return (
                f"{name}, of the same rule, disagrees with both replays too: a rule wrong at "
                "every match and weights of another step cannot be told apart"
            ), False
        return "", worst <= tolerance

    def _shown(self, sub: Subgraph, slots: set[tuple]) -> str:
        """Why ``sub`` (agreeing with its replay) shows the runs held the same weights in
        ``slots``, or ''."""
        name = sub.fused.name
        states = {}
        for member, i, ref, position in constant_parameters(self.replayer, sub):
            if (member.type, i) in slots:
                states.setdefault(parameter_state(self.replayer, sub, member, i, position), ref)
        if "differs" in states:
            return (
                f"{name}, of the same rule, agrees with its replay on the fusion-off value of "
                f"{states['differs']}, which differs in the fusion-on run: the rule changes that "
                "weight in place and the runs hold the same weights"
            )
        if "alike" in states:
            return f"{name}, of the same rule, reads {states['alike']} alike in both runs"
        return ""
