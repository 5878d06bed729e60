"""The comparison child process: progress lines, outcome, bad input, cancellation."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from fusion_switch.synth.generator import generate_case
from fusion_switch.workflow.job import CompareJob, ComparePaths, parse_progress


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    return generate_case(tmp_path_factory.mktemp("job") / "case", n_ops=40)


def paths(case, out: Path, **changes) -> ComparePaths:
    values = {
        "on_dump": case.on_dump,
        "off_dump": case.off_dump,
        "on_graph": case.on_graph,
        "off_graph": case.off_graph,
        "output": out,
    }
    values.update(changes)
    return ComparePaths(**values)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"done": 3, "total": 9, "message": "op"}', (3, 9, "op")),
        ('{"done": 3, "total": 9}', (3, 9, "")),
        ("compare: 3/9 ops (33%)", None),
        ('{"done": "x", "total": 9}', None),
        ("{not json", None),
    ],
)
def test_parse_progress(line, expected) -> None:
    assert parse_progress(line) == expected


def test_problems_name_each_missing_input(tmp_path: Path, case) -> None:
    broken = paths(case, tmp_path, on_dump=tmp_path / "nope", off_graph=tmp_path / "g.json")
    assert broken.problems() == [
        f"onDump {tmp_path / 'nope'}: no such folder (expected a dump folder)",
        f"offGraph {tmp_path / 'g.json'}: no such file (expected a graph JSON or .txt)",
    ]
    assert paths(case, tmp_path).problems() == []


def test_a_run_reports_progress_and_returns_the_summary(tmp_path: Path, case) -> None:
    seen: list[tuple[int, int]] = []
    job = CompareJob(paths(case, tmp_path / "out"), lambda d, t, m: seen.append((d, t)))
    outcome = asyncio.run(job.run())
    assert outcome.status == "done" and outcome.exit_code == 1
    assert outcome.summary["suspects"][0]["rule"] == "ConvBatchnormFusionPass"
    assert seen[0][0] == 0 and seen[-1][0] == seen[-1][1]
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_a_run_whose_evidence_is_missing_is_done_with_its_summary(tmp_path: Path, case) -> None:
    """A review: exit status 3 (a dump the verdict needs cannot be read) was taken for a crash
    ("the comparison process ended unexpectedly"), and the results it wrote were dropped."""
    import shutil

    on_dump = tmp_path / "on"
    shutil.copytree(case.on_dump, on_dump)
    (injected,) = case.truth["faults"]
    (guilty,) = on_dump.glob(f"*.{injected['op']}.*")
    guilty.write_bytes(guilty.read_bytes()[:100])  # cut: unreadable
    job = CompareJob(paths(case, tmp_path / "out", on_dump=on_dump))
    outcome = asyncio.run(job.run())
    assert outcome.status == "done" and outcome.exit_code == 3, outcome.message
    assert outcome.summary["verdict"].startswith("evidence missing")
    assert any(str(guilty) in item for item in outcome.summary["evidence_missing"])


def test_unusable_input_fails_with_the_cli_message(tmp_path: Path, case) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{broken", encoding="utf-8")
    outcome = asyncio.run(CompareJob(paths(case, tmp_path / "out", on_graph=bad)).run())
    assert outcome.status == "failed" and outcome.exit_code == 2
    assert "bad.json" in outcome.message


def test_cancel_kills_the_child_and_leaves_no_summary(tmp_path: Path, case) -> None:
    env = {**os.environ, "FUSION_SWITCH_COMPARE_DELAY": "5"}

    async def scenario():
        job = CompareJob(paths(case, tmp_path / "out"), lambda *_: job.cancel(), env=env)
        return await asyncio.wait_for(job.run(), 30)

    outcome = asyncio.run(scenario())
    assert outcome.status == "cancelled" and outcome.summary is None
    assert not (tmp_path / "out" / "summary.json").exists()


def test_a_killed_child_answers_at_once_and_leaves_no_process(tmp_path: Path, case) -> None:
    """The child killed with SIGKILL from outside (the OOM killer, a user): run() answers
    within seconds with an error, and what the child started (here a process that holds the
    child's pipes, as the engine's pool workers do) does not outlive it."""
    import signal

    import psutil

    pid_file = tmp_path / "holder.pid"
    wrapper = tmp_path / "python-with-a-holder"
    wrapper.write_text(
        f'#!/bin/sh\nsleep 120 &\necho $! > {pid_file}\nexec {sys.executable} "$@"\n',
        encoding="utf-8",
    )
    wrapper.chmod(0o755)
    env = {**os.environ, "FUSION_SWITCH_COMPARE_DELAY": "5"}

    async def scenario():
        job = CompareJob(
            paths(case, tmp_path / "out"),
            lambda *_: os.kill(job._process.pid, signal.SIGKILL),
            python=str(wrapper),
            env=env,
        )
        return await asyncio.wait_for(job.run(), 15)

    outcome = asyncio.run(scenario())
    assert outcome.status == "failed"
    assert "killed by signal 9" in outcome.message
    holder = int(pid_file.read_text())
    _gone, alive = (
        psutil.wait_procs([psutil.Process(holder)], timeout=5)
        if psutil.pid_exists(holder)
        else ([], [])
    )
    for survivor in alive:
        survivor.kill()
    assert not alive, "a process of the killed child's group outlived it"


def test_cancel_mid_run_removes_the_runs_temporary_file(tmp_path: Path) -> None:
    """Issue 12: cancel removes its own temporary file (the child gets SIGTERM and cleans up;
    SIGKILL follows only if it does not end in time)."""
    big = generate_case(tmp_path / "case", n_ops=150, seed=4, graph_text=False)
    out = tmp_path / "out"
    env = {**os.environ, "FUSION_SWITCH_COMPARE_DELAY": "0.5"}
    seen: list[int] = []

    def on_progress(done: int, total: int, message: str) -> None:
        seen.append(done)
        if done > 0:  # the CSV is being written: unnamed (O_TMPFILE), or a named .part
            assert all(p.name.endswith(".part") for p in out.iterdir())
            job.cancel()

    async def scenario():
        return await asyncio.wait_for(job.run(), 60)

    job = CompareJob(paths(big, out), on_progress, env=env)
    outcome = asyncio.run(scenario())
    assert outcome.status == "cancelled"
    assert any(done > 0 for done in seen)
    assert sorted(p.name for p in out.iterdir()) == []


def test_the_memory_budget_setting_reaches_the_command_line(tmp_path: Path, case) -> None:
    """fusionSwitch.compare.memoryBudget: the editor's comparison keeps to it as `compare
    --memory-budget` does (workers and replay together); empty: no limit."""
    from fusion_switch.workflow.job import command_line

    given = paths(case, tmp_path / "out")
    assert "--memory-budget" not in command_line(given)
    assert "--memory-budget" not in CompareJob(given, memory_budget="").argv
    argv = CompareJob(given, memory_budget="512M").argv
    assert argv[argv.index("--memory-budget") + 1] == "512M"


def test_the_workers_setting_reaches_the_command_line(tmp_path: Path, case) -> None:
    """fusionSwitch.compare.workers: the editor's comparison runs on that many processes, as
    `compare --workers` does; 0: every core (no option)."""
    from fusion_switch.workflow.job import command_line

    given = paths(case, tmp_path / "out")
    assert "--workers" not in command_line(given)
    assert "--workers" not in CompareJob(given, workers=0).argv
    argv = CompareJob(given, workers=1).argv
    assert argv[argv.index("--workers") + 1] == "1"


def test_a_task_cancelled_mid_run_leaves_no_unread_error(tmp_path: Path, case, caplog) -> None:
    """The editor's `$/cancelRequest` cancels the job's task; the child's stream readers were
    left unread, and asyncio logged "exception was never retrieved" (a review)."""
    import gc
    import logging

    env = {**os.environ, "FUSION_SWITCH_COMPARE_DELAY": "5"}

    async def scenario():
        started = asyncio.Event()
        job = CompareJob(paths(case, tmp_path / "out"), lambda *_: started.set(), env=env)
        task = asyncio.ensure_future(job.run())
        await asyncio.wait_for(started.wait(), 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.2)

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        asyncio.run(scenario())
        gc.collect()
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()], caplog.text


def test_the_rank_iteration_and_step_reach_the_command_line(tmp_path: Path, case) -> None:
    """fusionSwitch.compare.rank / .iteration / .step (or the command's arguments): the editor
    names the dump trees' rank, iteration and step as `compare --rank/--iteration/--step`
    does; empty: none."""
    given = paths(case, tmp_path / "out")
    argv = CompareJob(given).argv
    assert not {"--rank", "--iteration", "--step"} & set(argv)
    argv = CompareJob(given, rank="node0/1", iteration="20", step="3").argv
    assert argv[argv.index("--rank") + 1] == "node0/1"
    assert argv[argv.index("--iteration") + 1] == "20"
    assert argv[argv.index("--step") + 1] == "3"
