"""Changing a configuration file on disk: compute the new text with the pure edit functions of
`cfg/`, record the previous bytes in the history, then write atomically.

Used by the command line (`off`, `on`, `apply`, `restore`) and by `bisect` for its result. The
editor changes its buffer instead, but records in the same history (see lsp/recipe/editing.py).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .history import Changed, History, HistoryError, Version
from .safe_files import UnsafePath, atomic_write_bytes, read_regular

BOM = b"\xef\xbb\xbf"


class ChangeError(Exception):
    """The configuration cannot be changed as asked; the message names the file and the fix."""


@dataclass(frozen=True)
class CfgFile:
    """A configuration as read: its bytes (None when absent) and text (without a BOM)."""

    path: Path
    data: bytes | None
    text: str
    bom: bool

    def encode(self, text: str) -> bytes:
        """New text as bytes in this file's encoding (UTF-8, keeping its BOM when it had one)."""
        return (BOM if self.bom else b"") + text.encode("utf-8", "surrogatepass")


def read_cfg(path: Path, *, must_exist: bool = True, as_text: bool = True) -> CfgFile:
    """The file's bytes and text. ``as_text=False``: its bytes only (restore, which must work
    on a file an editor saved in another encoding; its text is then empty)."""
    path = Path(os.path.abspath(path))
    if path.is_symlink():
        raise ChangeError(
            f"{path} is a symbolic link; fusion-switch replaces files atomically and would "
            f"replace the link itself. Run it on the file the link points to: {path.resolve()}"
        )
    try:
        data = read_regular(path)
    except FileNotFoundError:
        if must_exist:
            raise ChangeError(f"{path}: no such file") from None
        return CfgFile(path, None, "", False)
    except UnsafePath as exc:
        raise ChangeError(str(exc)) from None
    except OSError as exc:
        raise ChangeError(f"{path}: cannot read: {exc.strerror or exc}") from None
    bom = data.startswith(BOM)
    body = data[3:] if bom else data
    if not as_text:
        return CfgFile(path, data, "", bom)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ChangeError(
            f"{path}: not valid UTF-8 (byte 0x{body[exc.start]:02x} at offset {exc.start}); "
            "CANN rejects such a file. Save it as UTF-8 first."
        ) from None
    return CfgFile(path, data, text, bom)


def write_change(
    cfg: CfgFile,
    new: bytes | None,
    *,
    who: str,
    kind: str,
    why: str,
    rules: Sequence[str] = (),
) -> Version | None:
    """Record `cfg`'s bytes in the history, then write `new` (None: remove the file).
    Returns the recorded version, or None when nothing changes."""
    if new == cfg.data:
        return None
    history = History(cfg.path)
    written: list[OSError] = []

    def write() -> None:  # under the history's lock, the file found as it was read
        try:
            if new is None:
                os.unlink(cfg.path)
            else:
                atomic_write_bytes(cfg.path, new)
        except OSError as exc:
            written.append(exc)
            raise

    try:
        return history.record(
            cfg.data, new, who=who, kind=kind, why=why, rules=tuple(rules), then=write
        )
    except Changed as exc:
        raise ChangeError(str(exc)) from None
    except (UnsafePath, HistoryError) as exc:
        raise ChangeError(f"cannot record the change in the history: {exc}") from None
    except OSError as exc:
        if written:
            raise ChangeError(f"{cfg.path}: cannot write: {exc.strerror or exc}") from None
        raise ChangeError(
            f"cannot write the history next to {cfg.path}: {exc.strerror or exc}"
        ) from None


def recipe_base(cfg: CfgFile) -> tuple[str, Version] | None:
    """When the file is still exactly as our last 'all off' left it: the text from before
    (the recipe ends by switching the guilty rules off in the user's own configuration)."""
    history = History(cfg.path)
    try:
        latest = history.latest()
        if latest is None or latest.kind != "all-off" or not latest.wrote(cfg.data):
            return None
        if latest.file is None:  # 'all off' created the file: the user had none
            return "", latest
        data = history.content(latest)
    except (UnsafePath, HistoryError) as exc:  # Untrusted is a HistoryError
        raise ChangeError(f"cannot read the history: {exc}") from None
    except OSError as exc:
        raise ChangeError(f"cannot read the history of {cfg.path}: {exc.strerror or exc}") from None
    if data is None:
        return None
    body = data[3:] if data.startswith(BOM) else data
    try:
        return body.decode("utf-8"), latest
    except UnicodeDecodeError:
        return None
