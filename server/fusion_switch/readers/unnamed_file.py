"""Files written with no name in their folder (Linux's ``O_TMPFILE``), named once complete: a
process killed even by SIGKILL while it writes leaves nothing, as the kernel frees a file that
has no name. Shared by the comparison's CSV (`compare.result_csv`) and the files written next
to the user's configuration (`workflow.safe_files`)."""

from __future__ import annotations

import os

_TMPFILE = getattr(os, "O_TMPFILE", 0)


def open_unnamed(folder: os.PathLike | str, flags: int, mode: int) -> int | None:
    """A file descriptor of a new file in ``folder`` with no name yet, opened with ``flags``
    (O_WRONLY or O_RDWR, ...) and ``mode``; None where the kernel or the file system cannot
    make one (not Linux, kernels before 3.11, NFS): the caller takes a named path."""
    if not _TMPFILE:
        return None
    try:
        return os.open(folder, _TMPFILE | flags, mode)
    except OSError:  # EOPNOTSUPP, EISDIR, EINVAL; a real error repeats on the named path
        return None


def link_unnamed(fd: int, folder_fd: int, name: str) -> bool:
    """Give the unnamed file ``fd`` the name ``name`` in the folder open as ``folder_fd`` (a
    link planted there is not followed). False where it cannot be linked (no ``/proc``, a
    sandbox); FileExistsError when the name is taken."""
    try:  # a directory fd makes os.link call linkat with AT_SYMLINK_FOLLOW, not link
        os.link(f"/proc/self/fd/{fd}", name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
    except FileExistsError:
        raise
    except OSError:
        return False
    return True
