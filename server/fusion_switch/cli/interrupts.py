"""SIGTERM as Ctrl-C: an exception the command's clean-up handles (stop workers, remove
temporary files, print why, exit 143), instead of a silent death that leaves them behind.

Light on purpose: ``cli.main`` installs it before it imports the sub-command it runs, so a
SIGTERM in the first milliseconds is handled as well as one in the middle of the work.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator


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
