"""`fusion-switch bisect` as a subprocess while the user works on: a save of the configuration
during a bisection is never overwritten (it is kept, recorded in the history, and the trial
that ran with it does not count), the job dies with a bisection killed outright, and `-j`
leaves no trial copies behind."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fusion_switch.workflow.history import History

from tests.bisect_jobs import FAKE_JOB, GATE_JOB, gone

USER_CFG = b'{\n  "Switch": {\n    "GraphFusion": {\n      "KeepMe": "on"\n    }\n  }\n}\n'
USER_EDIT = USER_CFG.replace(
    b'"KeepMe": "on"', b'"KeepMe": "on",\n      "MyOwnImportantRule": "off"'
)
BISECT = [sys.executable, "-m", "fusion_switch", "bisect"]
RULES = "--rules=" + ",".join(f"GraphFusion:R{i:03d}" for i in range(16))


def wait_for(path: Path, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def fusion_switch(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fusion_switch", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


class Gated:
    """A bisection whose job is held at its ``at``-th run, in a session of its own."""

    def __init__(self, tmp_path: Path, cfg: Path, at: int, *options: str, env: dict) -> None:
        gate = tmp_path / "gate.py"
        gate.write_text(GATE_JOB)
        self.waiting, self.go = tmp_path / "waiting", tmp_path / "go"
        self.env = {
            **os.environ,
            **env,
            "GATE_RUNS": str(tmp_path / "runs"),
            "GATE_AT": str(at),
            "GATE_WAITING": str(self.waiting),
            "GATE_GO": str(self.go),
        }
        self.command = [sys.executable, str(gate), str(FAKE_JOB), "{cfg}"]
        self.proc = subprocess.Popen(
            [*BISECT, str(cfg), *options, "--", *self.command],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
            start_new_session=True,
        )

    def held(self) -> None:
        wait_for(self.waiting)

    def release(self) -> tuple[int, str, str]:
        self.go.write_text("go")
        out, err = self.proc.communicate(timeout=300)
        return self.proc.returncode, out, err

    def cleanup(self) -> None:
        self.go.write_text("go")
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.communicate(timeout=60)


def recorded(cfg: Path) -> list[bytes | None]:
    history = History(cfg)
    return [history.content(v) for v in history.versions()]


def test_a_save_during_a_trial_is_kept_recorded_and_the_trial_does_not_count(tmp_path):
    """A review: the user's save during a bisection was overwritten by the next trial and by
    the put-back, with nothing of it in the history; the trial that ran with it was counted."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    gated = Gated(tmp_path, cfg, 4, RULES, env={"FAKE_GUILTY": "R005"})
    try:
        gated.held()  # trial 4, a search trial, is running
        cfg.write_bytes(USER_EDIT)  # the user saves an edit
        code, _, err = gated.release()
    finally:
        gated.cleanup()
    assert cfg.read_bytes() == USER_EDIT, err  # never overwritten
    assert code == 2, err
    assert str(cfg) in err and "trial 4" in err and "does not count" in err, err
    assert "trial 4 [" not in err  # not reported as a result either
    assert USER_EDIT in recorded(cfg)
    listed = fusion_switch("restore", str(cfg), "--list")
    number = re.search(r"recorded as version (\d+)", err)
    assert number and f"\n{int(number.group(1)):>4}  " in "\n" + listed.stdout, (err, listed)
    # the advice works: the file from before the bisection back, then --resume, which runs
    # trial 4 again (it did not count) and ends switching off the guilty rule
    before = re.search(r"restore \S+ --version (\d+)", err)
    assert before, err
    back = fusion_switch("restore", str(cfg), "--version", before.group(1), "--yes")
    assert back.returncode == 0 and cfg.read_bytes() == USER_CFG, back.stderr
    resumed = fusion_switch(
        "bisect", str(cfg), RULES, "--resume", "--", *gated.command, env=gated.env
    )
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr.count("(from the journal)") == 3, resumed.stderr
    assert json.loads(cfg.read_text())["Switch"]["GraphFusion"] == {"KeepMe": "on", "R005": "off"}


