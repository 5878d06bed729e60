"""Each process's own peak of resident memory in a command's tree (Linux's VmHWM), for the
tests and benchmarks that hold a memory estimate to one process, not to the whole tree."""

from __future__ import annotations

import os
import subprocess
import time

_FIELDS = ("PPid:", "VmHWM:")


def process_peaks(command: list[str]) -> tuple[int, dict[int, tuple[int, int]]]:
    """Run ``command`` to its end; its pid and, for every process of its tree, (parent pid,
    peak RSS in bytes), as last read before the process ended (every 2 ms)."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen: dict[int, tuple[int, int]] = {}

    def visit(pid: int) -> None:
        try:
            fields = {}
            with open(f"/proc/{pid}/status") as status:
                for line in status:
                    if line.startswith(_FIELDS):
                        key, value = line.split(":", 1)
                        fields[key] = int(value.split()[0])
            seen[pid] = (fields["PPid"], max(fields["VmHWM"] * 1024, seen.get(pid, (0, 0))[1]))
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as children:
                    for child in children.read().split():
                        visit(int(child))
        except (OSError, KeyError, ValueError):
            pass  # ended meanwhile: its last reading stands

    while process.poll() is None:
        visit(process.pid)
        time.sleep(0.002)
    return process.pid, seen


def children_peaks(command: list[str]) -> list[int]:
    """The peaks of ``command``'s direct children."""
    root, seen = process_peaks(command)
    return [peak for parent, peak in seen.values() if parent == root]
