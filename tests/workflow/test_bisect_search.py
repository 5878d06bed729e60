"""The pure search of workflow/bisect.py: every guilty rule found, trial counts within the bound,
contradictions reported (not papered over)."""

from __future__ import annotations

import random

import pytest
from fusion_switch.workflow.bisect import Inconsistent, Search, bound, drive


@pytest.mark.parametrize("n", [10, 48, 100, 200])
@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("parallel", [1, 2, 4])
def test_finds_all_guilty_within_the_bound(n, k, parallel):
    worst_rounds = 0
    for seed in range(60):
        candidates = [f"r{i}" for i in range(n)]
        guilty = set(random.Random(seed).sample(candidates, k))
        search = Search(candidates, parallel)
        found = drive(search, lambda on, g=guilty: bool(g & set(on)))
        assert set(found) == guilty
        assert search.rounds <= bound(n, k, parallel)
        assert search.trials <= parallel * bound(n, k, parallel)
        worst_rounds = max(worst_rounds, search.rounds)
    if parallel == 1 and k == 1:
        assert worst_rounds == bound(n, k)  # the bound is tight, not loose


def test_two_of_48_in_at_most_30_trials():
    assert bound(48, 2) == 14 <= 30


def test_contradiction_is_reported():
    search = Search(["a", "b", "c"], parallel=3)
    with pytest.raises(Inconsistent) as caught:
        # bad when all are on, but each alone is good: an interaction or a flaky job
        drive(search, lambda on: len(on) == 3)
    assert caught.value.group == ["a", "b", "c"]


def test_interaction_still_ends_in_a_good_configuration():
    """Bad only when a and c are both on: switching one of them off is a true fix, and the
    final check (everything else on) proves it."""
    search = Search(["a", "b", "c"])
    found = drive(search, lambda on: {"a", "c"} <= set(on))
    assert len(found) == 1 and found[0] in ("a", "c")


def test_single_candidate_is_known_from_the_preflight():
    search = Search(["only"])
    assert drive(search, lambda on: "only" in on) == ["only"]
    assert search.trials == 0  # all-on bad, all-off good: nothing left to try
