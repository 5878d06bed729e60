"""Which HTML reports our own comparisons wrote, so `showReport` never opens anything else.

The summary that names a report sits next to the configuration (`.fusion-switch/`), where a
cloned repository or another user of a shared folder can plant one pointing at any file. The
record lives in the user's own state directory (`$XDG_STATE_HOME/fusion-switch`, else
`~/.local/state/fusion-switch`, created 0700): one line per report, its SHA-256 and real path,
written when our comparison finishes. A report is opened only if its real path is recorded and
its bytes still hash to the recorded digest.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from .state_dir import atomic_write

RECORD_NAME = "reports"
KEEP = 500  # the most recent reports; older ones can be compared again


def record_path() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(Path.home(), ".local", "state")
    return Path(base) / "fusion-switch" / RECORD_NAME


def _digest(path: Path) -> str | None:
    """SHA-256 of a regular file that is not a symlink, else None."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None
            digest = hashlib.sha256()
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
            return digest.hexdigest()
    except OSError:
        return None


def _entries() -> list[tuple[str, str]]:
    try:
        lines = record_path().read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    return [tuple(line.split(" ", 1)) for line in lines if " " in line]  # type: ignore[misc]


def remember(report: Path) -> bool:
    """Record a report our comparison just wrote; False when it could not be recorded."""
    real = Path(os.path.realpath(report))
    digest = _digest(real)
    if digest is None:
        return False
    kept = [(d, p) for d, p in _entries() if p != str(real)][-(KEEP - 1) :]
    kept.append((digest, str(real)))
    path = record_path()
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        atomic_write(path, "".join(f"{d} {p}\n" for d, p in kept))
    except OSError:
        return False
    return True


def written_by_us(report: Path) -> bool:
    """Whether `report` is a file one of our comparisons wrote, unchanged since."""
    if report.is_symlink():
        return False
    real = str(Path(os.path.realpath(report)))
    recorded = {p: d for d, p in _entries()}
    return real in recorded and _digest(Path(real)) == recorded[real]
