"""SIGTERM as Ctrl-C: an exception the command's clean-up handles (stop workers, remove
temporary files, print why, exit 143), instead of a silent death that leaves them behind.

Light on purpose: ``cli.main`` installs it before it imports the sub-command it runs, so a
SIGTERM in the first milliseconds is handled as well as one in the middle of the work.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Callable, Iterator


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C (a KeyboardInterrupt) but with its own exit status."""

    exit_status = 143


def interrupt_status(stop: BaseException) -> int:
    """The exit status of an interrupt: 143 for SIGTERM (:class:`Terminated`), 130 for Ctrl-C."""
    return getattr(stop, "exit_status", 130)


def _raise_terminated(signum, frame) -> None:
    raise Terminated()


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Inside the block SIGTERM raises :class:`Terminated` in the main thread (elsewhere:
    signals can only be handled there, SIGTERM is left alone)."""
    try:
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def interrupts_latched() -> Iterator[Callable[[], None]]:
    """Inside the block Ctrl-C and SIGTERM raise as they did before it, and are remembered;
    the function yielded raises the last one again. Python runs a signal's handler between
    any two bytecodes of the main thread, inside a finalizer too (multiprocessing's
    ``Finalize`` closes a process's pipes from a weak reference's callback), and an exception
    raised there is printed and dropped: Ctrl-C then did nothing (issue 16, found when BLAS
    had no threads of its own to take the signal first). A waiting loop calls the function
    after each wait: it raises only an interrupt nobody caught."""
    seen: list[BaseException] = []
    previous: dict[int, object] = {}

    def remembering(handler: Callable) -> Callable:
        def handle(signum, frame) -> None:
            try:
                handler(signum, frame)
            except BaseException as stop:
                seen.append(stop)
                raise

        return handle

    try:
        for signum in (signal.SIGINT, signal.SIGTERM):
            handler = signal.getsignal(signum)
            if callable(handler):
                previous[signum] = signal.signal(signum, remembering(handler))
    except ValueError:  # not the main thread: no handler runs here
        pass

    def raise_dropped() -> None:
        if seen:
            raise seen.pop()

    printing = sys.unraisablehook

    def unprinted(unraisable) -> None:  # raised again here: not an "Exception ignored" too
        if not any(unraisable.exc_value is stop for stop in seen):
            printing(unraisable)

    sys.unraisablehook = unprinted
    try:
        yield raise_dropped
    finally:
        sys.unraisablehook = printing
        for signum, handler in previous.items():
            signal.signal(signum, handler)
