"""Finding every guilty fusion rule by re-running the user's job: adaptive group testing (pure).

Model: the job is bad when at least one guilty rule is on. A trial switches a set of candidate
rules on (all other candidates off) and answers good or bad. We keep a list of sets known to
hold a guilty rule; the smallest is split, one part is tried (all parts at once when trials
run in parallel): a bad part is a smaller known-bad set, a good part is cleared, and then the
rest of the set is known bad without a trial. A single rule left in a known-bad set is guilty.
When no known-bad set is left, one trial with every non-guilty candidate on checks that the
job is now good; if it is not, another guilty rule is searched among the uncleared ones.

Cost: each guilty rule takes at most ceil(log2 n) trials to isolate plus one check, so k guilty
of n need at most k * (ceil(log2 n) + 1) trials (2 of 48: 14), plus the preflight runs.
A contradiction (a set known bad whose parts are all good) is reported, not papered over: it
means a flaky job (use --repeat) or a fault that needs two rules on together.

The search is a generator: it yields a batch of on-sets and receives one bool (bad) per set,
so the caller decides how trials run (sequentially, in parallel, from a journal).
"""

from __future__ import annotations

import math
from collections.abc import Generator, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T", bound=Hashable)

Batch = list[tuple]  # on-sets, each a tuple of candidates in their original order


class Inconsistent(Exception):
    """The trial results contradict the model; `group` are the rules involved."""

    def __init__(self, message: str, group: Sequence) -> None:
        super().__init__(message)
        self.group = list(group)


def bound(n: int, k: int, parallel: int = 1) -> int:
    """Most rounds of trials the search needs for k guilty of n candidates (preflight not
    counted). Sequentially a round is one trial; with `parallel` trials at once, a round tries
    every part of a set split `parallel` ways, so rounds shrink and trials grow (at most
    `parallel` per round)."""
    if n <= 1:
        return max(n, 0)
    base = max(2, parallel)
    return max(k, 1) * (math.ceil(math.log(n, base) - 1e-9) + 1)


@dataclass
class Search(Generic[T]):
    """State of one search; `run()` is the generator that drives it."""

    candidates: Sequence[T]
    parallel: int = 1
    found: list[T] = field(default_factory=list)
    clean: set[T] = field(default_factory=set)
    bad_sets: list[tuple[T, ...]] = field(default_factory=list)
    trials: int = 0
    rounds: int = 0

    def __post_init__(self) -> None:
        self.candidates = list(dict.fromkeys(self.candidates))
        self.bad_sets = [tuple(self.candidates)] if self.candidates else []

    @property
    def left(self) -> int:
        """Candidates neither cleared nor found guilty."""
        return len(self.candidates) - len(self.clean) - len(self.found)

    def remaining_estimate(self) -> int:
        """Trials still expected if no further guilty rule turns up."""
        sets = self._current_sets()
        if not sets:
            return 1
        return math.ceil(math.log2(max(len(min(sets, key=len)), 1))) + 1

    def run(self) -> Generator[Batch, list[bool], list[T]]:
        while True:
            sets = self._current_sets()
            self.bad_sets = sets
            if not sets:
                on = tuple(c for c in self.candidates if c not in self.found)
                if not on:
                    return self.found
                (bad,) = yield from self._ask([on])
                if not bad:
                    self.clean.update(on)
                    return self.found
                rest = tuple(c for c in on if c not in self.clean)
                if not rest:
                    raise Inconsistent(
                        "with every rule not found guilty on, the job is bad, yet each of them "
                        "was cleared in an earlier trial: the job is flaky (try --repeat) or "
                        "the fault needs several of these rules on together",
                        on,
                    )
                self.bad_sets.append(rest)
                continue
            target = min(sets, key=len)
            if len(target) == 1:
                self.found.append(target[0])
                continue
            parts = _split(target, 2 if self.parallel <= 1 else min(self.parallel, len(target)))
            tried = parts[:1] if self.parallel <= 1 else parts
            results = yield from self._ask(tried)
            for part, bad in zip(tried, results, strict=True):
                if bad:
                    self.bad_sets.append(part)
                else:
                    self.clean.update(part)

    def _ask(self, batch: Batch) -> Generator[Batch, list[bool], list[bool]]:
        results = yield batch
        if len(results) != len(batch):
            raise ValueError("one result per trial of the batch")
        self.trials += len(batch)
        self.rounds += 1
        return [bool(r) for r in results]

    def _current_sets(self) -> list[tuple[T, ...]]:
        """Known-bad sets still useful: without found rules (such a set is explained) and
        without cleared ones (they are innocent); an emptied set is a contradiction."""
        found = set(self.found)
        out = []
        for s in self.bad_sets:
            if found.intersection(s):
                continue
            rest = tuple(c for c in s if c not in self.clean)
            if not rest:
                raise Inconsistent(
                    "a set of rules made the job bad, but every part of it was good on its own: "
                    "the job is flaky (try --repeat) or the fault needs several of these rules "
                    "on together",
                    s,
                )
            if rest not in out:
                out.append(rest)
        return out


def _split(items: tuple, parts: int) -> list[tuple]:
    """`items` in `parts` contiguous pieces of near-equal size (order kept: rules that fired
    together stay together)."""
    size, extra = divmod(len(items), parts)
    out, start = [], 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        out.append(items[start:end])
        start = end
    return [p for p in out if p]


def drive(search: Search, judge) -> list:
    """Run `search` to the end with `judge(on_set) -> bool` (bad); for tests and simple use."""
    gen = search.run()
    try:
        batch = next(gen)
        while True:
            batch = gen.send([judge(on) for on in batch])
    except StopIteration as stop:
        return list(stop.value)
