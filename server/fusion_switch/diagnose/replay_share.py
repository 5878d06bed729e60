"""Hand the end of a background replay to the process waiting for it (issue 16).

On two cores the replay's child (:mod:`.replay_background`) measures its chunks one after the
other beside the comparison. When the comparison is over, this process has only the summary
left to write and then waits, with a core idle, while the child finishes alone. So, once it
waits, it asks for help: the child hands over the second half of the sub-graphs it has not
started (taken from the end of its last chunk, with the fusion-off ops they read), this process
measures them with an evidence store of its own, exactly as the child would, and sends back
what it found. The noise floor, the verdicts and the localisation stay in the child, which
merges the handed-back scores into its last chunk (files read counted once per chunk, missing
evidence in the order a serial run finds it), so the report is the same either way.

One message answers the request, always: ``work`` or ``none`` (nothing worth handing over, or
the measuring is over). Whatever goes wrong on either side (a pickling error, an exception,
the parent interrupted, the child killed), the child measures the sub-graphs itself or the
parent falls back to the child's answer, as without sharing.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import pickle
from collections.abc import Callable
from typing import Any

HELP, WORK, NONE, DONE, FAILED = "help", "work", "none", "done", "failed"
MIN_HANDED = 16  # fewer sub-graphs left: a round trip costs more than it saves
# ... unless their fused outputs hold this many values: a real network's activations, where
# one sub-graph takes tens of ms and a round trip ~1 ms (issue 16)
MIN_HANDED_ELEMENTS = 1 << 21


class ShareChannel:
    """A duplex pipe made before the fork: the parent keeps ``parent``, the child ``child``."""

    def __init__(self) -> None:
        self.parent, self.child = multiprocessing.get_context("fork").Pipe(duplex=True)

    def forked(self) -> None:
        """In the parent once the child runs: only the child may hold its end, so that the
        parent sees an end of file when the child dies."""
        self.child.close()

    def close(self) -> None:
        self.parent.close()
        self.child.close()


class ChildShare:
    """The child's side: :meth:`asked` between sub-graphs, :meth:`give` once, then
    :meth:`results`; :meth:`decline` when it ends without giving (idempotent)."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.answered = False

    def asked(self) -> bool:
        if self.answered:
            return False
        try:
            if not self.connection.poll():
                return False
            message = self.connection.recv()
            return bool(message) and message[0] == HELP
        except (EOFError, OSError):  # the parent is gone or closed its end: nobody to help
            self.answered = True
            return False

    def give(self, subs: list, off_ops: dict[str, Any]) -> bool:
        """Send ``subs`` (and the fusion-off ops they read) to the parent; False when they
        could not be sent (the caller measures them)."""
        self.answered = True
        try:
            payload = pickle.dumps((subs, off_ops), protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
            self._send((NONE,))
            return False
        return self._send((WORK, payload))

    def results(self) -> dict | None:
        """The parent's part (``measured``, ``files_read`` paths, ``unreadable``) or None."""
        with contextlib.suppress(EOFError, OSError, pickle.UnpicklingError):
            message = self.connection.recv()
            if message[0] == DONE:
                return message[1]
        return None

    def decline(self) -> None:
        if not self.answered:
            self.answered = True
            self._send((NONE,))

    def _send(self, message: tuple) -> bool:
        try:
            self.connection.send(message)
            return True
        except (OSError, ValueError):
            return False


def help_child(connection: Any, measure: Callable[[list, dict[str, Any]], dict]) -> None:
    """The parent's side: ask, measure what is handed over with ``measure(subs, off_ops)``,
    send it back. Returns when the child answered ``none``, got its work back, or is gone.
    Once work came, an answer always goes back (the child waits for it); an interruption
    propagates and the caller kills the child."""
    try:
        connection.send((HELP,))
        message = connection.recv()
    except (EOFError, OSError):
        return
    if message[0] != WORK:
        return
    try:
        subs, off_ops = pickle.loads(message[1])
        part: Any = (DONE, measure(subs, off_ops))
    except Exception:  # the child measures them itself then
        part = (FAILED,)
    with contextlib.suppress(OSError, ValueError, pickle.PicklingError):
        connection.send(part)
