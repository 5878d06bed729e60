"""Hold Ctrl-C and SIGTERM back while msgspec loads and builds its codecs.

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
def signals_held() -> Iterator[None]:
    try:
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, HELD_SIGNALS)
    except (AttributeError, OSError, ValueError):  # no pthread_sigmask on this platform
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
