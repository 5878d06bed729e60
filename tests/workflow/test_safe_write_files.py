"""`safe_files.atomic_write_bytes` on each of its paths: unnamed (``O_TMPFILE``, linked when
complete), and the named temporary file where the file system cannot make an unnamed one or
``/proc`` is not there to link it. On each: the mode is kept, an interrupt while the data is
synced leaves the target as it was and no temporary name, and read-only or hard-linked files
are refused before anything is written."""

from __future__ import annotations

import errno
import os
import stat

import pytest
from fusion_switch.workflow import safe_files
from fusion_switch.workflow.safe_files import NotReplaceable, atomic_write_bytes

PATHS = ["unnamed", "no-tmpfile", "no-proc-link"]


@pytest.fixture(params=PATHS)
def path_taken(request, monkeypatch):
    if request.param == "no-tmpfile":
        monkeypatch.setattr(safe_files, "_open_unnamed", lambda folder: None)
    elif request.param == "no-proc-link":
        real = os.link

        def no_proc(src, dst, **kw):
            if str(src).startswith("/proc/"):
                raise OSError(errno.ENOENT, "no /proc here")
            return real(src, dst, **kw)

        monkeypatch.setattr(safe_files.os, "link", no_proc)
    return request.param


def test_the_file_is_replaced_with_its_mode_kept(tmp_path, path_taken):
    target = tmp_path / "fusion_switch.cfg"
    target.write_bytes(b"old")
    os.chmod(target, 0o640)
    atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fusion_switch.cfg"]


def test_no_name_is_seen_while_the_data_is_synced_when_unnamed_files_work(tmp_path, monkeypatch):
    target = tmp_path / "fusion_switch.cfg"
    target.write_bytes(b"old")
    seen = []
    real = os.fsync

    def looking(fd):
        seen.append(sorted(p.name for p in tmp_path.iterdir()))
        real(fd)

    monkeypatch.setattr(safe_files.os, "fsync", looking)
    atomic_write_bytes(target, b"new")
    assert seen == [["fusion_switch.cfg"]]  # a SIGKILL here would leave nothing behind


def test_an_interrupt_while_syncing_leaves_the_file_and_no_temporary(
    tmp_path, monkeypatch, path_taken
):
    target = tmp_path / "fusion_switch.cfg"
    target.write_bytes(b"old")

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(safe_files.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fusion_switch.cfg"]


def test_a_hard_linked_file_is_refused(tmp_path, path_taken):
    target = tmp_path / "fusion_switch.cfg"
    target.write_bytes(b"old")
    os.link(target, tmp_path / "other")
    with pytest.raises(NotReplaceable, match="hard links"):
        atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"old" and (tmp_path / "other").read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fusion_switch.cfg", "other"]


def test_a_file_without_write_permission_is_refused(tmp_path, path_taken):
    target = tmp_path / "fusion_switch.cfg"
    target.write_bytes(b"old")
    os.chmod(target, 0o444)
    with pytest.raises(NotReplaceable, match=r"is read-only: .*make it writable or copy it"):
        atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fusion_switch.cfg"]
