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


_POLL_SECONDS = 0.5  # where a process cannot be waited for by a descriptor (no pidfd)


def signal_when_gone(pid: int, signum: int) -> None:
    """Send ``signum`` to this process as soon as process ``pid`` (not its parent) has ended,
    by a daemon thread; at once when it has ended already. Linux's pidfd tells the moment
    the process ends, even while it waits to be reaped; elsewhere it is asked every 0.5 s."""
    import os
    import threading

    try:
        watched = os.pidfd_open(pid)
    except ProcessLookupError:
        os.kill(os.getpid(), signum)
        return
    except (AttributeError, OSError):  # no pidfd here: asked in turn
        watched = None

    def watch() -> None:
        _wait(pid, watched)
        os.kill(os.getpid(), signum)

    threading.Thread(target=watch, name="rank-parent-watch", daemon=True).start()


def wait_until_gone(pid: int) -> None:
    """Return when process ``pid`` (not a child of this one) has ended."""
    import os

    try:
        watched = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except (AttributeError, OSError):
        watched = None
    _wait(pid, watched)


def _wait(pid: int, watched: int | None) -> None:
    if watched is not None:
        import os
        import select

        try:
            select.select([watched], [], [])
        finally:
            os.close(watched)
        return
    import time

    while alive(pid):
        time.sleep(_POLL_SECONDS)


def alive(pid: int) -> bool:
    """Whether process ``pid`` is there (a process that waits to be reaped is)."""
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
