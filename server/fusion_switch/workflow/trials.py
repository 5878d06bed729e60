"""One bisection trial: run the user's command with a given configuration and judge the run.

The command runs in its own process group (so that stopping a trial also stops everything the
job started: launchers, data loader workers, the compiler), with its output going to a log file
kept next to the configuration. The keeper (bisect_keeper.py) ends those groups when the
bisection itself is killed. `{cfg}` in the command is replaced by the trial's configuration
path, which is also in the environment as FUSION_SWITCH_CFG.

Judging: a run is bad when it exits non-zero; with a metric (a regular expression whose first
group, or whole match, is a number; the last match in the output counts), also when the value is
on the wrong side of the threshold. A trial of several runs (--repeat) is bad as soon as one run
is bad: a fault that shows only sometimes is still a fault. A run that backs a claim (a rule
confirmed, "no rule this file switches is the cause") is bad only when every run is: counted
bad at its first bad run, more runs made a job failing on its own likelier to confirm an
innocent rule.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .bisect_keeper import Keeper

OUTPUT_READ_LIMIT = 8 * 1024 * 1024  # tail of the log searched for the metric
KILL_GRACE = 3.0
CFG = "{cfg}"
CFG_VARIABLE = "FUSION_SWITCH_CFG"  # the trial's configuration path, in every trial's environment


def shell_command(line: str) -> list[str]:
    """A shell command line as typed (variables, pipes, quotes), run by ``sh -c``, its ``{cfg}``
    made the trial's path whatever it holds: outside quotes ``"${FUSION_SWITCH_CFG}"``, inside
    double quotes ``${FUSION_SWITCH_CFG}``, inside single quotes left for :meth:`Runner.argv`
    to paste (a review: pasted unquoted, a path with a space split in two and every trial
    failed; quoted blindly, a ``{cfg}`` the user had quoted broke)."""
    out: list[str] = []
    quote = ""
    i = 0
    while i < len(line):
        if line.startswith(CFG, i):
            out.append({"": f'"${{{CFG_VARIABLE}}}"', '"': f"${{{CFG_VARIABLE}}}", "'": CFG}[quote])
            i += len(CFG)
            continue
        char = line[i]
        if char == "\\" and quote != "'" and i + 1 < len(line):  # an escaped character
            out.append(line[i : i + 2])
            i += 2
            continue
        if not quote and char in "'\"":
            quote = char
        elif char == quote:
            quote = ""
        out.append(char)
        i += 1
    return ["sh", "-c", "".join(out)]


class TrialError(Exception):
    """A trial could not be judged (command not found, metric missing); stops the bisection."""


@dataclass(frozen=True)
class Judge:
    metric: re.Pattern | None = None
    threshold: float | None = None
    lower_is_better: bool = False

    def describe(self) -> str:
        if self.metric is None:
            return "bad when the command exits non-zero"
        side = "above" if self.lower_is_better else "below"
        return (
            f"bad when the command exits non-zero or /{self.metric.pattern}/ is {side} "
            f"{self.threshold:g} or not a number"
        )

    def verdict(self, code: int, output: str, log: Path) -> tuple[bool, float | None]:
        """(bad, metric value)."""
        if self.metric is None:
            return code != 0, None
        matches = list(self.metric.finditer(output))
        if not matches:
            if code != 0:
                return True, None
            raise TrialError(
                f"the metric /{self.metric.pattern}/ was not found in the output of the "
                f"command (log: {log}); check the --metric expression"
            )
        last = matches[-1]
        text = last.group(1) if last.groups() else last.group(0)
        try:
            value = float(text)
        except (TypeError, ValueError):
            raise TrialError(
                f"the metric /{self.metric.pattern}/ matched {text!r}, which is not a number "
                f"(log: {log}); put the number in the first group: e.g. 'acc=([0-9.]+)'"
            ) from None
        assert self.threshold is not None
        worse = value > self.threshold if self.lower_is_better else value < self.threshold
        # NaN compares False with any threshold; a NaN loss is the classic sign of a fusion bug
        return code != 0 or worse or math.isnan(value), value


@dataclass
class TrialResult:
    bad: bool
    runs: list[dict] = field(default_factory=list)  # {"exit", "metric", "seconds", "log"}
    seconds: float = 0.0

    def to_json(self) -> dict:
        return {"bad": self.bad, "runs": self.runs, "seconds": self.seconds}

    @classmethod
    def from_json(cls, obj: dict) -> TrialResult:
        return cls(bool(obj["bad"]), list(obj.get("runs") or []), float(obj.get("seconds", 0)))


class Runner:
    """Runs trials; `stop()` (from a signal handler or another thread) kills every running
    trial's process group at once."""

    def __init__(
        self,
        command: Sequence[str],
        judge: Judge,
        repeat: int = 1,
        timeout: float | None = None,
        owner: tuple[int, int] | None = None,
    ) -> None:
        self.command = list(command)
        self.judge = judge
        self.repeat = max(1, repeat)
        self.timeout = timeout  # a run past it is stopped and bad (a job that hangs)
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen] = set()
        self.stopped = False
        self.keeper = Keeper()  # ends the running trials if this process is killed
        self.owner = owner  # of the trials' files (root's bisection of a user's file: the user)

    def close(self) -> None:
        """No more trials: the keeper ends."""
        self.keeper.close()

    def argv(self, cfg: Path) -> list[str]:
        return [part.replace(CFG, os.fspath(cfg)) for part in self.command]

    def run(self, cfg: Path, log_stem: Path, every: bool = False) -> TrialResult:
        """The trial's runs, bad at the first bad run; with ``every``, good at the first good
        run (bad only when all ``repeat`` runs are)."""
        start = time.monotonic()
        runs: list[dict] = []
        bad = every
        for i in range(self.repeat):
            log = log_stem.with_name(f"{log_stem.name}-run{i + 1}.log")
            code, seconds, timed_out = self._run_once(cfg, log)
            output = _tail(log)
            run_bad, value = (True, None) if timed_out else self.judge.verdict(code, output, log)
            runs.append(
                {"exit": code, "metric": value, "seconds": round(seconds, 3), "log": str(log)}
            )
            if timed_out:
                runs[-1]["timed_out"] = True
            if run_bad != every:
                bad = run_bad
                break  # one bad run decides the trial (one good run, with every)
        return TrialResult(bad, runs, round(time.monotonic() - start, 3))

    def stop(self) -> None:
        self.stopped = True
        with self._lock:
            running = list(self._running)
        for process in running:
            _kill_group(process, signal.SIGTERM)
        deadline = time.monotonic() + KILL_GRACE
        for process in running:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(max(0.0, deadline - time.monotonic()))
            _kill_group(process, signal.SIGKILL)

    def _start_held(self, argv: list[str], env: dict, out, gate: int) -> subprocess.Popen:
        """The job's process, held at the gate (:data:`_GATE`) in a session of its own."""
        try:
            return subprocess.Popen(
                ["/bin/sh", "-c", _GATE, "fusion-switch-trial", *argv],
                stdin=gate,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise TrialError(f"cannot start {argv[0]!r}: {exc.strerror or exc}") from None
        finally:
            os.close(gate)

    def _wait(self, process: subprocess.Popen, out) -> tuple[int, bool]:
        """(exit status, stopped at --timeout)."""
        try:
            return process.wait(self.timeout), False
        except subprocess.TimeoutExpired:  # stopped as Ctrl-C stops it, then bad
            _kill_group(process, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(KILL_GRACE)
            out.write(
                f"\nfusion-switch bisect: stopped after {self.timeout:g} s (--timeout)\n".encode()
            )
            return TIMED_OUT, True

    def _run_once(self, cfg: Path, log: Path) -> tuple[int, float, bool]:
        """(exit status, seconds, stopped at --timeout): a flag of its own, as a job wrapped
        in GNU timeout exits 124 itself."""
        if self.stopped:
            raise KeyboardInterrupt
        env = dict(os.environ, **{CFG_VARIABLE: os.fspath(cfg)})
        argv = self.argv(cfg)
        start = time.monotonic()
        timed_out = False
        self.keeper.start()
        _check_startable(argv, env)
        with open(log, "wb") as out:
            if self.owner is not None:
                os.fchown(out.fileno(), *self.owner)
            gate_read, gate_write = os.pipe()
            try:
                process = self._start_held(argv, env, out, gate_read)
                try:
                    # the job runs only once the keeper and stop() know its group: between its
                    # start and watch(), a signal to bisect left it running for good (a review)
                    self.keeper.watch(process.pid)
                    with self._lock:
                        self._running.add(process)
                    if self.stopped:
                        raise KeyboardInterrupt
                    os.write(gate_write, b"go\n")
                    code, timed_out = self._wait(process, out)
                finally:
                    with self._lock:
                        self._running.discard(process)
                    if process.poll() is None:  # interrupted: SIGTERM and a grace first, as
                        # stop() gives it (a review: its own clean-up never ran)
                        _kill_group(process, signal.SIGTERM)
                        with contextlib.suppress(subprocess.TimeoutExpired):
                            process.wait(KILL_GRACE)
                    _kill_group(process, signal.SIGKILL)  # leftovers of a finished job
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        process.wait(KILL_GRACE)  # reap it, also when interrupted
                    self.keeper.forget(process.pid)
            finally:
                os.close(gate_write)  # a held job that was never let go reads the end: exits
        if self.stopped:
            raise KeyboardInterrupt
        return code, time.monotonic() - start, timed_out


TIMED_OUT = 124  # a run stopped at --timeout (as GNU timeout exits)
# The job's first process waits for a line on the gate (its stdin) and then becomes the job, its
# stdin /dev/null; at the end of the file (bisect gone, or stopped before it let the job go) it
# exits unrun.
_GATE = 'IFS= read -r go || exit 125; exec "$@" </dev/null'


def _check_startable(argv: list[str], env: dict) -> None:
    """TrialError where the command cannot be started, as Popen said it before the job was
    held at a gate (the shell would run a bad trial of exit 127 instead)."""
    program = argv[0] if argv else ""
    path = env.get("PATH", os.defpath)
    if os.sep in program:
        exists = os.path.isfile(program)
        runnable = exists and os.access(program, os.X_OK)
    else:
        exists = bool(program) and shutil.which(program, mode=os.F_OK, path=path) is not None
        runnable = exists and shutil.which(program, path=path) is not None
    if not exists:
        raise TrialError(f"cannot start {program!r}: No such file or directory")
    if not runnable:
        raise TrialError(f"cannot start {program!r}: Permission denied")


def _kill_group(process: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(process.pid, sig)


def _tail(path: Path) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - OUTPUT_READ_LIMIT))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
