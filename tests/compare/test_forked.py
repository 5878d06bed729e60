"""A call in a forked child: its answer, or None for the caller to do the work itself."""

from __future__ import annotations

import os
import time

import psutil
from fusion_switch.compare.forked import ForkedCall


def _double(value: int) -> dict:
    return {"pid": os.getpid(), "value": 2 * value}


def _fail() -> None:
    raise RuntimeError("no answer")


def _die() -> None:
    os._exit(3)


def _sleep() -> None:
    time.sleep(60)


def test_the_answer_comes_from_another_process():
    call = ForkedCall(_double, (21,)).start()
    assert call.busy
    answer = call.answer()
    assert answer["value"] == 42 and answer["pid"] != os.getpid()
    assert not call.busy


def test_an_exception_or_a_dead_child_gives_no_answer():
    for target in (_fail, _die):
        call = ForkedCall(target).start()
        try:
            assert call.answer() is None
        finally:
            call.close()


def test_close_ends_a_child_still_working():
    call = ForkedCall(_sleep).start()
    child = psutil.Process(call._process.pid)
    call.close()
    assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
    assert call.answer() is None  # closed: nothing to wait for


def _many_objects() -> list[dict]:
    return [{"op": str(number), "outputs": [number]} for number in range(20000)]


def test_the_answer_is_unpickled_with_the_collector_paused_then_frozen(monkeypatch):
    import gc
    import pickle

    states = []
    real_loads = pickle.loads

    def spy(payload):
        states.append(gc.isenabled())
        return real_loads(payload)

    monkeypatch.setattr(pickle, "loads", spy)
    frozen = gc.get_freeze_count()
    try:
        answer = ForkedCall(_many_objects).start().answer()
        assert answer == _many_objects()
        assert states == [False] and gc.isenabled()
        assert gc.get_freeze_count() >= frozen + 20000  # out of the collector's walks
    finally:
        gc.unfreeze()
