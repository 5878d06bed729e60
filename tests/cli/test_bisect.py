"""`fusion-switch bisect` as a subprocess against fake jobs: finds every guilty rule within the
trial bound, refuses when fusion is not the cause, tolerates a flaky job with --repeat, resumes
an interrupted run without re-running trials, and leaves the cfg switching off exactly the
guilty rules (restorable byte for byte)."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.bisect_jobs import FAKE_JOB, gone

USER_CFG = b'{\n  "Switch": {\n    "GraphFusion": {\n      "KeepMe": "on"\n    }\n  }\n}\n'


def rules(n: int) -> list[str]:
    return [f"R{i:03d}" for i in range(n)]


def bisect(cfg: Path, *options: str, env: dict | None = None, job: list[str] | None = None):
    command = job or [sys.executable, str(FAKE_JOB), "{cfg}"]
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "fusion_switch",
            "bisect",
            str(cfg),
            *options,
            "--format",
            "json",
            "--",
            *command,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


def rule_option(names: list[str]) -> str:
    return "--rules=" + ",".join(f"GraphFusion:{r}" for r in names)


def switches(cfg: Path) -> dict:
    return json.loads(cfg.read_text())["Switch"]["GraphFusion"]


def trial_bound(n: int, k: int) -> int:
    return k * (math.ceil(math.log2(n)) + 1)


@pytest.mark.parametrize(
    ("n", "guilty"),
    [(10, ["R003"]), (48, ["R007", "R033"]), (200, ["R000", "R101", "R199"]), (64, ["R010"])],
)
def test_finds_every_guilty_rule_within_the_bound(tmp_path, n, guilty):
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    done = bisect(cfg, rule_option(rules(n)), env={"FAKE_GUILTY": ",".join(guilty)})
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(g["rule"] for g in result["guilty"]) == sorted(guilty)
    assert result["search_trials"] <= trial_bound(n, len(guilty)) == result["bound"]
    if n == 48:
        assert result["trials"] <= 30  # the figure, preflight included
    # the cfg switches off exactly the guilty rules and keeps the user's entry
    assert switches(cfg) == {"KeepMe": "on", **{g: "off" for g in guilty}}
    assert "trial 4" in done.stderr and "s per trial" in done.stderr  # progress shown
    restored = subprocess.run(
        [sys.executable, "-m", "fusion_switch", "restore", str(cfg), "--yes"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert restored.returncode == 0, restored.stderr
    assert cfg.read_bytes() == USER_CFG


def test_parallel_trials_use_per_trial_copies(tmp_path):
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    done = bisect(cfg, rule_option(rules(40)), "-j", "2", env={"FAKE_GUILTY": "R005,R030"})
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(g["rule"] for g in result["guilty"]) == ["R005", "R030"]
    assert switches(cfg) == {"KeepMe": "on", "R005": "off", "R030": "off"}
    # the command must name the trial's cfg when trials run side by side
    refused = bisect(cfg, rule_option(rules(4)), "-j", "2", job=[sys.executable, str(FAKE_JOB)])
    assert refused.returncode == 2 and "{cfg}" in refused.stderr


def test_bad_with_all_fusion_off_means_fusion_is_not_the_cause(tmp_path):
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    done = bisect(cfg, rule_option(rules(16)), env={"FAKE_MODE": "always-bad"})
    assert done.returncode == 3
    # a review: "fusion is not the cause" claimed more than the cfg switches
    assert "no rule this file switches is the cause" in done.stderr
    assert "TorchAir's pattern fusion" in done.stderr
    assert "trial 3" not in done.stderr  # stopped after the first trial, run again
    assert cfg.read_bytes() == USER_CFG  # untouched


def test_good_job_has_nothing_to_bisect(tmp_path):
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    done = bisect(cfg, rule_option(rules(8)), env={"FAKE_GUILTY": ""})
    assert done.returncode == 1 and "nothing to bisect" in done.stderr
    assert cfg.read_bytes() == USER_CFG


def test_guilty_rule_outside_the_candidates_is_reported(tmp_path):
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    done = bisect(cfg, rule_option(rules(8)), env={"FAKE_GUILTY": "KeepMe"})
    assert done.returncode == 3 and "not among the candidates" in done.stderr
    assert cfg.read_bytes() == USER_CFG


def test_metric_threshold_judges_trials(tmp_path):
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    done = bisect(
        cfg,
        rule_option(rules(20)),
        "--metric",
        r"accuracy=([0-9.]+)",
        "--threshold",
        "0.8",
        env={"FAKE_GUILTY": "R011", "FAKE_MODE": "metric-only"},
    )
    assert done.returncode == 0, done.stderr
    assert [g["rule"] for g in json.loads(done.stdout.splitlines()[-1])["guilty"]] == ["R011"]
    missing = bisect(
        cfg,
        rule_option(rules(4)),
        "--metric",
        r"top5=([0-9.]+)",
        "--threshold",
        "0.8",
        env={"FAKE_GUILTY": "R001"},
    )
    assert missing.returncode == 2 and "was not found" in missing.stderr


def test_a_fault_that_shows_only_sometimes_is_found_and_said_not_confirmed(tmp_path):
    """The fault shows on every other run: with --repeat 2 every search trial sees it, and
    R013 is found. A rule is confirmed only when every run with it alone on is bad, since a
    fault that shows sometimes looks like a job failing on its own (which made --repeat confirm
    innocent rules): R013 is named, not confirmed, and nothing is switched off."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    env = {"FAKE_GUILTY": "R013", "FAKE_MODE": "flaky", "FAKE_STATE": str(tmp_path / "n")}
    done = bisect(cfg, rule_option(rules(24)), "--repeat", "2", env=env)
    assert done.returncode == 3, done.stderr
    assert "could not decide: R013 (GraphFusion) found by the search" in done.stderr
    assert "shows only sometimes" in done.stderr and f"off {cfg} RULE" in done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["guilty"] == []
    assert cfg.read_bytes() == USER_CFG


