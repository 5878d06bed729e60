"""Hand the end of a background replay to the process waiting for it (issue 16).

On two cores the replay's child (:mod:`.replay_background`) measures its chunks one after the
other beside the comparison. When the comparison is over, this process has only the summary
left to write and then waits, with a core idle, while the child finishes alone. So, once it
waits, it asks for help: the child hands over the second half of the sub-graphs it has not
started (taken from the end, whatever chunks they span, with the fusion-off ops they read),
this process measures them with an evidence store of its own, exactly as the child would, and
sends back what it found, with the localisations of the flagged ones (the child sends the
noise floor and their rules along). Sending them back asks again: the child hands over half of
what it still has left, and so on, so that neither process ends long before the other. The
noise floor and the verdicts stay in the child, which merges what came back after its own parts
(files read counted once, missing evidence in the order a serial run finds it), so the report
is the same either way.

One message answers each request, always: ``work`` or ``none`` (nothing worth handing over, or
the measuring is over; the parent then stops asking). Whatever goes wrong on either side (a
pickling error, an exception, the parent interrupted, the child killed), the child measures
the sub-graphs itself or the parent falls back to the child's answer, as without sharing.
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
# what pickling a message raises for a value it cannot take (nothing is sent then)
_UNSENDABLE = (pickle.PicklingError, TypeError, AttributeError, RecursionError, ValueError)


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
    """The child's side: :meth:`asked` between sub-graphs, :meth:`give` when asked (as often as
    it is asked), then :meth:`results`; :meth:`decline` ends the sharing (idempotent)."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.open = True  # the parent may still ask
        self._asking = False  # a request not answered yet
        self._given = 0  # parts handed over
        self._backs: list[dict | None] = []  # what came back for them, in order

    def asked(self) -> bool:
        if not self.open:
            return False
        try:
            while not self._asking and self.open and self.connection.poll():
                self._take(self.connection.recv())
        except (EOFError, OSError, pickle.UnpicklingError):  # nobody to help any more
            self.open = False
        return self._asking and self.open

    def _take(self, message: tuple) -> None:
        kind = message[0] if message else None
        if kind == HELP:
            self._asking = True
        elif kind == DONE:  # a part measured, and a request for more
            self._backs.append(message[1])
            self._asking = True
        else:  # FAILED: that part is measured here; the parent asks no more
            self._backs.append(None)
            self.open = False

    def give(self, subs: list, *rest: Any) -> bool:
        """Send ``subs`` (and what the parent needs to measure them: the fusion-off ops they
        read, how to judge them) to the parent; False when they could not be sent (the caller
        measures them, and the sharing is over)."""
        self._asking = False
        try:
            payload = pickle.dumps((subs, *rest), protocol=pickle.HIGHEST_PROTOCOL)
        except _UNSENDABLE:
            self.decline()
            return False
        if not self._send((WORK, payload)):
            self.open = False
            return False
        self._given += 1
        return True

    def results(self) -> list[dict | None]:
        """The parent's parts (``measured``, ``localised``, ``files_read`` paths,
        ``unreadable``), one per :meth:`give` in order, waiting for those not back yet; None
        for a part the parent did not measure (the caller measures it)."""
        with contextlib.suppress(EOFError, OSError, pickle.UnpicklingError):
            while len(self._backs) < self._given:
                self._take(self.connection.recv())
        return self._backs + [None] * (self._given - len(self._backs))

    def decline(self) -> None:
        if self.open:
            self.open = False
            self._send((NONE,))

    def _send(self, message: tuple) -> bool:
        try:
            self.connection.send(message)
            return True
        except (OSError, ValueError):
            return False


def help_child(connection: Any, measure: Callable[..., dict]) -> int:
    """The parent's side: ask, measure what is handed over with ``measure(subs, *rest)`` (the
    arguments of :meth:`ChildShare.give`), send it back (which asks again), until the child
    answers ``none`` or is gone, or a part fails here. Returns the parts measured. Once work
    came, an answer always goes back (the child waits for it); an interruption propagates and
    the caller kills the child."""
    parts = 0
    try:
        connection.send((HELP,))
        message = connection.recv()
        while message[0] == WORK:
            try:
                part: Any = (DONE, measure(*pickle.loads(message[1])))
            except Exception:  # the child measures them itself then
                part = (FAILED,)
            try:
                connection.send(part)
            except _UNSENDABLE:  # it did not pickle, nothing was sent: say it failed
                part = (FAILED,)
                connection.send(part)
            if part[0] != DONE:
                return parts
            parts += 1
            message = connection.recv()
    except (EOFError, OSError):
        pass
    return parts
