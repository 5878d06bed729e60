"""One comparison run as a child process (`python -m fusion_switch compare ... --progress jsonl`).

Why a process and not a thread: the engine is numpy-heavy and may start worker processes; a
crash, a hang or a kill must not take the language server down, and cancelling must free the
CPU at once. The child runs in its own process group so that cancelling also ends the engine's
workers. Progress arrives as JSON lines on the child's stderr; other stderr lines are kept to
explain a failure. No protocol here: the server turns `on_progress` calls into `$/progress`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

# Exit statuses of `fusion-switch compare` (see cli/compare.py).
NO_SUSPECT, SUSPECTS, BAD_INPUT, EVIDENCE_MISSING, INTERRUPTED = 0, 1, 2, 3, 130
# a run that wrote its summary: its verdict, complete or not (evidence missing: said in it)
FINISHED = (NO_SUSPECT, SUSPECTS, EVIDENCE_MISSING)
STDERR_KEPT = 40  # last non-progress stderr lines kept for the error message
_EXIT_POLL_SECONDS = 0.1
_PIPE_GRACE_SECONDS = 5.0  # after the child exits, for its output to be read
CANCEL_GRACE_SECONDS = 5.0  # after SIGTERM, for the child to clean up before SIGKILL


@dataclass(frozen=True)
class ComparePaths:
    on_dump: Path
    off_dump: Path
    on_graph: Path
    off_graph: Path
    output: Path

    def problems(self) -> list[str]:
        """What is missing, one sentence per path (empty when all inputs exist)."""
        out = []
        for name, path, folder in (
            ("onDump", self.on_dump, True),
            ("offDump", self.off_dump, True),
            ("onGraph", self.on_graph, False),
            ("offGraph", self.off_graph, False),
        ):
            if folder and not path.is_dir():
                out.append(f"{name} {path}: no such folder (expected a dump folder)")
            elif not folder and not path.is_file():
                out.append(f"{name} {path}: no such file (expected a graph JSON or .txt)")
        return out


@dataclass
class JobOutcome:
    """How the run ended. `status`: "done", "cancelled" or "failed". A finished run's
    `summary` is what the child reported on stdout about *this* run, and `kind` what it is:
    "tensors" (a tensor comparison with its verdict), "statistics" (statistics dumps: a first
    divergence, no rule blamed) or "ranks" (`--rank all`: one result per rank)."""

    status: str
    exit_code: int | None = None
    summary: dict | None = None
    message: str = ""
    stderr_tail: list[str] = field(default_factory=list)
    kind: str = "tensors"


ProgressCallback = Callable[[int, int, str], None]


def command_line(
    paths: ComparePaths,
    python: str | None = None,
    memory_budget: str = "",
    workers: int = 0,
    rank: str = "",
    iteration: str = "",
    step: str = "",
) -> list[str]:
    """The `compare` run: JSON summary on stdout, progress as JSON lines on stderr;
    ``memory_budget`` as the user typed it (empty: no limit); ``workers`` comparing
    processes (0: compare's default, one per core); ``rank`` and ``iteration`` the dump
    trees' rank (``0`` or ``node0/0``, as ``--rank`` takes it) and iteration to compare, and
    ``step`` their training step (``--step``; empty: the only one there)."""
    limits = ["--memory-budget", memory_budget] if memory_budget else []
    limits += ["--workers", str(workers)] if workers else []
    limits += ["--rank", rank] if rank else []
    limits += ["--iteration", iteration] if iteration else []
    limits += ["--step", step] if step else []
    return [
        python or sys.executable,
        "-m",
        "fusion_switch",
        "compare",
        "-m",
        os.fspath(paths.on_dump),
        "-g",
        os.fspath(paths.off_dump),
        "-f",
        os.fspath(paths.on_graph),
        "-cf",
        os.fspath(paths.off_graph),
        "-out",
        os.fspath(paths.output),
        "--format",
        "json",
        "--progress",
        "jsonl",
        *limits,
    ]


async def read_child_stderr(stream: asyncio.StreamReader, tail: list[str], job) -> None:
    """Read a child's stderr to the end: progress lines go to ``job.on_progress`` (unless the
    job was cancelled), other non-empty lines are kept in ``tail`` (the last STDERR_KEPT) to
    explain a failure. Shared by the compare job and the bisect job."""
    while True:
        raw = await stream.readline()
        if not raw:
            return
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        progress = parse_progress(line)
        if progress is not None:
            if job.on_progress is not None and not job.cancelled:
                job.on_progress(*progress)
            continue
        if line.strip():
            tail.append(line)
            del tail[:-STDERR_KEPT]


def parse_progress(line: str) -> tuple[int, int, str] | None:
    """`{"done": 3, "total": 9, "message": "..."}` → (3, 9, "..."); None for any other line."""
    if not line.startswith("{"):
        return None
    try:
        data = json.loads(line)
        done, total = int(data["done"]), int(data["total"])
    except (ValueError, KeyError, TypeError):
        return None
    return done, total, str(data.get("message", ""))


class CompareJob:
    """Start with `await run()`; `cancel()` from anywhere on the loop stops it."""

    def __init__(
        self,
        paths: ComparePaths,
        on_progress: ProgressCallback | None = None,
        *,
        python: str | None = None,
        env: dict[str, str] | None = None,
        memory_budget: str = "",
        workers: int = 0,
        rank: str = "",
        iteration: str = "",
        step: str = "",
    ) -> None:
        self.paths = paths
        self.on_progress = on_progress
        self.argv = command_line(paths, python, memory_budget, workers, rank, iteration, step)
        self.env = env
        self.cancelled = False
        self._process: asyncio.subprocess.Process | None = None
        self._kill_timer: asyncio.TimerHandle | None = None

    def cancel(self) -> None:
        """Stop the run; no results are published. The child gets SIGTERM, which it handles
        like Ctrl-C (stops its workers, removes its temporary file); whatever of its process
        group is still there :data:`CANCEL_GRACE_SECONDS` later is killed."""
        self.cancelled = True
        process = self._process
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # not on the event loop: no timer, kill now
                self._kill_now()
            else:
                self._kill_timer = loop.call_later(CANCEL_GRACE_SECONDS, self._kill_now)

    def _kill_now(self) -> None:
        process = self._process
        if process is None:
            return
        _kill_group(process.pid)
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()

    async def run(self) -> JobOutcome:
        try:
            self._process = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self.env,
                start_new_session=True,
            )
        except OSError as exc:
            return JobOutcome("failed", message=f"cannot start {self.argv[0]}: {exc}")
        if self.cancelled:  # cancelled while starting
            self.cancel()
        tail: list[str] = []
        try:
            stdout, code = await self._collect(tail)
        except asyncio.CancelledError:
            self.cancel()
            raise
        if self._kill_timer is not None:  # the child ended: its pid may be reused from now on
            self._kill_timer.cancel()
        if self.cancelled or code == INTERRUPTED:
            return JobOutcome("cancelled", code, message="comparison cancelled")
        if code in FINISHED:
            return finished(code, stdout, tail)
        errors = [line for line in tail if "error" in line.lower()] or tail
        if code == BAD_INPUT:
            detail = _verdict(stdout) or (errors[-1] if errors else "the inputs cannot be compared")
            return JobOutcome("failed", code, message=detail, stderr_tail=tail)
        reason = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
        detail = errors[-1] if errors else "no error message"
        return JobOutcome(
            "failed",
            code,
            message=f"the comparison process ended unexpectedly ({reason}): {detail}",
            stderr_tail=tail,
        )

    async def _collect(self, tail: list[str]) -> tuple[bytes, int]:
        """The child's stdout and exit status, reading progress from stderr meanwhile.

        Once the child has exited, whatever is left of its process group is killed: a child
        killed with SIGKILL cannot stop its workers, and they hold its pipes open, so waiting
        for end-of-file (or for ``Process.wait``, which waits for it too) would hang."""
        process = self._process
        readers = asyncio.ensure_future(
            asyncio.gather(process.stdout.read(), self._read_stderr(process.stderr, tail))
        )
        try:
            while not readers.done() and process.returncode is None:
                await asyncio.wait({readers}, timeout=_EXIT_POLL_SECONDS)
            if not readers.done():
                _kill_group(process.pid)
                await asyncio.wait({readers}, timeout=_PIPE_GRACE_SECONDS)
            if readers.done():
                stdout = readers.result()[0]
                code = await process.wait()
            else:
                stdout, code = b"", process.returncode
        finally:
            if not readers.done():
                readers.cancel()
                # read its end, or asyncio logs "exception was never retrieved" (a review)
                readers.add_done_callback(_retrieved)
        return stdout, code

    async def _read_stderr(self, stream: asyncio.StreamReader, tail: list[str]) -> None:
        await read_child_stderr(stream, tail, self)


def finished(code: int, stdout: bytes, tail: list[str]) -> JobOutcome:
    """A run that ended with a result: what the child printed on stdout (`--format json`).

    Never a file of the output folder read by its name: that folder is reused from run to run,
    and a run of another kind (statistics dumps write `stats_summary.json`) left the previous
    run's `summary.json` there, which the editor then showed as the new verdict (a review)."""
    data = reported(stdout)
    kind = None if data is None else result_kind(data)
    if data is None or kind is None:
        return JobOutcome(
            "failed",
            code,
            message=(
                f"the comparison ended (exit status {code}) without reporting its result on "
                "stdout; nothing is shown rather than an older run's summary"
            ),
            stderr_tail=tail,
        )
    return JobOutcome("done", code, summary=data, kind=kind)


def reported(stdout: bytes) -> dict | None:
    """The JSON object a `compare --format json` run printed on stdout, or None."""
    try:
        data = json.loads(stdout.decode("utf-8", "replace"))
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def result_kind(data: dict) -> str | None:
    """ "statistics", "ranks" or "tensors" for what `compare` reports; None: none of them."""
    if data.get("kind") == "statistics":
        return "statistics"
    if isinstance(data.get("ranks"), list):
        return "ranks"
    if isinstance(data.get("verdict"), str):
        return "tensors"
    return None


def _retrieved(future: asyncio.Future) -> None:
    if not future.cancelled():
        future.exception()


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _verdict(stdout: bytes) -> str:
    """The verdict of a run that wrote a summary but compared nothing (exit status 2)."""
    try:
        data = json.loads(stdout.decode("utf-8", "replace"))
    except ValueError:
        return ""
    return str(data.get("verdict", "")) if isinstance(data, dict) else ""
