"""The fork server's socket folder left by a SIGKILL to the whole `--rank all` group: which
folders a later run removes, and which it never touches (cli.rank_server_folder)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from fusion_switch.cli.rank_server_folder import MARK, mark, sweep


def _ended_pid() -> int:
    """A pid no process has any more (a child that ran and was waited for)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _folder(temporary: Path, name: str, users: list[int] | None = None) -> Path:
    folder = temporary / name
    folder.mkdir()
    (folder / "listener-x").write_bytes(b"")  # where the socket was
    if users is not None:
        mark(str(folder), users)
    return folder


def test_only_marked_folders_whose_processes_all_ended_are_removed(tmp_path):
    stale = _folder(tmp_path, "pymp-stale", [_ended_pid(), _ended_pid()])
    unmarked = _folder(tmp_path, "pymp-another-program")
    # the server killed alone, its `--rank all` process alive: it starts a server there again
    owner_alive = _folder(tmp_path, "pymp-owner-alive", [os.getpid(), _ended_pid()])
    server_alive = _folder(tmp_path, "pymp-server-alive", [_ended_pid(), os.getpid()])
    other_name = _folder(tmp_path, "not-pymp", [_ended_pid()])
    kept = _folder(tmp_path, "pymp-this-run", [_ended_pid()])
    half_written = _folder(tmp_path, "pymp-being-marked")
    (half_written / MARK).write_text("")
    garbled = _folder(tmp_path, "pymp-garbled")
    (garbled / MARK).write_text("12x:3")

    assert sweep(str(tmp_path), keep=str(kept)) == [str(stale)]
    assert not stale.exists()
    for folder in (unmarked, owner_alive, server_alive, other_name, kept, half_written, garbled):
        assert folder.is_dir(), folder


def test_a_recycled_pid_does_not_keep_a_folder(tmp_path):
    """The pid runs, but it started at another time than the process marked: another one."""
    folder = _folder(tmp_path, "pymp-recycled")
    (folder / MARK).write_text(f"{os.getpid()}:1")  # this pid, started one tick after boot
    assert sweep(str(tmp_path)) == [str(folder)]


def test_a_folder_goes_once_its_last_process_ends(tmp_path):
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        folder = _folder(tmp_path, "pymp-live", [_ended_pid(), server.pid])
        assert sweep(str(tmp_path)) == []
        assert folder.is_dir()
    finally:
        server.kill()
        server.wait()
    assert sweep(str(tmp_path)) == [str(folder)]


def test_links_and_files_named_like_a_folder_are_not_followed(tmp_path):
    elsewhere = _folder(tmp_path, "elsewhere", [_ended_pid()])
    (tmp_path / "pymp-link").symlink_to(elsewhere)
    (tmp_path / "pymp-file").write_text(str(_ended_pid()))
    assert sweep(str(tmp_path)) == []
    assert elsewhere.is_dir() and (tmp_path / "pymp-file").is_file()


def test_a_missing_temporary_directory_removes_nothing(tmp_path):
    assert sweep(str(tmp_path / "absent")) == []
