"""Writing and reading files next to the user's configuration without ever following a link
someone planted there, and without leaving half a file behind.

A file is written unnamed in its folder (Linux's ``O_TMPFILE``, as `compare.result_csv` writes
its CSV), then linked to a hidden temporary name and renamed onto the target: a process killed
even by SIGKILL while it writes leaves nothing, as the kernel frees a file that has no name
(only a kill between the link and the rename, two system calls, could leave that name). Where
the kernel or the file system cannot make an unnamed file (NFS, other systems), or ``/proc`` is
not there to link it, the temp file is created exclusively (``O_CREAT|O_EXCL|O_NOFOLLOW``)
under that name and removed on any error or interrupt. The rename replaces a planted symlink
itself instead of writing through it. Reads of our own state use ``O_NOFOLLOW`` and insist on a
regular file.

The replacement keeps the owner, group and mode of the file it replaces (set on the temp file
before the rename; a user who may not give the file its group, EPERM, leaves that to the
system, root never does). A file the user may not write (read-only; for root: no write bit at
all) or one with other hard links (a rename would split them) is refused with
:class:`NotReplaceable`, saying what to do.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import stat
from pathlib import Path

from ..readers.unnamed_file import link_unnamed, open_unnamed

STATE_DIR_NAME = ".fusion-switch"  # as state_dir.py names it
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_BINARY = getattr(os, "O_BINARY", 0)

Owner = tuple[int, int]  # (uid, gid)


class UnsafePath(OSError):
    """A path we refuse to use (a symlink where we keep state, not a regular file, ...)."""


class NotReplaceable(PermissionError):
    """A file we must not replace: read-only for the user, or one of several hard links. Its
    ``strerror`` says why and what to do."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(errno.EACCES, why, str(path))


def digest(data: bytes) -> str:
    """The content digest recorded for every file we write (sha256, hex)."""
    return hashlib.sha256(data).hexdigest()


def _euid() -> int:
    geteuid = getattr(os, "geteuid", None)
    return geteuid() if geteuid is not None else -1


def owner_of(cfg_path: Path) -> Owner | None:
    """Who the state we create for `cfg_path` should belong to: when we run as root (sudo), the
    configuration's owner (the folder's, while the file does not exist), so that its user can
    still read the history and restore; None otherwise (files are the creator's, as usual)."""
    if _euid() != 0:
        return None
    try:
        st = os.lstat(cfg_path)
        if not stat.S_ISREG(st.st_mode):
            st = os.stat(Path(cfg_path).parent)
    except OSError:
        try:
            st = os.stat(Path(cfg_path).parent)
        except OSError:
            return None
    return None if st.st_uid == 0 else (st.st_uid, st.st_gid)


def folder_owner(folder: Path) -> Owner | None:
    """When we run as root, the owner of ``folder`` (a state folder :func:`ensure_private_dir`
    gave the configuration's owner) for the files we create in it; None otherwise."""
    if _euid() != 0:
        return None
    try:
        st = os.stat(folder)
    except OSError:
        return None
    return None if st.st_uid == 0 else (st.st_uid, st.st_gid)


