"""Ctrl-C is not lost when Python runs its handler inside a finalizer (issue 16): the
exception raised there is printed and dropped; the waiting loop raises it again."""

from __future__ import annotations

import signal
import sys
import weakref

import pytest
from fusion_switch.cli.interrupts import Terminated, interrupts_latched, terminate_as_interrupt


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
    """The defect's mechanism: nothing reaches the caller."""
    _interrupt_inside_a_finalizer(signal.SIGINT)
    assert dropped == [KeyboardInterrupt]


def test_a_ctrl_c_dropped_inside_a_finalizer_is_raised_again(dropped):
    with interrupts_latched() as raise_dropped:
        _interrupt_inside_a_finalizer(signal.SIGINT)
        assert dropped == []  # not printed as "Exception ignored": it is raised again
        with pytest.raises(KeyboardInterrupt):
            raise_dropped()
        raise_dropped()  # raised once


def test_a_sigterm_dropped_inside_a_finalizer_is_raised_again_as_terminated(dropped):
    with terminate_as_interrupt(), interrupts_latched() as raise_dropped:
        _interrupt_inside_a_finalizer(signal.SIGTERM)
        with pytest.raises(Terminated):
            raise_dropped()
    assert dropped == []


def test_a_ctrl_c_outside_finalizers_raises_as_before_and_the_handlers_come_back():
    before, printing = signal.getsignal(signal.SIGINT), sys.unraisablehook
    with pytest.raises(KeyboardInterrupt), interrupts_latched():
        signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is before
    assert sys.unraisablehook is printing
