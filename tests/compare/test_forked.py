"""A call in a forked child: its answer, or None for the caller to do the work itself."""

from __future__ import annotations

import multiprocessing
import os
import time

import psutil
from fusion_switch.compare import forked
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


def _tells(value: int, tell) -> int:
    tell(f"early {value}")
    return 2 * value


def _tells_nothing(value: int, tell) -> int:
    return 2 * value


def _tells_then_fails(value: int, tell) -> int:
    tell("early")
    raise RuntimeError("no answer")


def test_an_early_value_comes_before_the_answer():
    call = ForkedCall(_tells, (21,), early=True).start()
    try:
        assert call.early() == "early 21"
        assert call.answer() == 42
    finally:
        call.close()


def test_no_early_value_leaves_the_answer_intact():
    call = ForkedCall(_tells_nothing, (21,), early=True).start()
    try:
        assert call.early() is None
        assert call.answer() == 42
    finally:
        call.close()


def test_the_answer_without_asking_for_the_early_value():
    call = ForkedCall(_tells, (5,), early=True).start()
    assert call.answer() == 10


def test_an_early_value_then_a_failure_gives_no_answer():
    call = ForkedCall(_tells_then_fails, (1,), early=True).start()
    try:
        assert call.early() == "early"
        assert call.answer() is None
    finally:
        call.close()


def test_no_child_no_early_value():
    call = ForkedCall(_tells, (1,), early=True)  # never started
    assert call.early() is None and call.answer() is None


def _pid_of_child() -> int:
    return os.getpid()


def test_a_call_started_ahead_is_taken_once_and_answers():
    forked.start_ahead(("t", 1), _pid_of_child, ())
    call = forked.take_ahead(("t", 1))
    assert call is not None and forked.take_ahead(("t", 1)) is None
    try:
        assert call.answer() not in (None, os.getpid())  # computed in a child
    finally:
        call.close()


def test_calls_nobody_took_are_ended():
    forked.start_ahead(("t", 2), time.sleep, (30,))
    forked.start_ahead(("t", 3), time.sleep, (30,))
    assert len(multiprocessing.active_children()) >= 2
    forked.close_ahead()
    assert forked.take_ahead(("t", 2)) is None and forked.take_ahead(("t", 3)) is None
    assert multiprocessing.active_children() == []


def test_the_digest_reader_does_not_use_a_call_started_ahead_without_fork(tmp_path):
    from fusion_switch.compare.discover import _DigestReader
    from fusion_switch.synth.generator import generate_case

    case = generate_case(tmp_path / "case", n_ops=8, seed=2, graph_text=False)
    forked.start_ahead(forked.path_key("digest", case.off_graph), time.sleep, (30,))
    reader = _DigestReader(case.off_graph, "fusion-off", "spawn")
    try:
        assert not reader.busy and multiprocessing.active_children() == []
        assert reader.digest().name  # read in this process
    finally:
        reader.close()