def open_lock_file(path: Path, owner: Owner | None = None) -> int:
    """A descriptor on the lock file ``path`` (created 0600, no link followed) for the caller
    to ``flock``; given ``owner`` (root's run on a user's file: the user's lock, which the
    user's own later runs can open)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW, 0o600)
    if owner is not None:
        with contextlib.suppress(OSError):
            st = os.fstat(fd)
            if (st.st_uid, st.st_gid) != owner:
                os.fchown(fd, *owner)
    return fd


def ensure_private_dir(path: Path, owner: Owner | None = None) -> Path:
    """Create `path` (and missing parents) as needed; refuse a symlink or a non-folder there,
    so that state is never written through a planted link. ``owner``: given to the folders
    this call creates (see :func:`owner_of`)."""
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
            ensure_private_dir(path.parent, owner)
        created = False
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
            created = True
        if path.is_symlink():
            raise UnsafePath(f"{path} is a symbolic link; remove it")
        if created and owner is not None:
            _give(lambda uid, gid: os.chown(path, uid, gid, follow_symlinks=False), owner)
    if not path.is_dir():
        raise UnsafePath(
            f"{path} is not a folder; move it away (fusion-switch keeps its state there)"
        )
    return path


def check_replaceable(path: Path, st: os.stat_result) -> None:
    """Refuse to replace the regular file `path` (its lstat `st`) when the user may not write
    it, or when it has other hard links: renaming a new file onto one name would split them,
    the other names keeping the old text. Refused rather than written in place: in place, a
    crash or a full disk would leave half a file, which the rename never does."""
    if st.st_nlink > 1:
        raise NotReplaceable(
            path,
            f"{path.name} has {st.st_nlink} hard links (other names for the same file); "
            "fusion-switch replaces a file whole, which would leave the other names with "
            "the old text: remove the other links, or copy it and change the copy",
        )
    if not _writable(path, st):
        raise NotReplaceable(
            path,
            f"{path.name} is read-only: mode {stat.S_IMODE(st.st_mode):04o}, owner "
            f"{st.st_uid}:{st.st_gid}; make it writable or copy it (and change the copy)",
        )


def _writable(path: Path, st: os.stat_result) -> bool:
    if _euid() == 0:  # root may write anything: a file without any write bit says "don't"
        return bool(st.st_mode & 0o222)
    effective = os.access in os.supports_effective_ids
    return os.access(path, os.W_OK, effective_ids=effective)


def atomic_write_bytes(
    path: Path, data: bytes, mode: int | None = None, owner: Owner | None = None
) -> None:
    """Replace `path` with `data` all at once (see the module's notes).

    `mode`: permission bits of the new file (default: those of the file it replaces, else
    0o644). `owner`: its (uid, gid) (default: those of the file it replaces, else the
    creator's). Raises :class:`NotReplaceable` for a read-only or hard-linked file."""
    path = Path(path)
    folder = path.parent
    mode, owner = _replacing(path, mode, owner)
    unnamed = _open_unnamed(folder)
    if unnamed is not None:
        try:
            _fill(unnamed, data, mode, owner)
            if _name_and_replace(unnamed, folder, path.name):
                return
        finally:
            os.close(unnamed)
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
        try:
            _fill(fd, data, mode, owner)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _replacing(path: Path, mode: int | None, owner: Owner | None) -> tuple[int, Owner | None]:
    """The mode and owner a replacement of ``path`` gets: those asked for, else the replaced
    file's (else 0o644 and the creator's). Raises :class:`NotReplaceable` for a read-only or
    hard-linked file."""
    keep: Owner | None = None
    st = None
    with contextlib.suppress(OSError):
        st = os.lstat(path)
    if st is not None and stat.S_ISREG(st.st_mode):
        check_replaceable(path, st)
        keep = (st.st_uid, st.st_gid)
        if mode is None:
            mode = stat.S_IMODE(st.st_mode)
    return (mode if mode is not None else 0o644), (owner if owner is not None else keep)


def _open_unnamed(folder: Path) -> int | None:
    """An unnamed file in `folder` to write (None: take the named path)."""
    return open_unnamed(folder, os.O_WRONLY | _BINARY, 0o600)


def _fill(fd: int, data: bytes, mode: int, owner: Owner | None) -> None:
    """Write `data` to the new file `fd`, give it `owner` and `mode` (chown first: it clears
    the set-id bits that the mode may set again), and make it durable."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    if owner is not None:
        st = os.fstat(fd)
        if (st.st_uid, st.st_gid) != owner:
            _give(lambda uid, gid: os.fchown(fd, uid, gid), owner)
    os.fchmod(fd, mode)
    os.fsync(fd)


def _give(chown, owner: Owner) -> None:
    """``chown(uid, gid)``; a user who may not give that owner or group (EPERM) leaves the file
    as the system made it (root is never refused)."""
    try:
        chown(*owner)
    except PermissionError:
        if _euid() == 0:
            raise
        with contextlib.suppress(PermissionError):  # keep at least the group, when ours
            chown(-1, owner[1])


def _name_and_replace(fd: int, folder: Path, name: str) -> bool:
    """Link the unnamed file `fd` as a hidden temporary name in `folder`, then rename it to
    `name`. False (nothing done) where it cannot be linked (no ``/proc``, a sandbox)."""
    folder_fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        for _ in range(20):
            tmp = f".{name}.{secrets.token_hex(6)}.tmp"
            try:
                if not link_unnamed(fd, folder_fd, tmp):
                    return False
            except FileExistsError:
                continue
            try:
                os.replace(tmp, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=folder_fd)
                raise
            return True
        raise UnsafePath(f"cannot create a temporary file in {folder}")  # pragma: no cover
    finally:
        os.close(folder_fd)


class ExchangeUnsupported(Exception):
    """The kernel or the file system cannot exchange two names (not Linux 3.15+, some file
    systems): the caller replaces the file as :func:`atomic_write_bytes` does."""


_RENAME_EXCHANGE = 2  # renameat2's flag


def exchange_bytes(path: Path, data: bytes) -> bytes | None:
    """Put ``data`` at ``path`` in one step and return what that step took away (None: no
    file was there). A check of the file before replacing it lets a save land in between and
    be lost unrecorded (a review of bisect's guard); the exchange hands back exactly the file
    it replaced. Owner and mode are kept as :func:`atomic_write_bytes` keeps them. Raises
    :class:`ExchangeUnsupported` where names cannot be exchanged (nothing written then)."""
    rename2 = _renameat2()
    if rename2 is None:
        raise ExchangeUnsupported
    path = Path(path)
    mode, owner = _replacing(path, None, None)
    folder_fd = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        tmp = _new_temporary(folder_fd, path.name)
        try:
            fd = os.open(tmp, os.O_WRONLY | _NOFOLLOW | _BINARY, dir_fd=folder_fd)
            try:
                _fill(fd, data, mode, owner)
            finally:
                os.close(fd)
            if (
                rename2(
                    folder_fd, os.fsencode(tmp), folder_fd, os.fsencode(path.name), _RENAME_EXCHANGE
                )
                == 0
            ):
                return _taken_back(folder_fd, tmp, path.name, rename2)
            err = _errno()
            if err == errno.ENOENT:  # no file there: a plain rename
                os.replace(tmp, path.name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
                return None
            if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EXDEV):
                raise ExchangeUnsupported
            raise OSError(err, os.strerror(err), str(path))
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=folder_fd)
    finally:
        os.close(folder_fd)


def _taken_back(folder_fd: int, tmp: str, name: str, rename2) -> bytes:
    """The bytes of the file an exchange moved to ``tmp``; where it cannot be read as a file
    (a link planted there), it is exchanged back and the error raised."""
    try:
        fd = os.open(tmp, os.O_RDONLY | _NOFOLLOW | _BINARY, dir_fd=folder_fd)
    except OSError:
        rename2(folder_fd, os.fsencode(tmp), folder_fd, os.fsencode(name), _RENAME_EXCHANGE)
        raise
    try:
        parts = []
        while chunk := os.read(fd, 1 << 20):
            parts.append(chunk)
        return b"".join(parts)
    finally:
        os.close(fd)


def _new_temporary(folder_fd: int, name: str) -> str:
    for _ in range(20):
        tmp = f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _BINARY
            os.close(os.open(tmp, flags, 0o600, dir_fd=folder_fd))
        except FileExistsError:
            continue
        return tmp
    raise UnsafePath(f"cannot create a temporary file for {name}")  # pragma: no cover


_RENAMEAT2: list = []


def _renameat2():
    """libc's renameat2, or None (not glibc 2.28+, not Linux)."""
    if not _RENAMEAT2:
        function = None
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            function = libc.renameat2
            function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
            function.argtypes += [ctypes.c_uint]
            function.restype = ctypes.c_int
        except (OSError, AttributeError, ImportError):
            function = None
        _RENAMEAT2.append(function)
    return _RENAMEAT2[0]


def _errno() -> int:
    import ctypes

    return ctypes.get_errno()


def atomic_write_text(path: Path, text: str, owner: Owner | None = None) -> None:
    atomic_write_bytes(path, text.encode("utf-8", "surrogatepass"), owner=owner)


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
