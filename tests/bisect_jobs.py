"""What the bisection tests of the CLI and of the editor share: the fake job, a wrapper that
holds it at one run, and a wait for a process to end."""

from __future__ import annotations

import os
import time
from pathlib import Path

FAKE_JOB = Path(__file__).resolve().parent / "cli" / "fake_job.py"

# The fake job, held at its GATE_AT-th run (counted across parallel runs) until GATE_GO exists:
# the moment a test saves the user's edit. GATE_WAITING says the run is held.
GATE_JOB = """
import os, runpy, sys, time
from pathlib import Path
runs = Path(os.environ["GATE_RUNS"])
runs.mkdir(exist_ok=True)
n = 1
while True:
    try:
        os.close(os.open(runs / str(n), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        break
    except FileExistsError:
        n += 1
if n == int(os.environ["GATE_AT"]):
    Path(os.environ["GATE_WAITING"]).write_text(str(os.getpid()))
    deadline = time.monotonic() + 120
    while not Path(os.environ["GATE_GO"]).exists() and time.monotonic() < deadline:
        time.sleep(0.02)
sys.argv = [sys.argv[1], *sys.argv[2:]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def gone(pid: int, wait: float = 10.0) -> bool:
    """The process has ended: no such process, or a zombie waiting for its (new) parent."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False
