"""Hold Ctrl-C and SIGTERM back: while msgspec loads and builds its codecs, and between steps
that must not be split (:func:`signals_deferred`).

msgspec (0.23) does not survive a KeyboardInterrupt raised inside its C code: one landing in
``import msgspec`` can be swallowed by its module set-up and leave it half-initialised, and the
next decoder it builds crashes the interpreter (a segmentation fault in ~1 of 20 Ctrl-C sent
15-50 ms after start, and in 3 of 41 sent to `compare` 40-60 ms after start). Inside
:func:`signals_held` the two signals are blocked; they are delivered, and raise as usual, as
soon as it ends.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

HELD_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})


@contextlib.contextmanager
def signals_held(held: frozenset[int] = HELD_SIGNALS) -> Iterator[None]:
    """``held`` blocked in this thread for the block. The threads it starts inherit the mask
    (Python starts them blocked too), and so do the processes started from them, which are
    born with it: how a ``--scheduler local`` worker or a ``--rank all`` rank is kept from a
    terminal's Ctrl-C until it can handle one."""
    try:
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    except (AttributeError, OSError, ValueError):  # no pthread_sigmask on this platform
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@contextlib.contextmanager
def born_with_signals_held(held: frozenset[int]) -> Iterator[None]:
    """:func:`signals_held` around a block that starts processes, which are born with ``held``
    blocked and take them once they can. multiprocessing's resource tracker is started first
    (if it is not running; apart, :mod:`.tracker_apart`): starting it unblocks SIGINT and
    SIGTERM in the thread that does, and the processes started after it in the block would
    have been born without the mask."""
    from .tracker_apart import tracker_running

    tracker_running()
    with signals_held(held):
        yield


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Run the SIGINT and SIGTERM handlers only after the block, in the main thread, as they
    would have run in it: for a few steps that must happen together (two renames), where a
    blocked mask is not enough, as another thread of the process may take the signal and have
    Python run the handler in the main thread all the same. Elsewhere than the main thread,
    the block runs as it is (Python gives signal handlers to the main thread only)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []
    previous = {held: signal.signal(held, lambda signum, _: noted.append(signum))
                for held in sorted(HELD_SIGNALS)}  # fmt: skip
    try:
        yield
    finally:
        for held, handler in previous.items():
            signal.signal(held, handler)
        if noted:
            handler = previous[noted[0]]
            if callable(handler):
                handler(noted[0], None)
            elif handler == signal.SIG_DFL:  # as the signal would have: end the process
                signal.raise_signal(noted[0])
