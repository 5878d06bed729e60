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


def pidfd(pid: int) -> int | None:
    """A descriptor naming process ``pid`` itself, whatever takes its pid later (Linux's
    pidfd: readable once the process has ended, even while it waits to be reaped); None where
    there is none, or the process has ended already."""
    import os

    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux 5.3 or later, or no such process
        return None


def has_ended(pid: int, fd: int | None) -> bool:
    """Whether process ``pid`` has ended: by its :func:`pidfd` ``fd``, else by its pid."""
    if fd is None:
        return not alive(pid)
    import select

    return bool(select.select([fd], [], [], 0)[0])


def wait_until_ended(pid: int, fd: int | None) -> None:
    """Return when process ``pid`` (not a child of this one) has ended: at once by its
    :func:`pidfd` ``fd``, else asked every 0.5 s."""
    if fd is not None:
        import select

        select.select([fd], [], [])
        return
    import time

    while alive(pid):
        time.sleep(_POLL_SECONDS)


def signal_when_parent_ends(parent: int, signum: int) -> None:
    """Have ``signum`` sent to this process when process ``parent`` ends: the parent-death
    signal while ``parent`` is this process's parent, else (or when it was gone before the
    signal was armed) a watch of its pid."""
    import os

    if os.getppid() == parent:
        arm_parent_death_signal(signum)
        if os.getppid() == parent:
            return
    signal_when_gone(parent, signum)


def signal_when_gone(pid: int, signum: int) -> None:
    """Send ``signum`` to this process as soon as process ``pid`` (not its parent) has ended,
    by a daemon thread; at once when it has ended already."""
    import os
    import threading

    fd = pidfd(pid)

    def watch() -> None:
        wait_until_ended(pid, fd)
        if fd is not None:
            os.close(fd)
        os.kill(os.getpid(), signum)

    if has_ended(pid, fd):
        watch()
        return

    threading.Thread(target=watch, name="rank-parent-watch", daemon=True).start()


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