def test_a_save_during_a_run_that_ends_early_is_kept(tmp_path):
    """The same save while the first trial runs, on a job bad even with all fusion off (the
    bisection would end with exit 3 and put its base back over the user's file)."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    gated = Gated(tmp_path, cfg, 1, RULES, env={"FAKE_MODE": "always-bad"})
    try:
        gated.held()
        cfg.write_bytes(USER_EDIT)
        code, _, err = gated.release()
    finally:
        gated.cleanup()
    assert cfg.read_bytes() == USER_EDIT, err
    assert code == 2 and "does not count" in err, err
    assert USER_EDIT in recorded(cfg)


def test_a_save_during_parallel_trials_is_not_put_back_over(tmp_path):
    """With -j the trials run with copies, but the end of the bisection put the file from its
    start back over the user's save."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    gated = Gated(tmp_path, cfg, 1, RULES, "-j", "2", env={"FAKE_MODE": "always-bad"})
    try:
        gated.held()
        cfg.write_bytes(USER_EDIT)
        code, _, err = gated.release()
    finally:
        gated.cleanup()
    assert cfg.read_bytes() == USER_EDIT, err
    assert code == 2 and str(cfg) in err, err
    # the run again of a bad "all fusion off" is from the cfg itself (a job may read it, not
    # {cfg}): that write finds the save and stops, keeping it
    assert "was changed before trial 4" in err and "stopped without overwriting it" in err
    assert USER_EDIT in recorded(cfg)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_an_interrupted_trial_s_job_gets_sigterm_and_time_to_clean_up(tmp_path, jobs):
    """A review: one trial at a time, Ctrl-C, SIGTERM or SIGHUP to bisect SIGKILLed the job at
    once, so its own clean-up (a trap removing its scratch files) never ran; side by side it
    got SIGTERM and a grace period first."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    started, cleaned = tmp_path / "started", tmp_path / "cleaned"
    job = f"trap 'touch {cleaned}; exit 1' TERM; touch {started}; sleep 300 & wait; # {{cfg}}"
    proc = subprocess.Popen(
        [*BISECT, str(cfg), RULES, "-j", jobs, "--", "sh", "-c", job],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not started.exists():
            assert time.monotonic() < deadline, "the trial never started"
            time.sleep(0.02)
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 130
        assert cleaned.exists()
        assert cfg.read_bytes() == USER_CFG
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def test_a_second_ctrl_c_does_not_cut_the_clean_up_short(tmp_path):
    """A review: with trials side by side and a job that ignores SIGTERM, a second Ctrl-C a
    second after the first cut the clean-up short before its SIGKILL, and bisect waited for
    ever on jobs that never ended. Later signals are ignored while it cleans up."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    pids = tmp_path / "pids"
    job = f"trap '' TERM; echo $$ >> {pids}; sleep 300 & wait; wait # {{cfg}}"
    proc = subprocess.Popen(
        [*BISECT, str(cfg), RULES, "-j", "2", "--", "sh", "-c", job],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not pids.exists() or len(pids.read_text().split()) < 2:
            assert time.monotonic() < deadline, "the trials never started"
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 130
        assert all(gone(int(pid)) for pid in pids.read_text().split())
        assert cfg.read_bytes() == USER_CFG
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        for pid in pids.read_text().split() if pids.exists() else []:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(int(pid), signal.SIGKILL)


@pytest.mark.parametrize("sig", ["KILL", "TERM"])
def test_a_job_that_ends_the_bisection_as_it_starts_is_ended_too(tmp_path, sig):
    """A review: between the job's start and the moment bisect told its keeper (and its own
    list of running trials) about it, a signal to bisect left the job running for good (10
    of 20 under SIGTERM, 21 of 30 under SIGKILL). The job here signals bisect at once, in
    that window when nothing holds it back; five tries."""
    for attempt in range(5):
        folder = tmp_path / str(attempt)
        folder.mkdir()
        cfg = folder / "fusion_switch.cfg"
        cfg.write_bytes(USER_CFG)
        pids = folder / "pids"
        job = f"echo $$ >> {pids}; kill -{sig} $PPID; exec sleep 300 # {{cfg}}"
        proc = subprocess.Popen(
            [*BISECT, str(cfg), RULES, "--", "sh", "-c", job],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            proc.wait(timeout=60)
            started = [int(p) for p in pids.read_text().split()] if pids.exists() else []
            assert started, "the job never started"
            assert all(gone(pid) for pid in started), (attempt, started)
        finally:
            for pid in [int(p) for p in pids.read_text().split()] if pids.exists() else []:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_the_job_dies_with_a_bisection_killed_outright(tmp_path, jobs):
    """A review: `kill -9` of bisect left the user's job running (its own process group,
    nothing to end it), a child of the job orphaned with ppid 1."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    pids = tmp_path / "pids"
    job = f"sleep 300 & echo $! >> {pids}; echo $$ >> {pids}; wait"
    command = ["sh", "-c", job + " # {cfg}"]
    proc = subprocess.Popen(
        [*BISECT, str(cfg), RULES, "-j", jobs, "--", *command],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    started: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while len(started) < 2:
            assert time.monotonic() < deadline, "the job never started"
            time.sleep(0.02)
            started = [int(p) for p in pids.read_text().split()] if pids.exists() else []
        os.kill(proc.pid, signal.SIGKILL)  # the bisection only, as `kill -9 $BP` does
        proc.wait(timeout=60)
        assert all(gone(pid) for pid in started), started
    finally:
        for pid in [int(p) for p in pids.read_text().split()] if pids.exists() else []:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(
    ("env", "code"), [({"FAKE_GUILTY": "R005"}, 0), ({"FAKE_MODE": "always-bad"}, 3)]
)
def test_parallel_trials_leave_no_copies(tmp_path, env, code):
    """A review: `-j` left .fusion-switch/<cfg>.bisect-trials/slot-*/ after its run."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    done = fusion_switch(
        "bisect", str(cfg), RULES, "-j", "3", "--", sys.executable, str(FAKE_JOB), "{cfg}", env=env
    )
    assert done.returncode == code, done.stderr
    state = tmp_path / ".fusion-switch"
    assert not (state / "fusion_switch.cfg.bisect-trials").exists(), sorted(state.iterdir())
