"""A call in a forked child: its answer, or None for the caller to do the work itself."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import time

import psutil
import pytest
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


def _tells_twice(value: int, tell) -> int:
    tell(("picked", value))
    tell(f"name {value}")
    return 2 * value


def test_values_told_are_read_in_order_and_those_not_read_are_skipped():
    """A helper that picks the fusion-off graph from a folder tells the pick, then (as the
    job's digest helper) the graph's name, then answers the digest."""
    call = ForkedCall(_tells_twice, (4,), early=True).start()
    try:
        assert call.early() == ("picked", 4)
        assert call.early() == "name 4"
        assert call.early() is None  # the answer comes next: kept for answer()
        assert call.answer() == 8
    finally:
        call.close()
    call = ForkedCall(_tells_twice, (5,), early=True).start()
    try:
        assert call.early() == ("picked", 5)
        assert call.answer() == 10  # the name was not read
    finally:
        call.close()


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


def _kept(value: int, tell) -> forked.Kept:
    """Answers ``value`` at once, then (kept) the request times ``value``, in the same process."""
    tell("early")
    held = {"value": value}

    def then(receive):
        request = receive()
        if request is None:
            return None
        return {"pid": os.getpid(), "value": held["value"] * request}

    return forked.Kept(value, then)


def test_a_kept_child_answers_then_serves_one_request_with_what_it_kept():
    call = ForkedCall(_kept, (6,), early=True, keep=True).start()
    try:
        assert call.early() == "early"
        assert call.answer() == 6 and call.kept and call.busy  # the child stays
        pid = call._process.pid
        assert call.follow(7)
        assert call.answer() == {"pid": pid, "value": 42}
        assert not call.busy and not call.kept
        assert call.follow(1) is False  # one request only: the call is over
    finally:
        call.close()


def test_a_kept_child_closed_without_a_request_ends():
    closed = []

    class Companion:
        def close(self):
            closed.append(True)

    call = ForkedCall(_kept, (6,), early=True, keep=True).start()
    call.companion = Companion()
    assert call.answer() == 6 and call.kept
    child = psutil.Process(call._process.pid)
    call.close()
    assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
    assert closed == [True]  # what the starter kept with the call ends with it
    assert multiprocessing.active_children() == []


def test_a_kept_child_that_ends_before_the_request_gives_no_second_answer():
    call = ForkedCall(_kept, (6,), early=True, keep=True).start()
    try:
        assert call.answer() == 6
        os.kill(call._process.pid, 9)
        call._process.join()
        call.follow(7)  # the pipe may take the request before the end is seen, or not
        assert call.answer() is None and not call.busy
    finally:
        call.close()


def test_a_call_not_kept_cannot_be_followed():
    call = ForkedCall(_double, (1,), keep=True).start()
    try:
        assert call.answer()["value"] == 2 and not call.kept
        assert call.follow(3) is False
    finally:
        call.close()


def test_a_kept_call_handed_on_is_claimed_or_ended_by_key():
    call = forked.start_ahead(("t", 4), _kept, (2,), early=True, keep=True)
    assert call is not None and forked.take_ahead(("t", 4)) is call
    assert call.daemon is False  # it may fork the replay's workers
    assert call.answer() == 2
    forked.keep_ahead(("t", 5), call)
    assert forked.take_ahead(("t", 5)) is call
    forked.keep_ahead(("t", 5), call)
    forked.close_ahead()
    assert forked.take_ahead(("t", 5)) is None and multiprocessing.active_children() == []


ABANDONED = """
import sys
from fusion_switch.compare import forked

def kept(tell):
    return forked.Kept("digest", lambda receive: receive())

call = forked.start_ahead(("t", 9), kept, (), early=True, keep=True)
forked.take_ahead(("t", 9))  # claimed, then abandoned by an error on the way
assert call.answer() == "digest" and call.kept
print(call._process.pid, flush=True)
held = [call]  # still referenced at exit, as by a traceback
"""


def test_a_kept_child_nobody_closed_does_not_keep_the_process_from_exiting():
    """Such a child is not daemonic: multiprocessing's exit handler would join it for ever."""
    import subprocess
    import sys

    try:
        done = subprocess.run(
            [sys.executable, "-c", ABANDONED], capture_output=True, text=True, timeout=30
        )
    except subprocess.TimeoutExpired:
        raise AssertionError("the process did not exit: its kept child was joined") from None
    assert done.returncode == 0, done.stderr
    pid = int(done.stdout.split()[0])
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


_ORPHANED_CALL = """
import sys, time
from fusion_switch.compare.forked import ForkedCall

def big_answer():
    return b"x" * (4 << 20)  # more than a pipe holds: the send waits for the caller to read

call = ForkedCall(big_answer, keep={keep}).start()
print(call._process.pid, flush=True)
time.sleep(60)
"""


def _gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("keep", [False, True])
def test_a_child_whose_caller_was_killed_ends(keep):
    """`compare --no-replay` killed with SIGKILL while its graph reader was sending the digest
    left the reader blocked for ever: it held the pipe's read end too, so its write never
    failed (found by a kill test at random delays)."""
    import signal
    import subprocess
    import sys

    caller = subprocess.Popen(
        [sys.executable, "-c", _ORPHANED_CALL.format(keep=keep)],
        stdout=subprocess.PIPE,
        text=True,
    )
    child = int(caller.stdout.readline())
    try:
        time.sleep(0.3)  # the child is blocked in its send
        caller.send_signal(signal.SIGKILL)
        caller.wait(5)
        assert _gone(child, 5.0), psutil.Process(child).cmdline()
    finally:
        caller.stdout.close()
        with contextlib.suppress(psutil.NoSuchProcess):
            psutil.Process(child).kill()


def _slow_answer() -> int:
    time.sleep(0.8)
    return 42


def test_ctrl_c_at_the_terminal_is_left_to_the_caller():
    """Ctrl-C reaches the whole process group; the caller decides (it closes the call or
    waits), so the child neither stops nor prints a KeyboardInterrupt traceback."""
    import signal

    call = ForkedCall(_slow_answer).start()
    try:
        time.sleep(0.2)
        os.kill(call._process.pid, signal.SIGINT)  # what the terminal sends it
        assert call.answer() == 42
    finally:
        call.close()


def test_sigterm_ends_a_child_as_the_default_action_whatever_its_caller_handles():
    """`compare` turns SIGTERM into an exception for its own clean-up; a child forked then
    would have inherited that handler and raised inside its work (or multiprocessing's
    bootstrap, printing a traceback). A child ends on SIGTERM as a process does by default."""
    import signal

    def raising(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, raising)
    try:
        call = ForkedCall(_sleep).start()
    finally:
        signal.signal(signal.SIGTERM, previous)
    process = call._process
    try:
        time.sleep(0.2)
        os.kill(process.pid, signal.SIGTERM)
        process.join(5)
        assert process.exitcode == -signal.SIGTERM
    finally:
        call.close()


def _mask() -> list[int]:
    import signal

    return sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, []))


