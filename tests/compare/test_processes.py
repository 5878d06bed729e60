"""Killing a compare: its workers end, nothing half-written stays (issue 12, processes).

Real subprocesses and real signals: `fusion-switch compare` with a process pool, slowed down by
FUSION_SWITCH_COMPARE_DELAY so that it is killed mid-run, its workers found with psutil."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import psutil
import pytest
from compare_cli import compare_command
from fusion_switch.compare import result_csv
from fusion_switch.synth.generator import generate_case

GRACE = 5.0  # seconds the workers may take to exit (issue 12)


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    return generate_case(tmp_path_factory.mktemp("case"), n_ops=150, seed=4, graph_text=False)


def start(case, out: Path, code: str | None = None) -> subprocess.Popen:
    """The compare, slowed down; ``code``: Python run in place of ``-m fusion_switch``."""
    env = dict(os.environ, FUSION_SWITCH_COMPARE_DELAY="0.4")
    # --workers 5: the replay's child takes 5 // 2 of them (comparison_processes), the comparison
    # the other three: this process and two pool workers
    command = compare_command(case, out, "--workers", "5", "--progress", "jsonl")
    if code is not None:
        command[1:3] = ["-c", code]
    return subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )


def workers_once_running(process: subprocess.Popen) -> list[psutil.Process]:
    """Wait for a progress line with ops done (a chunk came back from the pool); the workers."""
    while True:
        line = process.stderr.readline()
        assert line, "compare ended before it was killed"
        if line.startswith(b"{") and json.loads(line)["done"] > 0:
            break
    children = psutil.Process(process.pid).children(recursive=True)
    assert len(children) >= 2, children
    return children


def assert_all_gone(processes: list[psutil.Process]) -> None:
    _, alive = psutil.wait_procs(processes, timeout=GRACE)
    for survivor in alive:
        survivor.kill()
    assert not alive, f"workers outlived the compare: {alive}"


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM", "SIGINT to the group"])
def test_workers_exit_when_the_compare_is_killed(case, tmp_path, how):
    out = tmp_path / "out"
    process = start(case, out)
    try:
        workers = workers_once_running(process)
        if how == "SIGINT to the group":
            os.killpg(process.pid, signal.SIGINT)
        else:
            process.send_signal(getattr(signal, how))
        code = process.wait(timeout=30)
        assert_all_gone(workers)
    finally:
        if process.poll() is None:
            process.kill()
        process.stderr.close()
    left = sorted(p.name for p in out.iterdir()) if out.exists() else []
    if how == "SIGKILL":
        assert code == -signal.SIGKILL
    else:
        assert code in (130, 143), code
        assert left == [], f"left behind: {left}"  # the temporary CSV was removed
    assert not [name for name in left if name.startswith("result_")]


def killed_mid_run(case, out: Path, code: str | None = None) -> None:
    """:func:`start`, then SIGKILL once a chunk came back; its workers must follow it."""
    process = start(case, out, code)
    try:
        workers = workers_once_running(process)
        process.kill()
        process.wait(timeout=30)
        assert_all_gone(workers)
    finally:
        process.stderr.close()


def test_sigkill_leaves_nothing_in_the_output_folder(case, tmp_path):
    """The CSV is written unnamed (O_TMPFILE) until complete: SIGKILL, which no clean-up can
    follow, leaves no temporary file, where it used to leave one until the next run."""
    out = tmp_path / "out"
    out.mkdir()
    assert result_csv._open_unnamed(out) is not None, "this test needs O_TMPFILE (ext4, tmpfs)"
    killed_mid_run(case, out)
    assert sorted(p.name for p in out.iterdir()) == []


NAMED_TEMPORARIES = (
    "import runpy, fusion_switch.compare.result_csv as r; r._open_unnamed = lambda folder: None; "
    "runpy.run_module('fusion_switch', run_name='__main__')"
)


def test_the_next_run_removes_a_killed_runs_temporary_file(case, tmp_path):
    """Where no unnamed file can be made (NFS; forced here), the named temporary file SIGKILL
    leaves is removed by the next run into the same folder."""
    out = tmp_path / "out"
    killed_mid_run(case, out, NAMED_TEMPORARIES)
    stale = [p.name for p in out.iterdir() if p.name.endswith(".part")]
    assert stale, "SIGKILL cannot clean up: a temporary file is expected here"
    again = start(case, out, NAMED_TEMPORARIES)
    try:
        again.stderr.read()
        assert again.wait(timeout=120) in (0, 1)
    finally:
        again.stderr.close()
    names = sorted(p.name for p in out.iterdir())
    assert not [name for name in names if name.endswith(".part")], names
    assert [name for name in names if name.startswith("result_")]
