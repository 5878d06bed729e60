"""`off`, `on`, `apply` and `restore` stopped while they write the configuration (a review):
SIGKILL, SIGTERM or SIGHUP during a slow ``fsync`` left ``.fusion_switch.cfg.<hex>.tmp``
beside the file for good, and a history version ("1 ... cli all fusion off") for a change
that was never written; with the disk full the history listed a change that never happened,
or kept an unrecorded ``v0001.before``.

Each case runs the real command as a subprocess whose ``os.fsync`` is wrapped: it stalls on
one call (the test then sends the signal) or fails with ENOSPC from one call on (a full
disk). Whatever call is hit, the history must list a version exactly when the file holds
that change, nothing fusion-switch did not record may lie in the history folder, no
temporary file may stay beside the configuration, and the next command must work with
``restore`` bringing back the user's bytes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_support import USER_CFG, fs, user_cfg

# Run as `python -c FAULTY off CFG --all`: the CLI with os.fsync wrapped as FS_FAULT says.
#   log:LOG              every call's file (as /proc names it) appended to LOG
#   stall:N:MARK         the Nth call creates MARK and sleeps until a signal ends it
#   stall-in:DIR:MARK    the first call on a file in DIR does the same
#   enospc:N             the Nth call and every later one fail with ENOSPC (a full disk)
FAULTY = r"""
import errno, os, sys, time
kind, _, rest = os.environ["FS_FAULT"].partition(":")
real, calls = os.fsync, [0]

def where(fd):
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return "?"

def stall(mark):
    with open(mark, "w") as fh:
        fh.write(str(os.getpid()))
    while True:
        time.sleep(3600)

def fsync(fd):
    calls[0] += 1
    if kind == "log":
        with open(rest, "a") as log:
            log.write(where(fd) + "\n")
    elif kind == "stall":
        nth, _, mark = rest.partition(":")
        if calls[0] == int(nth):
            stall(mark)
    elif kind == "stall-in":
        folder, _, mark = rest.rpartition(":")
        if os.path.dirname(where(fd)) == folder:
            stall(mark)
    elif kind == "enospc" and calls[0] >= int(rest):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    return real(fd)

