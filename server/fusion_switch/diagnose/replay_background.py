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

import os
import signal
from collections.abc import Mapping
from typing import Any

from ..compare.forked import ForkedCall
from .replay import ReplayReport
from .replay_job import replay_outcome


def _child(outcome: Any, table: Any, parent: int, workers: int | None) -> tuple:
    from ..compare.workers import die_with_parent

    # Ctrl-C and SIGTERM are the parent's to handle: it kills this process (and this process's
    # workers die with it), never a half-written report from here
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    die_with_parent(parent)
    notes: list[str] = []
    return ("ok", replay_outcome(outcome, table, notes, workers), notes)


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
        # not daemonic: the child forks the replay's measuring workers
        self._call = ForkedCall(_child, (outcome, table, os.getpid(), workers), daemon=False)

    def start(self) -> BackgroundReplay:
        if (self.workers or os.cpu_count() or 1) >= 2:
            self._call.start()  # else nothing to overlap with: the replay runs in result()
        return self

    def result(self, notes: list[str]) -> ReplayReport | None:
        """The child's report (its notes appended to ``notes``), or the replay run here."""
        message = self._call.answer()
        if message is not None and message[0] == "ok":
            notes.extend(message[2])
            return message[1]
        return replay_outcome(self.outcome, self.table, notes, self.workers)

    def close(self) -> None:
        self._call.close()
