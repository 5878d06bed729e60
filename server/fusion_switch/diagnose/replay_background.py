"""Run the replay in a forked child while this process judges the comparison's rows.

The replay starts with a serial stretch (reading the fusion-off graph in full, 0.7 s at 5,000
ops) and the row attribution is serial too; neither needs the other, so on two or more cores
they overlap. The child runs :func:`replay_outcome` exactly as this process would (the same
function on the same inputs, forked), measures the first chunk itself and forks the other
measuring workers, then sends the finished :class:`ReplayReport` and its notes back.

Whatever goes wrong in the child (fork refused, crash, kill, an exception), the replay is run
again here, so a failure looks exactly as it would have without the child.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import signal
from collections.abc import Mapping
from typing import Any

from .replay import ReplayReport
from .replay_job import replay_outcome


def _child(outcome: Any, table: Any, connection: Any, parent: int, workers: int | None) -> None:
    from ..compare.workers import die_with_parent

    # Ctrl-C and SIGTERM are the parent's to handle: it kills this process (and this process's
    # workers die with it), never a half-written report from here
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    die_with_parent(parent)
    message: tuple = ("failed",)
    try:
        notes: list[str] = []
        message = ("ok", replay_outcome(outcome, table, notes, workers), notes)
    except BaseException:  # re-run by the parent, which then reports it as usual
        message = ("failed",)
    finally:
        with contextlib.suppress(OSError, pickle.PicklingError):
            connection.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))
        connection.close()


class BackgroundReplay:
    """``start`` → (work here) → ``result(notes)`` → ``close`` (always, e.g. in ``finally``)."""

    def __init__(
        self,
        outcome: Any,
        table: Mapping[str, Mapping[str, Any]] | None,
        workers: int | None = None,
    ) -> None:
        self.outcome = outcome
        self.table = table
        self.workers = workers  # processes the replay may use (None: every core)
        self._process: Any = None
        self._connection: Any = None

    def start(self) -> BackgroundReplay:
        cores = self.workers or os.cpu_count() or 1
        if cores < 2 or "fork" not in multiprocessing.get_all_start_methods():
            return self  # nothing to overlap with: the replay runs in result()
        context = multiprocessing.get_context("fork")
        receiver, sender = context.Pipe(duplex=False)
        process = context.Process(
            target=_child,
            args=(self.outcome, self.table, sender, os.getpid(), self.workers),
            daemon=False,
        )
        try:
            process.start()
        except (OSError, AssertionError, ValueError):  # e.g. a daemon process cannot fork one
            receiver.close()
            return self
        finally:
            sender.close()
        self._process, self._connection = process, receiver
        return self

    def result(self, notes: list[str]) -> ReplayReport | None:
        """The child's report (its notes appended to ``notes``), or the replay run here."""
        message = None
        if self._connection is not None:
            with contextlib.suppress(EOFError, OSError, pickle.UnpicklingError):
                message = pickle.loads(self._connection.recv_bytes())
        self.close()
        if message is not None and message[0] == "ok":
            notes.extend(message[2])
            return message[1]
        return replay_outcome(self.outcome, self.table, notes, self.workers)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        if self._process is not None:
            if self._process.is_alive():
                self._process.kill()
            self._process.join()
            self._process = None
