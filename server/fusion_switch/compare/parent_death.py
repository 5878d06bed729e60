"""Linux's parent-death signal: the kernel sends ``signum`` to this process when the thread
that forked it ends (for a child forked from a main thread: when its parent's process ends,
even killed with SIGKILL, which the parent cannot forward). Elsewhere a no-op; callers check
the parent themselves after arming it, since it may already be gone.

Light (no numpy): the fusion-off graph's helper arms it before anything is imported.
"""

from __future__ import annotations

import contextlib
import sys

_PR_SET_PDEATHSIG = 1


def arm_parent_death_signal(signum: int) -> None:
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signum), 0, 0, 0)
