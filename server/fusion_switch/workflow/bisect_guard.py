"""The user's configuration while a bisection writes it: never overwrite a save made meanwhile.

A bisection writes its trials into the configuration itself (one trial at a time) and puts the
file it started from back at its end. The user may save the file in between (an editor open
on it, an autosave, another program). Before each of its writes, and after each trial, the
guard compares the file on disk with what the bisection last wrote (by digest); a file that
differs is the user's: it is recorded in the history (restorable, `who="bisect"`,
`kind="edit"`), left as it is, and :class:`EditedMeanwhile` stops the bisection, saying so.
A trial whose configuration changed while it ran ran with the user's file, not the trial's:
it does not count.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from .history import History, HistoryError
from .safe_files import (
    ExchangeUnsupported,
    UnsafePath,
    atomic_write_bytes,
    digest,
    exchange_bytes,
    read_regular,
)

ABSENT = "absent"
BOM = b"\xef\xbb\xbf"


class EditedMeanwhile(Exception):
    """The configuration changed on disk while the bisection ran; kept as it is."""

    def __init__(
        self, path: Path, version: int | None, problem: str, when: str, ran: int | None
    ) -> None:
        super().__init__(f"{path} was changed {when}")
        self.path = path
        self.version = version  # the history's version holding the file as found (None: not)
        self.problem = problem  # why it was not recorded (removed, unreadable, no history)
        self.when = when  # "while trial 5 ran", "before trial 5", "while the bisection ran"
        self.ran = ran  # the trial that ran with the changed file (it does not count)
        self.found = ""  # what the bisection had found by then, if anything

    def advice(self, journal: Path, start: int | None) -> str:
        """What happened and what to do, on one line (``start``: the history's version
        holding the file the bisection started from)."""
        path = self.path
        if self.version is not None:
            kept = (
                f"it is kept as saved, recorded as version {self.version} of its history "
                f"(fusion-switch restore {path} --list)"
            )
        else:
            kept = f"it is left as it is ({self.problem})"
        message = (
            f"{path} was changed {self.when} (saved by you or by another program); the "
            f"bisection stopped without overwriting it: {kept}."
        )
        if self.ran is not None:
            message += f" Trial {self.ran} ran with that file, not its own: it does not count."
        if self.found:
            message += f" The bisection had found: {self.found}."
        before = (
            f"fusion-switch restore {path} --version {start}"
            if start is not None
            else f"its text is in {journal}"
        )
        return (
            f"{message} To bisect the file as it is now, delete {journal} and run bisect "
            "again; to go on with this bisection instead, bring back the file it started "
            f"from ({before}) and run it again with --resume."
        )


class CfgGuard:
    """What the bisection last wrote to ``path`` (``base``: the file as it started from)."""

    def __init__(self, path: Path, base: bytes | None) -> None:
        self.path = path
        self._written = _fingerprint(base)
        self.texts: set[str] = set()  # digests of every text written (no BOM), for the editor
        self.edited: EditedMeanwhile | None = None

    def write(self, data: bytes, when: str) -> None:
        """Write ``data`` (a trial's configuration) unless the user's save is there. The
        write exchanges the file for the trial's and looks at what it took away: a save that
        landed after the check is put back, recorded, and EditedMeanwhile raised (a review:
        one in the moments of the write was overwritten unrecorded)."""
        self.check(when, None)
        self._replace(data, when)
        self._written = _fingerprint(data)
        self.texts.add(digest(data.removeprefix(BOM)))

    def check(self, when: str, ran: int | None) -> None:
        """Raise :class:`EditedMeanwhile` when the file is not what was last written (``ran``:
        the trial that has just run with it)."""
        if self.edited is not None:
            raise self.edited
        found, data, problem = self._on_disk()
        if found != self._written:
            raise self._keep(data, problem, when, ran)

    def put_back(self, base: bytes | None) -> bool:
        """The file as it was before the bisection (``base``; None: no file). False when the
        user's save was found instead and kept (``edited`` says how)."""
        if self.edited is not None:
            return False
        found, data, problem = self._on_disk()
        if found == _fingerprint(base):
            self._written = found
            return True
        if found != self._written:
            self._keep(data, problem, "while the bisection ran", None)
            return False
        if base is None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
        else:
            try:
                self._replace(base, "while the bisection ran")
            except EditedMeanwhile:
                return False
        self._written = _fingerprint(base)
        return True

    def _replace(self, data: bytes, when: str) -> None:
        """Put ``data`` in place of the file, by an exchange that hands back what it took
        away: a save that landed after the last check is put back, recorded, and
        EditedMeanwhile raised (a review: one in the moments of the write was overwritten
        unrecorded). Where names cannot be exchanged, the last check is all there is."""
        try:
            replaced = exchange_bytes(self.path, data)
        except ExchangeUnsupported:
            atomic_write_bytes(self.path, data)
            return
        if _fingerprint(replaced) == self._written:
            return
        if replaced is None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
        else:
            atomic_write_bytes(self.path, replaced)
        self._written = _fingerprint(replaced)
        raise self._keep(replaced, "" if replaced is not None else "it was removed", when, None)

    def _on_disk(self) -> tuple[str, bytes | None, str]:
        try:
            data = read_regular(self.path)
        except FileNotFoundError:
            return ABSENT, None, "it was removed"
        except OSError as exc:  # UnsafePath included
            return f"unreadable: {exc}", None, f"it cannot be read now: {exc}"
        return _fingerprint(data), data, ""

    def _keep(
        self, data: bytes | None, problem: str, when: str, ran: int | None
    ) -> EditedMeanwhile:
        version = None
        if data is not None:
            try:
                version = (
                    History(self.path)
                    .record(
                        data,
                        data,
                        who="bisect",
                        kind="edit",
                        why="saved while a bisection ran; kept as saved, the bisection stopped",
                    )
                    .number
                )
            except (OSError, HistoryError, UnsafePath) as exc:
                problem = f"it could not be recorded in its history: {exc}"
        self.edited = EditedMeanwhile(self.path, version, problem, when, ran)
        return self.edited


def _fingerprint(data: bytes | None) -> str:
    return ABSENT if data is None else digest(data)
