"""Many long-lived objects built at once, without the cyclic garbage collector walking them.

A parsed 5,000-op graph, or the digest of one unpickled from a helper process, is hundreds of
thousands of containers made in a burst and kept to the end of the job. The collector, left on,
walks them again and again while they are made; merely paused, it walks them all once right
after. :func:`collector_paused` pauses it, then moves the objects alive out of its reach
(:func:`gc.freeze`): they are still freed by reference counting when dropped (these structures
hold no reference cycles); only the collector no longer walks them.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused(freeze: bool = True) -> Iterator[None]:
    """The collector off inside the block; then the objects alive are frozen (unless ``freeze``
    is False: a job whose objects die with it) and it is turned back on. A caller that had the
    collector off keeps it off, and nothing is frozen: inside the comparison job, which runs
    paused as a whole, this is a no-op.

    Reading the 5,000-op graph and allocating 300,000 objects afterwards, in a fresh process:
    0.70-0.78 s of CPU with the collector on, 0.47-0.69 s paused, 0.37-0.45 s paused then
    frozen. Unpickling that graph's digest (1.7 MB): 0.17 s on, 0.07 s off."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if freeze:
                gc.freeze()
            gc.enable()