os.fsync = fsync
from fusion_switch.cli import main
sys.exit(main())
"""

EXIT_BY = {signal.SIGKILL: -signal.SIGKILL, signal.SIGTERM: 143, signal.SIGHUP: 129}
SIGNALS = [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP]


def faulty(fault: str, *args: str | Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", FAULTY, *map(str, args)],
        env={**os.environ, "FS_FAULT": fault},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def stopped_in_fsync(proc: subprocess.Popen, mark: Path, signum: int) -> tuple[int, str]:
    """Wait for ``proc`` to stall in its wrapped fsync, send ``signum``; its status, stderr."""
    deadline = time.monotonic() + 120  # a guard against a hang, not a measurement
    while not mark.exists():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"finished without reaching the stalled fsync: {out} {err}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("never reached the stalled fsync")
        time.sleep(0.01)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err


def listed(cfg: Path) -> tuple[list[str], str]:
    """`restore --list`: the version lines, and what it said on stderr."""
    done = fs("restore", cfg, "--list")
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines()[1:] if line.strip()]
    return (lines if "no history yet" not in done.stdout else []), done.stderr


def temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.name.endswith((".tmp", ".part")))


def assert_consistent(cfg: Path) -> None:
    """The history lists a version exactly when the file holds that change; nothing stray."""
    versions, said = listed(cfg)
    assert "did not record" not in said, said
    assert temporaries(cfg.parent) == []
    if cfg.read_bytes() == USER_CFG:
        assert versions == [], "the history lists a change the file does not hold"
    else:
        assert json.loads(cfg.read_bytes())["Switch"]["GraphFusion"] == {"ALL": "off"}
        assert len(versions) == 1 and "all fusion off" in versions[0], versions


def assert_next_command_works(cfg: Path) -> None:
    """After whatever was left: 'off --all' again, one version, restore gives the bytes."""
    again = fs("off", cfg, "--all")
    assert again.returncode == 0, again.stderr
    versions, said = listed(cfg)
    assert len(versions) == 1, versions
    assert "did not record" not in said, said
    restored = fs("restore", cfg, "--yes")
    assert restored.returncode == 0, restored.stderr
    assert cfg.read_bytes() == USER_CFG
    assert temporaries(cfg.parent) == []


def fsync_calls(tmp_path: Path) -> list[str]:
    """The files one undisturbed 'off --all' syncs, in order (the calls the cases stall)."""
    folder = tmp_path / "count"
    folder.mkdir()
    cfg = user_cfg(folder)
    log = tmp_path / "fsync.log"
    proc = faulty(f"log:{log}", "off", cfg, "--all")
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return log.read_text().splitlines()


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_a_signal_while_the_cfg_is_written_leaves_no_temp_and_no_version(tmp_path, signum):
    cfg = user_cfg(tmp_path)
    mark = tmp_path / "stalled"
    proc = faulty(f"stall-in:{cfg.parent}:{mark}", "off", cfg, "--all")
    status, err = stopped_in_fsync(proc, mark, signum)
    assert status == EXIT_BY[signum], err
    if signum != signal.SIGKILL:
        assert "interrupted" in err and "Traceback" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".fusion-switch",
        "fusion_switch.cfg",
        "stalled",
    ]
    assert cfg.read_bytes() == USER_CFG
    versions, said = listed(cfg)
    assert versions == [] and "did not record" not in said, (versions, said)
    assert_next_command_works(cfg)


@pytest.mark.slow
def test_a_signal_at_any_fsync_leaves_the_history_true_to_the_file(tmp_path):
    calls = fsync_calls(tmp_path)
    assert any(os.path.dirname(c) == str(tmp_path / "count") for c in calls), calls
    for nth in range(1, len(calls) + 1):
        for signum in SIGNALS:
            folder = tmp_path / f"{nth}-{signal.Signals(signum).name}"
            folder.mkdir()
            cfg = user_cfg(folder)
            mark = folder / "stalled"
            proc = faulty(f"stall:{nth}:{mark}", "off", cfg, "--all")
            status, err = stopped_in_fsync(proc, mark, signum)
            mark.unlink()
            assert status == EXIT_BY[signum], (nth, err)
            assert_consistent(cfg)
            assert_next_command_works(cfg)


def test_a_full_disk_at_any_fsync_leaves_the_history_true_to_the_file(tmp_path):
    calls = fsync_calls(tmp_path)
    for nth in range(1, len(calls) + 1):
        folder = tmp_path / f"full-{nth}"
        folder.mkdir()
        cfg = user_cfg(folder)
        proc = faulty(f"enospc:{nth}", "off", cfg, "--all")
        out, err = proc.communicate(timeout=120)
        assert "Traceback" not in err, err
        if cfg.read_bytes() == USER_CFG:
            assert proc.returncode == 2 and "No space left" in err, (nth, out, err)
        else:
            assert proc.returncode == 0, (nth, err)
        assert_consistent(cfg)
        assert_next_command_works(cfg)


def test_restore_stopped_by_sigterm_changes_nothing(tmp_path):
    """`restore` writes the file the same way: stopped, it leaves the file and the history."""
    cfg = user_cfg(tmp_path)
    assert fs("off", cfg, "--all").returncode == 0
    all_off = cfg.read_bytes()
    mark = tmp_path / "stalled"
    proc = faulty(f"stall-in:{cfg.parent}:{mark}", "restore", cfg, "--yes")
    status, err = stopped_in_fsync(proc, mark, signal.SIGTERM)
    assert status == 143, err
    assert cfg.read_bytes() == all_off
    versions, said = listed(cfg)
    assert len(versions) == 1 and "did not record" not in said, (versions, said)
    assert temporaries(tmp_path) == []
    done = fs("restore", cfg, "--yes")
    assert done.returncode == 0, done.stderr
    assert cfg.read_bytes() == USER_CFG


def test_sighup_ignored_under_nohup_does_not_stop_the_write(tmp_path):
    """`nohup fusion-switch off ...`: SIGHUP stays ignored, the change is made."""
    cfg = user_cfg(tmp_path)
    mark = tmp_path / "stalled"
    proc = subprocess.Popen(
        [sys.executable, "-c", FAULTY, "off", str(cfg), "--all"],
        env={**os.environ, "FS_FAULT": f"stall-in:{cfg.parent}:{mark}"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),
    )
    deadline = time.monotonic() + 120
    while not mark.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGHUP)
    proc.send_signal(signal.SIGTERM)  # the stall ends only by a signal that is handled
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err  # SIGHUP did nothing; SIGTERM stopped it cleanly
    assert_consistent(cfg)
