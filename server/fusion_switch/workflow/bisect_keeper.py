"""The keeper of a bisection's trials: a small process that ends every trial still running once
the bisection is gone, however it went (a SIGKILL, which nothing in it can handle, included).

A trial's job runs in a process group of its own, so that stopping a trial stops everything
the job started (a shell script's commands, a launcher's workers); nothing then ends it with
bisect. The parent-death signal (compare/parent_death.py) is no answer here: it reaches only
the job's first process, not what that process started, and it fires when the *thread* that
started the process ends (under -j the trials are started by pool threads). So bisect tells
this process, through a pipe, each trial's group as it starts ("+PGID") and ends ("-PGID");
the end of that pipe is the end of bisect (the kernel closes it whatever ended the process),
and the keeper then stops every group still listed as bisect stops them: SIGTERM, a grace,
SIGKILL. It runs in a session of its own, so that a signal to bisect's process group (the
editor's cancel) does not end it first, and imports nothing but the standard library: it is
started as a script, ``python -I bisect_keeper.py``, whatever the installation.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time

KILL_GRACE = 3.0  # as the trials' own stop (trials.KILL_GRACE)


def keep(stream) -> None:
    """Follow the groups named on ``stream`` until its end, then stop those still there."""
    groups: set[int] = set()
    for line in stream:
        text = line.strip()
        with contextlib.suppress(ValueError):
            if text[:1] == b"+":
                groups.add(int(text[1:]))
            elif text[:1] == b"-":
                groups.discard(int(text[1:]))
    stop_groups(groups)


def stop_groups(groups: set[int]) -> None:
    for group in groups:
        _signal(group, signal.SIGTERM)
    deadline = time.monotonic() + KILL_GRACE
    while time.monotonic() < deadline and any(_signal(g, 0) for g in groups):
        time.sleep(0.05)
    for group in groups:
        _signal(group, signal.SIGKILL)


def _signal(group: int, signum: int) -> bool:
    """Whether group ``group`` was there to be sent ``signum``."""
    try:
        os.killpg(group, signum)
    except (ProcessLookupError, PermissionError, OSError):
        return False
    return True


class Keeper:
    """Bisect's side: the keeper process, started with the first trial."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process = None
        self._broken = False

    def start(self) -> None:
        """Start the keeper now, before a trial (its first ``watch`` is then instant)."""
        self._send("")

    def watch(self, group: int) -> None:
        self._send(f"+{group}\n")

    def forget(self, group: int) -> None:
        self._send(f"-{group}\n")

    def close(self) -> None:
        """End the keeper (nothing left to stop: every trial has been forgotten)."""
        import subprocess

        with self._lock:
            process, self._process = self._process, None
            self._broken = True  # not started again
        if process is None:
            return
        with contextlib.suppress(OSError):
            process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(KILL_GRACE + 5)

    def _send(self, line: str) -> None:
        with self._lock:
            if self._broken:
                return
            try:
                if self._process is None:
                    self._process = _start()
                if line:
                    self._process.stdin.write(line.encode())
                    self._process.stdin.flush()
            except OSError:  # cannot start it, or it died: the trials run without it
                self._broken = True


def _start():
    import subprocess

    return subprocess.Popen(
        [sys.executable, "-I", os.path.abspath(__file__)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is bisect's to handle
    keep(sys.stdin.buffer)
