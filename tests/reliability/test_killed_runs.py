"""A killed comparison leaves no process behind (issue 12, "Processes"), with real signals.

`fusion-switch compare` runs with two workers on a case big enough to be caught mid-run; once
it reports progress, the test sends the signal to the CLI process alone (as `kill PID` or a
crashed parent would, not to its process group) and then waits up to 5 s for every process
it had started to be gone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from fusion_switch.synth.generator import generate_case

GRACE = 5.0


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    return generate_case(tmp_path_factory.mktemp("killed") / "case", n_ops=600)


def start_compare(case, out) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "fusion_switch", "compare", "-m", str(case.on_dump),
         "-g", str(case.off_dump), "-f", str(case.on_graph), "-cf", str(case.off_graph),
         "-out", str(out), "--progress", "jsonl", "--workers", "2"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        # each progress report waits 0.2 s: the run is surely still going when it is killed
        env={**os.environ, "FUSION_SWITCH_COMPARE_DELAY": "0.2"},
    )  # fmt: skip


def wait_for_progress(proc: subprocess.Popen) -> None:
    """Until the run has compared something (its workers are then surely running)."""
    for line in proc.stderr:
        try:
            report = json.loads(line)
        except ValueError:
            continue
        if report.get("done", 0) > 0:
            return
    raise AssertionError("the comparison ended before reporting progress")


def survivors(pids: list[psutil.Process]) -> list[psutil.Process]:
    deadline = time.monotonic() + GRACE
    alive = pids
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    return alive


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_killed_cli_compare_leaves_no_worker(case, tmp_path, signum):
    proc = start_compare(case, tmp_path / "out")
    children: list[psutil.Process] = []
    try:
        wait_for_progress(proc)
        children = psutil.Process(proc.pid).children(recursive=True)
        assert children, "expected worker processes"
        proc.send_signal(signum)
        proc.wait(GRACE)
        left = survivors(children)
        assert not left, [(p.pid, p.cmdline()) for p in left]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
        for child in children:  # only what this test started, if the assertion failed
            if child.is_running():
                child.kill()


def _named_semaphores() -> set[str]:
    """multiprocessing's named semaphores (a Dask LocalCluster's queues make them)."""
    shm = Path("/dev/shm")
    return {p.name for p in shm.glob("sem.mp-*")} if shm.is_dir() else set()


@pytest.mark.machine_wide  # another test's cluster or fork server makes semaphores too
@pytest.mark.parametrize("target", ["process", "group"])
def test_a_killed_local_cluster_leaves_no_semaphore_and_no_warning(case, tmp_path, target):
    """`--scheduler local` killed with SIGKILL: to its process group (a job manager's last
    word), every run left 12 named semaphores in /dev/shm, its resource tracker killed with
    it; to the process alone, the tracker removed them and printed Python's "UserWarning:
    resource_tracker: There appear to be 12 leaked semaphore objects" on the terminal. The
    tracker leads a process group of its own now, its stderr /dev/null."""
    pytest.importorskip("distributed")
    before = _named_semaphores()
    proc = subprocess.Popen(
        [sys.executable, "-m", "fusion_switch", "compare", "-m", str(case.on_dump),
         "-g", str(case.off_dump), "-f", str(case.on_graph), "-cf", str(case.off_graph),
         "-out", str(tmp_path / "out"), "--progress", "jsonl", "--scheduler", "local",
         "--workers", "2", "--no-replay"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "FUSION_SWITCH_COMPARE_DELAY": "0.2"}, start_new_session=True,
    )  # fmt: skip
    said: list[str] = []
    reader = threading.Thread(target=lambda: said.extend(proc.stderr), daemon=True)
    try:
        wait_for_progress(proc)  # the cluster's workers compare
        if target == "group":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
        proc.wait(GRACE)
        reader.start()
        reader.join(30)  # the stream ends when the last process holding it has
        deadline = time.monotonic() + 10
        while _named_semaphores() - before and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _named_semaphores() - before
        assert "leaked" not in "".join(said), "".join(said)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