def test_interrupted_run_resumes_without_rerunning_trials(tmp_path):
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    pids = tmp_path / "pids"
    names = rules(32)
    args = [
        sys.executable,
        "-m",
        "fusion_switch",
        "bisect",
        str(cfg),
        rule_option(names),
        "--",
        sys.executable,
        str(FAKE_JOB),
        "{cfg}",
    ]
    env = {**os.environ, "FAKE_GUILTY": "R020"}
    first = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)
    assert first.returncode == 0
    full = first.stderr.count("fusion-switch bisect: trial ")
    restore = [sys.executable, "-m", "fusion_switch", "restore", str(cfg), "--yes"]
    subprocess.run(restore, check=True, capture_output=True, timeout=60)
    assert cfg.read_bytes() == USER_CFG
    # the same run, interrupted (SIGTERM) during its 5th trial: a slow job from then on
    slow = {**env, "FAKE_MODE": "slow", "FAKE_STATE": str(pids), "FAKE_SLOW_FROM": "5"}
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True, env=slow)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not pids.exists() or len(pids.read_text().split()) < 5):
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "--resume" in err
    assert cfg.read_bytes() == USER_CFG  # put back while interrupted
    assert all(gone(int(pid)) for pid in pids.read_text().split())  # every trial ended
    resumed = subprocess.run(
        [*args[:5], "--resume", *args[5:]], capture_output=True, text=True, timeout=300, env=env
    )
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr.count("(from the journal)") == 4  # trials 1-4 are not run again
    ran_again = resumed.stderr.count("fusion-switch bisect: trial ") - 4
    assert ran_again == full - 4  # the 5th (interrupted) and later trials run once
    assert switches(cfg) == {"KeepMe": "on", "R020": "off"}


