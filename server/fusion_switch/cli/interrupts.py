"""SIGTERM (and, for the commands writing the user's cfg, SIGHUP) as Ctrl-C: an exception the
command's clean-up handles (stop workers, remove temporary files, print why, exit 143 or 129),
instead of a silent death that leaves them behind.

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
    """The exit status of an interrupt: 143 for SIGTERM (:class:`Terminated`), 129 for SIGHUP
    (:class:`HungUp`), 130 for Ctrl-C."""
    return getattr(stop, "exit_status", 130)


def _raise_terminated(signum, frame) -> None:
    raise Terminated()


# Interrupts Python dropped inside a finalizer while a terminate_as_interrupt block ran, for
# the next interrupts_once block to act on (the outermost block clears them as it ends)
_DROPPED: list[BaseException] = []
_DEPTH = [0]


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Inside the block SIGTERM raises :class:`Terminated` in the main thread (elsewhere:
    signals can only be handled there, SIGTERM is left alone). A Ctrl-C or SIGTERM whose
    exception Python drops (it prints and drops what a handler raises inside a finalizer,
    such as importlib's weak-reference callbacks while the command still imports) is kept,
    not printed, for the next :func:`interrupts_once` block: it was lost, and the run went
    on to its end (a kill stress, issue 16)."""
    try:
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # not the main thread
        yield
        return
    printing = sys.unraisablehook

    def keeping(unraisable) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            _DROPPED.append(unraisable.exc_value)
        else:
            printing(unraisable)

    sys.unraisablehook = keeping
    _DEPTH[0] += 1
    try:
        yield
    finally:
        _DEPTH[0] -= 1
        if not _DEPTH[0]:
            _DROPPED.clear()
        sys.unraisablehook = printing
        signal.signal(signal.SIGTERM, previous)


class HungUp(KeyboardInterrupt):
    """SIGHUP, handled like Ctrl-C, with the status a shell gives a process SIGHUP ended."""

    exit_status = 129


def _raise_hung_up(signum, frame) -> None:
    raise HungUp()


@contextlib.contextmanager
def hangup_as_interrupt(active: bool = True) -> Iterator[None]:
    """Inside the block SIGHUP (the terminal or the SSH session closed) raises :class:`HungUp`
    in the main thread, unless it is ignored (``nohup``: the command is meant to outlive the
    terminal) or ``active`` is False."""
    hangup = getattr(signal, "SIGHUP", None)
    if not active or hangup is None or signal.getsignal(hangup) is signal.SIG_IGN:
        yield
        return
    try:
        previous = signal.signal(hangup, _raise_hung_up)
    except ValueError:  # not the main thread: signals are handled there only
        yield
        return
    try:
        yield
    finally:
        signal.signal(hangup, previous)


class Interrupts:
    """The interrupt that stops a command (:func:`interrupts_once`): ``first`` is the
    exception of the first SIGINT (KeyboardInterrupt) or SIGTERM (:class:`Terminated`) seen
    inside the block, None until one comes."""

    def __init__(self, raising: bool, on_first: Callable[[], None] | None = None) -> None:
        self.raising = raising
        self.on_first = on_first
        self.first: BaseException | None = None
        self.dropped = False  # Python dropped what the handler raised (inside a finalizer)

    def handle(self, signum: int, frame) -> None:
        if self.first is not None and not self.dropped:
            return  # stopping already: the clean-up runs to its end
        self.stop(Terminated() if signum == signal.SIGTERM else KeyboardInterrupt())

    def stop(self, first: BaseException) -> None:
        """``first`` stops the command: noted, ``on_first`` called, raised when ``raising``."""
        self.first = first
        self.dropped = False
        if self.on_first is not None:
            self.on_first()
        if self.raising:
            raise first


@contextlib.contextmanager
def interrupts_once(
    raising: bool = True, on_first: Callable[[], None] | None = None
) -> Iterator[Interrupts]:
    """Inside the block the first Ctrl-C or SIGTERM stops the command and every later one is
    ignored, so that its clean-up (workers stopped, temporary files removed) runs to its end.
    A second Ctrl-C, or the SIGTERM a job manager (or ``--rank all``) sends after the
    terminal's SIGINT, raised inside that clean-up: inside a threading wait it broke the lock
    ("release unlocked lock", a traceback and exit 1), elsewhere it cut the clean-up short and
    left the temporary CSV behind (issue 16).

    ``raising``: the first raises, as before the block (KeyboardInterrupt; Terminated when
    SIGTERM raised it). Python runs a handler between any two bytecodes of the main thread,
    inside a finalizer too, and prints and drops what it raises there: such a first one does
    not count, the next signal raises. Not ``raising``: the first is only noted in ``first``,
    for a waiting loop to see within its timeout (nothing raises inside threading's waits).
    ``on_first`` is called by the handler of the first, at once (the job's cancel: a waiting
    loop sees the interrupt only after its timeout, by when a short job had finished); it must
    not take a lock this thread may hold. Only signals whose handler raises are taken over (a
    background job's ignored SIGINT stays ignored); outside the main thread nothing is."""
    state = Interrupts(raising, on_first)
    if _DROPPED:  # one dropped before the block: it stops the command here
        dropped = _DROPPED.pop()
        _DROPPED.clear()
        state.stop(dropped)
    previous: dict[int, object] = {}
    try:
        for signum in (signal.SIGINT, signal.SIGTERM):
            if callable(signal.getsignal(signum)):
                previous[signum] = signal.signal(signum, state.handle)
    except ValueError:  # not the main thread: no handler runs here
        pass

    printing = sys.unraisablehook

    def unprinted(unraisable) -> None:
        if state.first is not None and unraisable.exc_value is state.first:
            state.dropped = True  # not printed as "Exception ignored": the next one raises
        else:
            printing(unraisable)

    sys.unraisablehook = unprinted
    try:
        yield state
    finally:
        sys.unraisablehook = printing
        for signum, handler in previous.items():
            signal.signal(signum, handler)
