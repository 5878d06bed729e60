"""The fork server's socket folder (multiprocessing's ``pymp-*`` in the temporary directory):
marked with the processes that use it once the server runs, and removed by a later
``--rank all`` run once they have all ended.

The ``--rank all`` process removes the folder when it exits, and the server when its last rank
ends (:mod:`.rank_server`). A SIGKILL to the whole process group (a job manager's last word)
kills both, and nothing is left to remove it: every such run left an empty folder with a dead
socket in it. The next run removes the folders so marked whose processes are all gone: the
server, and the ``--rank all`` process, which starts a server again in the same folder when
its server was killed alone. A process is known by its pid and its start time, so a recycled
pid is not taken for it. A folder without the mark (another program's, or an older
fusion-switch's) is never touched, and any doubt (a mark being written) keeps it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat

MARK = "fusion-switch-fork-server"  # "pid:start" of each process that uses the folder


def mark(folder: str, pids: list[int]) -> None:
    """Mark ``folder`` as the socket folder used by the processes ``pids``."""
    path = os.path.join(folder, MARK)
    partial = f"{path}.{os.getpid()}"
    text = " ".join(f"{pid}:{_started(pid)}" for pid in pids)
    with contextlib.suppress(OSError):
        with open(partial, "w", encoding="ascii") as out:
            out.write(text)
        os.replace(partial, path)  # a sweep reads a whole mark or none


def sweep(temporary: str, keep: str = "") -> list[str]:
    """Remove the marked folders in ``temporary`` (but ``keep``) whose processes have all
    ended; return their paths."""
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
        except OSError:
            continue
        if not stat.S_ISDIR(status.st_mode) or status.st_uid != os.getuid():
            continue
        users = _marked(entry.path)
        if users and not any(_running(pid, start) for pid, start in users):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
    return removed


def _marked(folder: str) -> list[tuple[int, int | None]]:
    try:
        with open(os.path.join(folder, MARK), encoding="ascii") as marked:
            words = marked.read(256).split()
    except (OSError, UnicodeDecodeError):
        return []
    users = []
    for word in words:
        pid, _, start = word.partition(":")
        if not pid.isdigit():
            return []
        users.append((int(pid), int(start) if start.isdigit() else None))
    return users


def _started(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot, from ``/proc``), or None where not told."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as status:
            fields = status.read().rpartition(b")")[2].split()
        return int(fields[19])  # the 22nd field; the first two end at ")"
    except (OSError, IndexError, ValueError):
        return None


def _running(pid: int, start: int | None) -> bool:
    """Whether the process ``pid`` that started at ``start`` still runs (a recycled pid, with
    another start, does not count)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: not ours, but running
        return True
    return start is None or _started(pid) in (start, None)