def test_unknown_candidate_and_missing_command_are_bad_input(tmp_path):
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    unknown = bisect(cfg, "--rules", "NoSuchFusionPassAnywhere")
    assert unknown.returncode == 2 and "not a rule in the catalogue" in unknown.stderr
    no_cmd = subprocess.run(
        [sys.executable, "-m", "fusion_switch", "bisect", str(cfg), "--rules", "X"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert no_cmd.returncode == 2 and "after '--'" in no_cmd.stderr
    assert "Traceback" not in unknown.stderr + no_cmd.stderr


def fusion_result(fired: list[str], unfired: list[str]) -> str:
    graph = {r: {"effect_times": "1", "match_times": "1"} for r in fired}
    graph.update({r: {"effect_times": "0", "match_times": "1"} for r in unfired})
    return json.dumps({"session_and_graph_id_0_0": {"graph_fusion": graph}})


def test_candidates_from_fusion_result(tmp_path):
    """Only rules that fired are candidates; --all-fired finds fusion_result.json by the cfg."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    fired = [f"Fired{i}" for i in range(12)]
    (tmp_path / "fusion_result.json").write_text(fusion_result(fired, ["NeverFired"]))
    done = bisect(cfg, "--all-fired", env={"FAKE_GUILTY": "Fired7"})
    assert done.returncode == 0, done.stderr
    assert "bisecting 12 candidate rules" in done.stderr
    assert switches(cfg) == {"KeepMe": "on", "Fired7": "off"}
    other = tmp_path / "elsewhere.json"
    other.write_text(fusion_result(["Only"], []))
    assert fs_restore(cfg).returncode == 0
    done = bisect(cfg, "--fusion-result", str(other), env={"FAKE_GUILTY": "Only"})
    assert done.returncode == 0 and switches(cfg) == {"KeepMe": "on", "Only": "off"}


def test_good_as_it_is_and_bad_with_every_candidate_off_is_said_inconsistent(tmp_path):
    """A review: a job good with the configuration as it is and bad with every candidate
    off (a stale compile cache) was "nothing to bisect" (exit 1), the contradiction unsaid."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    env = {"FAKE_MODE": "spurious", "FAKE_STATE": str(tmp_path / "n"), "FAKE_FAIL_RUNS": "3"}
    done = bisect(cfg, rule_option(rules(8)), env=env)
    assert done.returncode == 3, done.stderr
    assert "inconsistent" in done.stderr
    assert cfg.read_bytes() == USER_CFG


def test_a_command_that_cannot_start_leaves_nothing_to_resume(tmp_path):
    """A review: "cannot start" kept the journal and said to fix it and --resume, which a
    different command cannot do, and a plain run then asked for --resume."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    done = bisect(cfg, rule_option(rules(8)), job=["no-such-command-here", "{cfg}"])
    assert done.returncode == 2 and "cannot start" in done.stderr, done.stderr
    assert "--resume" not in done.stderr
    assert not list(tmp_path.rglob("*.bisect.json"))
    again = bisect(cfg, rule_option(rules(8)), env={"FAKE_GUILTY": "R003"})
    assert again.returncode == 0, again.stderr
    assert switches(cfg) == {"KeepMe": "on", "R003": "off"}


def test_a_full_disk_stops_the_bisection_with_a_message_and_the_file_back(
    tmp_path, monkeypatch, capsys
):
    """A review: the journal's write failing (the disk full, filled by the trials' logs)
    ended bisect with a traceback, exit 1."""
    import errno

    from fusion_switch.cli import main
    from fusion_switch.workflow.bisect_journal import Journal

    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    saves = []
    real_save = Journal.save

    def filling(journal):
        saves.append(1)
        if len(saves) > 4:
            raise OSError(errno.ENOSPC, "No space left on device", str(journal.path))
        real_save(journal)

    monkeypatch.setattr(Journal, "save", filling)
    monkeypatch.setenv("FAKE_GUILTY", "R003")
    status = main(
        ["bisect", str(cfg), rule_option(rules(8)), "--", sys.executable, str(FAKE_JOB), "{cfg}"]
    )
    err = capsys.readouterr().err
    assert status == 2, err
    assert "No space left on device" in err and "Traceback" not in err
    assert cfg.read_bytes() == USER_CFG


def test_a_read_only_cfg_is_refused_before_any_trial(tmp_path):
    """A review: a read-only cfg failed at the first trial with a traceback (exit 1) and left a
    journal that made the next run ask for --resume; with -j the whole bisection ran first."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    cfg.chmod(0o444)
    for jobs in ("1", "2"):
        done = bisect(cfg, rule_option(rules(8)), "-j", jobs, env={"FAKE_GUILTY": "R003"})
        assert done.returncode == 2, done.stderr
        assert "read-only" in done.stderr and "Traceback" not in done.stderr
        assert "trial 1" not in done.stderr
        assert not list(tmp_path.rglob("*.bisect.json"))
    assert cfg.read_bytes() == USER_CFG


def test_cfg_with_syntax_errors_is_bad_input(tmp_path):
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(b'{"Switch": {"GraphFusion": {"KeepMe": "on",}}')
    done = bisect(cfg, rule_option(rules(4)), env={"FAKE_GUILTY": "R001"})
    assert done.returncode == 2 and "syntax errors" in done.stderr
    assert "Traceback" not in done.stderr
    assert cfg.read_bytes() == b'{"Switch": {"GraphFusion": {"KeepMe": "on",}}'


def fs_restore(cfg: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fusion_switch", "restore", str(cfg), "--yes"],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _slow_bisect(cfg: Path, pids: Path, *extra: str) -> subprocess.Popen:
    """A bisection of 16 rules whose job is slow from its 3rd trial (the first two are all
    fusion off and the file as it is); returns once that trial runs (its pid in ``pids``)."""
    args = [sys.executable, "-m", "fusion_switch", "bisect", str(cfg), rule_option(rules(16))]
    env = {**os.environ, "FAKE_GUILTY": "R005", "FAKE_MODE": "slow", "FAKE_STATE": str(pids)}
    env["FAKE_SLOW_FROM"] = "3"
    proc = subprocess.Popen(
        [*args, *extra, "--", sys.executable, str(FAKE_JOB), "{cfg}"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not pids.exists() or len(pids.read_text().split()) < 3):
        time.sleep(0.05)
    assert cfg.read_bytes() != USER_CFG  # a trial's file is in place
    return proc


def test_a_closed_terminal_puts_the_configuration_back(tmp_path):
    """A review: SIGHUP (the terminal or the SSH session closed) ended bisect with the trial's
    file in place and the user's job running on."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    pids = tmp_path / "pids"
    proc = _slow_bisect(cfg, pids)
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert cfg.read_bytes() == USER_CFG
    assert all(gone(int(pid)) for pid in pids.read_text().split())


def test_a_second_bisection_of_the_same_cfg_is_refused_while_one_runs(tmp_path):
    """A review: two bisections of one cfg both ran; the second took the first's trial file
    for a save of the user's and recorded it, and with -j they shared trial copies and logs
    (wrong verdicts). The second is refused while the first holds the cfg."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    pids = tmp_path / "pids"
    proc = _slow_bisect(cfg, pids)
    try:
        for extra in ((), ("--resume",), ("-j", "2")):
            second = bisect(cfg, rule_option(rules(16)), *extra, env={"FAKE_GUILTY": "R005"})
            assert second.returncode == 2, second.stderr
            assert "another bisection" in second.stderr, second.stderr
        history = subprocess.run(
            [sys.executable, "-m", "fusion_switch", "restore", str(cfg), "--list"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert history.stdout.count("saved while a bisection ran") == 0, history.stdout
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    assert cfg.read_bytes() == USER_CFG


def test_after_a_kill_the_configuration_comes_back_from_the_history(tmp_path):
    """A review: after a SIGKILL mid-trial, restore said the file had no history, and the
    advice to delete the journal to start over lost the user's file for good."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    pids = tmp_path / "pids"
    proc = _slow_bisect(cfg, pids)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert cfg.read_bytes() != USER_CFG
    again = bisect(cfg, rule_option(rules(16)), env={"FAKE_GUILTY": "R005"})
    assert again.returncode == 2 and "--resume" in again.stderr
    assert "fusion-switch restore" in again.stderr, again.stderr
    resumed = bisect(cfg, rule_option(rules(16)), "--resume", env={"FAKE_GUILTY": "R005"})
    assert resumed.returncode == 2 and "fusion-switch restore" in resumed.stderr
    restore = [sys.executable, "-m", "fusion_switch", "restore", str(cfg), "--yes"]
    done = subprocess.run(restore, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert cfg.read_bytes() == USER_CFG
    resumed = bisect(cfg, rule_option(rules(16)), "--resume", env={"FAKE_GUILTY": "R005"})
    assert resumed.returncode == 0, resumed.stderr
    assert switches(cfg) == {"KeepMe": "on", "R005": "off"}


def test_resume_never_overwrites_an_edit_made_after_the_interrupt(tmp_path):
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    pids = tmp_path / "pids"
    proc = _slow_bisect(cfg, pids)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode == 130 and cfg.read_bytes() == USER_CFG
    edited = USER_CFG.replace(b'"KeepMe": "on"', b'"KeepMe": "on",\n      "HandEdit": "off"')
    cfg.write_bytes(edited)
    resumed = bisect(cfg, rule_option(rules(16)), "--resume", env={"FAKE_GUILTY": "R005"})
    assert resumed.returncode == 2, resumed.stderr
    assert "differs" in resumed.stderr
    assert cfg.read_bytes() == edited


def test_a_run_past_timeout_is_stopped_and_bad(tmp_path):
    """A review: a job that never ends made bisect wait for ever. With --timeout S a run is
    stopped after S seconds (its process group ended) and judged bad, its log saying so."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    pids = tmp_path / "pids"
    env = {"FAKE_MODE": "slow", "FAKE_STATE": str(pids), "FAKE_SLOW_FROM": "1", "FAKE_SLEEP": "600"}
    started = time.monotonic()
    done = bisect(cfg, rule_option(rules(4)), "--timeout", "1", env=env)
    assert time.monotonic() - started < 60
    assert done.returncode == 3, done.stderr
    # a review: the run past --timeout with all fusion off was a plain bad run, run again
    # (another timeout) and then "fusion is not the cause"; a job runs slower without fusion
    assert "ran past --timeout 1 s" in done.stderr and "raise --timeout" in done.stderr
    assert "not the cause" not in done.stderr and "off, again" not in done.stderr, done.stderr
    assert all(gone(int(pid)) for pid in pids.read_text().split())
    assert cfg.read_bytes() == USER_CFG
    for wrong in ("0", "-5", "nan"):
        refused = bisect(cfg, rule_option(rules(4)), "--timeout", wrong, env=env)
        assert refused.returncode == 2 and "--timeout" in refused.stderr, refused.stderr


def test_a_rule_found_only_by_runs_that_failed_on_their_own_is_not_switched_off(tmp_path):
    """A review: a job failing now and then for reasons of its own got innocent rules named
    guilty and switched off (exit 0). Each rule found is confirmed by one more run with only
    it on; one that runs good then is said, and not switched off."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    env = {"FAKE_MODE": "spurious", "FAKE_STATE": str(tmp_path / "n")}
    env["FAKE_FAIL_RUNS"] = "2,4,5,6"  # as it is, then the first halvings: no rule guilty
    done = bisect(cfg, rule_option(rules(8)), env=env)
    assert "not confirmed" in done.stderr, done.stderr
    # nothing proven to switch off: exit 3, "could not decide" (it was 1, the status of a job
    # already good, which a script would misread: a second review)
    assert done.returncode == 3, done.stderr
    assert "could not decide" in done.stderr
    assert cfg.read_bytes() == USER_CFG


def test_a_rule_a_spurious_failure_named_beside_the_guilty_one_is_not_kept(tmp_path):
    """A review: two spurious failures (one in the halving, one in the confirmation run with
    only that rule on) named an innocent rule beside the guilty one, exit 0, both switched
    off. Each rule kept must also make the job bad when it alone of the rules found is on;
    and once a rule found is not confirmed, the job is shown to fail on its own, so no
    single run of it is trusted: nothing is switched off (a second review: the rules left
    standing after such a run were an innocent one in 4 of 200 runs of a flaky job)."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    env = {"FAKE_MODE": "spurious", "FAKE_STATE": str(tmp_path / "n"), "FAKE_GUILTY": "R003"}
    env["FAKE_FAIL_RUNS"] = "5,12"  # found by a search over pairs: R001 named and confirmed
    done = bisect(cfg, rule_option(rules(8)), env=env)
    assert "not confirmed: R001" in done.stderr
    assert done.returncode == 3, done.stderr
    assert "could not decide" in done.stderr and "R003" in done.stderr  # still standing, said
    assert cfg.read_bytes() == USER_CFG


def test_a_rule_fe_forces_on_is_no_candidate(tmp_path):
    """A second review: a rule in the file's own ExceptionalPassOfO1Level was bisected, though
    FE keeps it on whatever its switch says (`off` refuses it), and the run ended "fusion is
    not the cause"."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(
        b'{"Switch": {"GraphFusion": {"KeepMe": "on"}}, "ExceptionalPassOfO1Level": ["R002"]}\n'
    )
    done = bisect(cfg, rule_option(rules(4)), env={"FAKE_GUILTY": "R001"})
    assert done.returncode == 2, done.stderr
    assert "ExceptionalPassOfO1Level" in done.stderr and "R002" in done.stderr


def test_a_job_that_starts_failing_whatever_the_configuration_names_no_rule(tmp_path):
    """A review: a job failing from its fourth run on (a device lost, a disk full) got every
    candidate "confirmed" guilty, exit 0, all switched off. The rules found switched off must
    make the job good again, in a run of its own; else the bisection is not sure."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    env = {"FAKE_MODE": "spurious", "FAKE_STATE": str(tmp_path / "n"), "FAKE_GUILTY": "R003"}
    env["FAKE_FAIL_RUNS"] = ",".join(str(n) for n in range(4, 200))
    done = bisect(cfg, rule_option(rules(8)), env=env)
    assert done.returncode == 3, done.stderr
    assert "still bad with" in done.stderr
    assert cfg.read_bytes() == USER_CFG


def test_a_guilty_rule_is_confirmed_and_switched_off(tmp_path):
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    done = bisect(cfg, rule_option(rules(8)), env={"FAKE_GUILTY": "R006"})
    assert done.returncode == 0, done.stderr
    assert "confirmed" in done.stderr and "not confirmed" not in done.stderr
    assert switches(cfg) == {"KeepMe": "on", "R006": "off"}


def test_a_job_that_exits_124_itself_is_a_bad_run_not_a_timeout(tmp_path):
    """A review: the runner took any exit status 124 for its own --timeout stop, so a job
    wrapped in GNU timeout (which exits 124) crashed bisect formatting a timeout of None."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    done = bisect(cfg, rule_option(rules(4)), job=["sh", "-c", "exit 124"])
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 3 and "timed out" not in done.stderr, done.stderr


def test_a_bisection_under_nohup_survives_the_hangup(tmp_path):
    """A review: `nohup fusion-switch bisect ... &` (SIGHUP ignored, so a long run survives
    the logout) was stopped by SIGHUP once bisect handled it like Ctrl-C."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    command = [sys.executable, "-m", "fusion_switch", "bisect", str(cfg), rule_option(rules(2))]
    proc = subprocess.Popen(
        [*command, "--", "sh", "-c", "sleep 1"],
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),
    )
    time.sleep(0.7)
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "nothing to bisect" in err, (proc.returncode, err)


def test_a_bisection_that_ends_leaves_the_recipe_and_restore_as_they_were(tmp_path):
    """A review of this round's diff: the version the bisection keeps at its start (for a
    SIGKILL) stayed the newest after it ended, so `restore` after `off --all` found the file
    "already as version 2 had it", and `apply` no longer saw the all-off step."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    subprocess.run([sys.executable, "-m", "fusion_switch", "off", str(cfg), "--all"], check=True)
    done = bisect(cfg, rule_option(rules(2)), job=["true"])
    assert done.returncode == 1  # good as it is: nothing to bisect
    restore = [sys.executable, "-m", "fusion_switch", "restore", str(cfg), "--yes"]
    assert subprocess.run(restore, capture_output=True, timeout=60).returncode == 0
    assert cfg.read_bytes() == USER_CFG


@pytest.mark.parametrize("failing_run", ["1", "3"])
def test_one_bad_preflight_run_is_run_again_before_a_claim(tmp_path, failing_run):
    """A review of bisect: one run of a job that failed on its own, with all fusion off (run
    1) or with every candidate off (run 3), was enough to say "fusion is not the cause" or
    "the guilty rule is not among the candidates" (10 and 11 times in 60 runs of a job failing
    20% of the time). Such a run is run again; good then, the bisection could not decide."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    env = {"FAKE_MODE": "spurious", "FAKE_STATE": str(tmp_path / "n"), "FAKE_GUILTY": "R003"}
    env["FAKE_FAIL_RUNS"] = failing_run
    done = bisect(cfg, rule_option(rules(4)), "-j", "1", env=env)
    assert done.returncode == 3, done.stderr
    assert "could not decide" in done.stderr, done.stderr
    assert "not the cause" not in done.stderr and "not among" not in done.stderr
    assert cfg.read_bytes() == USER_CFG


def test_with_repeat_a_rule_is_confirmed_only_when_every_run_is_bad(tmp_path):
    """Review 5 left: with --repeat N a confirmation was bad at its first bad run, so more runs
    made a job failing on its own more likely to confirm an innocent rule. Here runs 3, 6, 8
    and 10 fail on their own and name R000; its confirmation's first run (13) fails on its own
    too, its second is good: the rule is not confirmed, and nothing is switched off."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    env = {"FAKE_MODE": "spurious", "FAKE_STATE": str(tmp_path / "n")}
    env["FAKE_FAIL_RUNS"] = "3,6,8,10,13"
    done = bisect(cfg, rule_option(rules(8)), "--repeat", "2", "-j", "1", env=env)
    assert "not confirmed: R000" in done.stderr, done.stderr
    assert "bad only if all 2 runs are" in done.stderr
    assert done.returncode == 3 and "could not decide" in done.stderr, done.stderr
    assert cfg.read_bytes() == USER_CFG


def test_with_repeat_a_preflight_claim_needs_every_run_bad(tmp_path):
    """With --repeat 2 the run again of a bad "all fusion off" was bad at its first bad run:
    two failures of the job's own (runs 1 and 2) said "fusion is not the cause", though the
    next run with all fusion off is good."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    env = {"FAKE_MODE": "spurious", "FAKE_STATE": str(tmp_path / "n"), "FAKE_GUILTY": "R003"}
    env["FAKE_FAIL_RUNS"] = "1,2"
    done = bisect(cfg, rule_option(rules(4)), "--repeat", "2", "-j", "1", env=env)
    assert done.returncode == 3, done.stderr
    assert "could not decide" in done.stderr and "not the cause" not in done.stderr
    assert cfg.read_bytes() == USER_CFG


def test_a_confirmed_rule_with_repeat_ran_bad_in_every_run(tmp_path):
    """The other side: a rule guilty in every run is confirmed with --repeat 3 and switched
    off, its confirmation run three times."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    done = bisect(cfg, rule_option(rules(8)), "--repeat", "3", env={"FAKE_GUILTY": "R006"})
    assert done.returncode == 0, done.stderr
    assert "confirmed: R006" in done.stderr and "not confirmed" not in done.stderr
    assert "[confirm R006: only it on, bad only if all 3 runs are]: bad" in done.stderr
    assert switches(cfg) == {"KeepMe": "on", "R006": "off"}


GE_PASSES = ["AInplaceAddFusionPass", "AInplaceSubFusionPass"]  # REG_FUSION_PASS: JSON only


def test_a_ge_pass_a_line_format_file_leaves_on_stays_on_in_the_trials(tmp_path):
    """Review 5 left: a trial that switched a GE pass off rewrote a line-format file as JSON,
    where the file's own `AInplaceAddFusionPass:off` (ignored by GE as it was) took effect, so
    the trials labelled "on: AInplaceAddFusionPass" ran it off. The guilty pass, on in the run
    as it is, was never on in a trial: the search contradicted itself and named nothing. The
    trials now keep such a pass on, as the run as it is had it; the final file, JSON, says that
    GE now reads the lines the user wrote."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(b"AInplaceAddFusionPass:off\nAInplaceSubFusionPass:off\nR000:on\n")
    env = {"FAKE_GUILTY": "AInplaceAddFusionPass", "FAKE_GE": ",".join(GE_PASSES)}
    done = bisect(cfg, rule_option([*GE_PASSES, "R000", "R001"]), "-j", "1", env=env)
    assert done.returncode == 0, done.stderr
    assert [g["rule"] for g in json.loads(done.stdout.splitlines()[-1])["guilty"]] == [
        "AInplaceAddFusionPass"
    ]
    assert switches(cfg)["AInplaceAddFusionPass"] == "off"
    assert "it is now JSON" in done.stdout and "exactly" not in done.stdout, done.stdout
    assert "GE now switches AInplaceSubFusionPass off too" in done.stdout


def test_with_j_a_job_that_reads_the_cfg_itself_is_not_said_free_of_fusion(tmp_path):
    """A review of the wiring: with -j N each trial's copy is given as {cfg}, but a job wired
    with the cfg's own path (as `wire` printed it) read the file as it is in every trial, and
    the bisection said "fusion is not the cause". The run again of a bad "all fusion off" now
    runs from the cfg itself: good there, the job does not read {cfg}, and that is said."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    job = [sys.executable, str(FAKE_JOB), str(cfg), "--unused={cfg}"]
    done = bisect(cfg, rule_option(rules(4)), "-j", "2", env={"FAKE_GUILTY": "R001"}, job=job)
    assert done.returncode == 3, done.stderr
    assert "is the cause" not in done.stderr.replace("may be the cause", "")
    assert "does not read {cfg}" in done.stderr, done.stderr
    assert cfg.read_bytes() == USER_CFG