def test_the_child_is_forked_with_ctrl_c_and_sigterm_held_then_takes_its_own_handlers(
    monkeypatch,
):
    """Between the fork and its own handlers a child ran the caller's: a SIGTERM landing then
    raised `compare`'s exception in multiprocessing's after-fork hooks and printed it (seen
    once in 202 Ctrl-C to the process group). The fork now happens with both signals held; the
    child lets them through once its own handlers are set."""
    import signal

    real_fork = os.fork
    during_fork = []

    def recording_fork():
        during_fork.append(set(signal.pthread_sigmask(signal.SIG_BLOCK, [])))
        return real_fork()

    monkeypatch.setattr(os, "fork", recording_fork)
    before = _mask()
    call = ForkedCall(_mask).start()
    try:
        in_child = call.answer()
    finally:
        call.close()
    assert during_fork and {signal.SIGINT, signal.SIGTERM} <= during_fork[0]
    assert _mask() == before  # given back here
    assert in_child == before  # and there, once the child's handlers were set


def test_an_interrupt_delivered_as_the_fork_ends_leaves_a_call_that_can_close_its_child(
    monkeypatch,
):
    """A Ctrl-C held during the fork is raised when the signals are let through: the child
    must already be the call's, or nothing could end it (found by a review)."""

    @contextlib.contextmanager
    def interrupted_at_release():
        yield
        raise KeyboardInterrupt  # what a held SIGINT does when it is delivered

    monkeypatch.setattr(forked, "signals_held", interrupted_at_release)
    call = ForkedCall(_sleep)
    with pytest.raises(KeyboardInterrupt):
        call.start()
    assert call.busy
    child = psutil.Process(call._process.pid)
    call.close()
    assert _gone(child.pid, 5.0)
