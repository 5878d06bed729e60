"""Writing and reading files next to the user's configuration without ever following a link
someone planted there, and without leaving half a file behind.

Writes go to a temp file created exclusively (`O_CREAT|O_EXCL|O_NOFOLLOW`) in the same folder,
then `os.replace` onto the target: the rename replaces a planted symlink itself instead of
writing through it. Reads of our own state use `O_NOFOLLOW` and insist on a regular file.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import stat
from pathlib import Path

STATE_DIR_NAME = ".fusion-switch"  # as state_dir.py names it
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_BINARY = getattr(os, "O_BINARY", 0)


class UnsafePath(OSError):
    """A path we refuse to use (a symlink where we keep state, not a regular file, ...)."""


def digest(data: bytes) -> str:
    """The content digest recorded for every file we write (sha256, hex)."""
    return hashlib.sha256(data).hexdigest()


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and missing parents) as needed; refuse a symlink or a non-folder there,
    so that state is never written through a planted link."""
    if STATE_DIR_NAME in path.parts:  # no link anywhere from the state folder down
        for p in [path, *path.parents]:
            if p.is_symlink():
                raise UnsafePath(
                    f"{p} is a symbolic link; remove it (fusion-switch keeps its own state "
                    "there and never follows a link in it)"
                )
            if p.name == STATE_DIR_NAME:
                break
    elif path.is_symlink():
        raise UnsafePath(f"{path} is a symbolic link; remove it")
    if not path.exists():
        if not path.parent.exists():
            ensure_private_dir(path.parent)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
        if path.is_symlink():
            raise UnsafePath(f"{path} is a symbolic link; remove it")
    if not path.is_dir():
        raise UnsafePath(
            f"{path} is not a folder; move it away (fusion-switch keeps its state there)"
        )
    return path


def atomic_write_bytes(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace `path` with `data` all at once (temp file in the same folder, then rename).

    `mode`: permission bits of the new file (default: those of the file it replaces, else
    0o644)."""
    folder = path.parent
    if mode is None:
        with contextlib.suppress(OSError):
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode):
                mode = stat.S_IMODE(st.st_mode)
    for _ in range(20):
        tmp = folder / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _BINARY, 0o600)
        except FileExistsError:
            continue
        break
    else:  # pragma: no cover - 20 random names taken
        raise UnsafePath(f"cannot create a temporary file in {folder}")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode if mode is not None else 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8", "surrogatepass"))


def read_regular(path: Path, limit: int = 64 * 1024 * 1024) -> bytes:
    """The bytes of `path`, refusing symlinks, folders, devices and files over `limit`."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _BINARY)
    except OSError as exc:
        if exc.errno is not None and os.path.islink(path):
            raise UnsafePath(
                f"{path} is a symbolic link; fusion-switch never follows one"
            ) from None
        raise
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise UnsafePath(f"{path} is not a regular file")
        if st.st_size > limit:
            raise UnsafePath(f"{path} is {st.st_size} bytes; more than a configuration can be")
        return fh.read(limit + 1)
