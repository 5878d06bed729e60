"""multiprocessing's resource tracker started apart: in a process group of its own, its
stderr ``/dev/null``.

The tracker removes the named semaphores a ``--scheduler local`` cluster makes (Dask's queues,
12 for two workers) once every process that uses it has ended, killed or not. In the
command's process group it died with a SIGKILL to that group (a job manager's last word), and
every such run left its semaphores in ``/dev/shm``; killed alone, the command's process left
the tracker to remove them, which it did, printing Python's "UserWarning: resource_tracker:
There appear to be 12 leaked semaphore objects to clean up at shutdown" on the user's
terminal. The tracker ignores Ctrl-C and SIGTERM either way, and ends when the last process
holding its pipe has.
"""

from __future__ import annotations

import os
import subprocess

_STARTED: list[subprocess.Popen] = []  # kept: multiprocessing waits for its pid itself


def tracker_running() -> None:
    """Start multiprocessing's resource tracker apart, unless one runs already."""
    from multiprocessing import resource_tracker, util

    spawn = util.spawnv_passfds

    def apart(path: str, args: list[str], passfds) -> int:
        if not any("resource_tracker" in os.fsdecode(word) for word in args):
            return spawn(path, args, passfds)  # another thread's process: as multiprocessing
        child = subprocess.Popen(
            args,
            executable=path,
            pass_fds=tuple(fd for fd in passfds if fd > 2),
            process_group=0,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            restore_signals=False,  # as multiprocessing starts it
        )
        _STARTED.append(child)
        return child.pid

    util.spawnv_passfds = apart
    try:
        resource_tracker.ensure_running()
    finally:
        util.spawnv_passfds = spawn
