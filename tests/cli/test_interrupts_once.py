"""`interrupts_once`: the first Ctrl-C or SIGTERM stops a command, later ones let its clean-up
finish (issue 16); a Ctrl-C is not lost when Python runs its handler inside a finalizer."""

from __future__ import annotations

import signal
import sys
import weakref

import pytest
from fusion_switch.cli.interrupts import Terminated, interrupts_once, terminate_as_interrupt


class _Holder:
    pass


@pytest.fixture
def dropped(monkeypatch) -> list[type]:
    """The exceptions Python drops (prints as "Exception ignored in ...")."""
    seen: list[type] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: seen.append(unraisable.exc_type))
    return seen


def _interrupt_inside_a_finalizer(signum: int) -> None:
    holder = _Holder()
    weakref.finalize(holder, signal.raise_signal, signum)
    del holder  # the handler runs in the callback: its exception is printed and dropped


def test_a_ctrl_c_inside_a_finalizer_is_dropped_by_python(dropped):
    """The mechanism: nothing reaches the caller."""
    _interrupt_inside_a_finalizer(signal.SIGINT)
    assert dropped == [KeyboardInterrupt]


def test_the_first_signal_raises_and_the_next_ones_are_ignored():
    with terminate_as_interrupt(), interrupts_once() as interrupts:
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGTERM)  # the clean-up goes on
        signal.raise_signal(signal.SIGINT)
        assert type(interrupts.first) is KeyboardInterrupt


def test_a_first_sigterm_raises_terminated():
    with terminate_as_interrupt(), interrupts_once():
        with pytest.raises(Terminated):
            signal.raise_signal(signal.SIGTERM)
        signal.raise_signal(signal.SIGINT)


def test_noted_signals_never_raise_and_the_first_is_kept():
    with terminate_as_interrupt(), interrupts_once(raising=False) as interrupts:
        assert interrupts.first is None
        signal.raise_signal(signal.SIGTERM)
        signal.raise_signal(signal.SIGINT)
        assert isinstance(interrupts.first, Terminated)


def test_a_ctrl_c_dropped_inside_a_finalizer_lets_the_next_one_raise(dropped):
    with interrupts_once() as interrupts:
        _interrupt_inside_a_finalizer(signal.SIGINT)
        assert dropped == []  # not printed as "Exception ignored"
        assert interrupts.dropped
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)


def test_an_ignored_sigint_stays_ignored():
    """A background job's SIGINT (ignored by the shell that started it) is not taken over."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interrupts_once() as interrupts:
            signal.raise_signal(signal.SIGINT)
            assert interrupts.first is None
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


def test_the_handlers_and_the_hook_come_back():
    before, printing = signal.getsignal(signal.SIGINT), sys.unraisablehook
    with pytest.raises(KeyboardInterrupt), interrupts_once():
        signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is before
    assert sys.unraisablehook is printing


def test_the_first_noted_signal_calls_on_first_at_once_and_only_once():
    """compare cancels its job from the handler: a waiting loop sees a noted interrupt only
    after its 0.1 s timeout, by when a short comparison had written its CSV (CI)."""
    calls = []
    with terminate_as_interrupt(), interrupts_once(False, lambda: calls.append(1)) as noted:
        signal.raise_signal(signal.SIGINT)
        assert calls == [1]
        signal.raise_signal(signal.SIGTERM)
        assert calls == [1] and type(noted.first) is KeyboardInterrupt


def test_a_signal_dropped_before_the_block_stops_the_command_there(dropped):
    """A SIGTERM 0.03 s after start landed inside importlib's weak-reference callback: Python
    printed "Exception ignored" and dropped it, and the run went on to its end (a kill
    stress). Dropped inside terminate_as_interrupt, it is kept for the next block."""
    calls = []
    with terminate_as_interrupt():
        _interrupt_inside_a_finalizer(signal.SIGTERM)
        assert dropped == []  # kept, not printed
        with interrupts_once(False, lambda: calls.append(1)) as noted:
            assert isinstance(noted.first, Terminated) and calls == [1]
        with interrupts_once(False) as later:
            assert later.first is None  # acted on once
        _interrupt_inside_a_finalizer(signal.SIGINT)
    with interrupts_once(False) as outside:
        assert outside.first is None  # what the command's blocks kept ends with them
