"""`fusion-switch bisect` as a child process, for the editor (like job.py does for compare).

Progress arrives as JSON lines on the child's stderr, the result as one JSON line on stdout.
Cancelling sends SIGTERM to the child's process group first: the bisection then stops its
trials, puts the configuration back and keeps its journal (so it can be resumed); whatever is
still alive a few seconds later is killed. No protocol here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .job import read_child_stderr

CANCEL_GRACE = 5.0
# the pid of the language server that started a bisection, which it must not outlive
SERVER_VARIABLE = "FUSION_SWITCH_BISECT_SERVER"


@dataclass(frozen=True)
class BisectRequest:
    cfg: Path
    command: Sequence[str]
    rules: Sequence[str] = ()
    fusion_result: str | None = None
    all_fired: bool = False
    repeat: int = 1
    metric: str | None = None
    threshold: float | None = None
    lower_is_better: bool = False
    jobs: int = 1
    resume: bool = False
    timeout: float | None = None  # seconds a run may take (a job that hangs)

    def argv(self, python: str | None = None) -> list[str]:
        out = [python or sys.executable, "-m", "fusion_switch", "bisect", os.fspath(self.cfg)]
        if self.rules:
            out.append("--rules=" + ",".join(self.rules))
        elif self.fusion_result:
            out += ["--fusion-result", self.fusion_result]
        elif self.all_fired:
            out.append("--all-fired")
        if self.repeat > 1:
            out += ["--repeat", str(self.repeat)]
        if self.metric is not None and self.threshold is not None:
            out += ["--metric", self.metric, "--threshold", repr(self.threshold)]
            if self.lower_is_better:
                out.append("--lower-is-better")
        if self.jobs > 1:
            out += ["-j", str(self.jobs)]
        if self.resume:
            out.append("--resume")
        if self.timeout is not None:
            out += ["--timeout", repr(self.timeout)]
        return [*out, "--progress", "jsonl", "--format", "json", "--", *self.command]


@dataclass
class BisectOutcome:
    """`status`: "found", "no-result", "cancelled" or "failed"."""

    status: str
    exit_code: int | None = None
    result: dict = field(default_factory=dict)
    message: str = ""
    stderr_tail: list[str] = field(default_factory=list)


class BisectJob:
    def __init__(
        self,
        request: BisectRequest,
        on_progress: Callable[[int, int, str], None] | None = None,
        *,
        python: str | None = None,
    ) -> None:
        self.request = request
        self.on_progress = on_progress
        self.argv = request.argv(python)
        self.cancelled = False
        self._process: asyncio.subprocess.Process | None = None
        self._killer: asyncio.Task | None = None

    def cancel(self) -> None:
        """Ask the bisection to stop (it restores the configuration), then make sure."""
        self.cancelled = True
        process = self._process
        if process is None or process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGTERM)
        if self._killer is None:
            self._killer = asyncio.get_running_loop().create_task(self._kill_later(process))

    async def _kill_later(self, process: asyncio.subprocess.Process) -> None:
        try:
            await asyncio.wait_for(process.wait(), CANCEL_GRACE)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)

    async def run(self) -> BisectOutcome:
        try:
            self._process = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                # in its own session, it ends with this process as Ctrl-C ends it (the job
                # stopped, the configuration put back): it outlived a server killed
                # mid-trial, with the user's job (a review)
                env={**os.environ, SERVER_VARIABLE: str(os.getpid())},
            )
        except OSError as exc:
            return BisectOutcome("failed", message=f"cannot start {self.argv[0]}: {exc}")
        if self.cancelled:
            self.cancel()
        tail: list[str] = []
        try:
            stdout, _ = await asyncio.gather(
                self._process.stdout.read(), self._read_stderr(self._process.stderr, tail)
            )
            code = await self._process.wait()
        except asyncio.CancelledError:
            self.cancel()
            raise
        if self._killer is not None:
            await self._killer
        result = _last_json(stdout)
        if self.cancelled or code == 130:
            return BisectOutcome("cancelled", code, result, "bisection cancelled", tail)
        if result.get("status") in ("found", "no-result"):
            message = result.get("message", "") or ""
            return BisectOutcome(result["status"], code, result, message, tail)
        errors = [line for line in tail if "bisect:" in line] or tail
        return BisectOutcome(
            "failed", code, result, errors[-1] if errors else f"exit status {code}", tail
        )

    async def _read_stderr(self, stream: asyncio.StreamReader, tail: list[str]) -> None:
        await read_child_stderr(stream, tail, self)


def _last_json(stdout: bytes) -> dict:
    for line in reversed(stdout.decode("utf-8", "replace").splitlines()):
        line = line.strip()
        if line.startswith("{"):
            with contextlib.suppress(ValueError):
                data = json.loads(line)
                if isinstance(data, dict):
                    return data
    return {}
