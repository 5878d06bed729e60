"""The cyclic collector paused around bursts of long-lived objects (readers/collector.py)."""

from __future__ import annotations

import gc

import pytest
from fusion_switch.readers.collector import collector_paused


@pytest.mark.parametrize(("freeze", "frozen_more"), [(True, True), (False, False)])
def test_paused_inside_then_back_on_frozen_only_when_asked(freeze, frozen_more):
    before = gc.get_freeze_count()
    try:
        with collector_paused(freeze=freeze):
            assert not gc.isenabled()
            kept = [{"n": [n]} for n in range(1000)]
        assert gc.isenabled()
        assert (gc.get_freeze_count() >= before + len(kept)) is frozen_more
    finally:
        gc.unfreeze()


def test_a_caller_with_the_collector_off_keeps_it_off_and_nothing_is_frozen():
    before = gc.get_freeze_count()
    gc.disable()
    try:
        with collector_paused():
            [{"n": [n]} for n in range(1000)]
        assert not gc.isenabled()
        assert gc.get_freeze_count() == before
    finally:
        gc.enable()


def test_an_error_inside_still_turns_it_back_on():
    with pytest.raises(RuntimeError), collector_paused(freeze=False):
        raise RuntimeError("bad graph")
    assert gc.isenabled()
