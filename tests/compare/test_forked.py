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
