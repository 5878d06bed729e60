"""The fork server's socket folder (multiprocessing's ``pymp-*`` in the temporary directory):
marked, and locked by the ``--rank all`` process for as long as it lives; removed by a later
``--rank all`` run once that lock is free.

The ``--rank all`` process removes the folder when it exits, and the server when its last rank
ends (:mod:`.rank_server`). A SIGKILL to the whole process group (a job manager's last word)
kills both, and nothing is left to remove it: every such run left an empty folder with a dead
socket in it. The next run removes the marked folders whose lock nobody holds. Only the
``--rank all`` process needs the folder's path (to ask the server for a rank, or to start a
server there again when its own was killed alone): once it has ended the folder may go, even
while its server still finishes a rank (it listens on its open socket, and removes the folder
itself at exit).

A lock, not a pid: a run in another pid namespace sharing the directory (a container, a
sandbox) saw a live run's pids as ended and removed its folder (a review). A folder marked on
another machine (a temporary directory on shared storage) is kept, since a lock may not be
seen across machines; so is a folder without the mark (another program's, or an older
fusion-switch's), and any doubt.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import stat

MARK = "fusion-switch-fork-server"  # locked by the --rank all process; holds the machine


def server_folder() -> str | None:
    """The folder of this process's fork server's socket (its own, in the server), or None
    where none has been started."""
    from multiprocessing import forkserver

    address = getattr(getattr(forkserver, "_forkserver", None), "_forkserver_address", None)
    return os.path.dirname(address) if isinstance(address, str) else None


def mark(folder: str) -> int | None:
    """Mark ``folder`` and lock the mark; the returned descriptor holds the lock, for as long
    as the caller lives (None where it could not be made: the folder then stays unmarked)."""
    path = os.path.join(folder, MARK)
    partial = f"{path}.{os.getpid()}"
    try:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # before the mark has its name: never seen unlocked
        os.write(fd, _machine().encode())
        os.replace(partial, path)
    except OSError:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(partial)
        return None
    return fd


def sweep(temporary: str, keep: str = "") -> list[str]:
    """Remove the marked folders in ``temporary`` (but ``keep``) whose lock nobody holds;
    return their paths. Never raises: housekeeping must not stop a run."""
    removed = []
    try:
        entries = list(os.scandir(temporary))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith("pymp-") or entry.path == keep:
            continue
        try:
            status = entry.stat(follow_symlinks=False)
            ours = stat.S_ISDIR(status.st_mode) and status.st_uid == os.getuid()
            if ours and _left_behind(entry.path):
                _remove(entry.path)
                removed.append(entry.path)
        except (OSError, ValueError):
            continue
    return removed


def _left_behind(folder: str) -> bool:
    """Whether ``folder`` holds this machine's mark and nobody holds its lock."""
    try:
        fd = os.open(os.path.join(folder, MARK), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        if os.read(fd, 256).decode("ascii", "replace") != _machine():
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: its run is alive
            return False
        return True
    finally:
        os.close(fd)


def _remove(folder: str) -> None:
    import shutil

    shutil.rmtree(folder, ignore_errors=True)


def _machine() -> str:
    """This machine (its boot, where Linux tells it, else its name)."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as boot:
            return "boot " + boot.read().strip()
    except OSError:
        return "host " + socket.gethostname()
