"""The fork server's socket folder left by a SIGKILL to the whole `--rank all` group: which
folders a later run removes, and which it never touches (cli.rank_server_folder)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fusion_switch.cli import rank_server_folder
from fusion_switch.cli.rank_server_folder import MARK, mark, sweep

# marks a folder, says so, and holds its lock until stdin closes (a --rank all process)
HOLDER = """
import sys
from fusion_switch.cli.rank_server_folder import mark
fd = mark(sys.argv[1])
print("marked" if fd is not None else "failed", flush=True)
sys.stdin.read()
"""


def _folder(temporary: Path, name: str) -> Path:
    folder = temporary / name
    folder.mkdir()
    (folder / "listener-x").write_bytes(b"")  # where the socket was
    return folder


def _marked_and_released(temporary: Path, name: str) -> Path:
    """A folder whose run has ended: marked, its lock gone with the process that held it."""
    folder = _folder(temporary, name)
    os.close(mark(str(folder)))
    return folder


def test_only_marked_folders_nobody_holds_are_removed(tmp_path):
    stale = _marked_and_released(tmp_path, "pymp-stale")
    unmarked = _folder(tmp_path, "pymp-another-program")
    other_name = _marked_and_released(tmp_path, "not-pymp")
    kept = _marked_and_released(tmp_path, "pymp-this-run")
    live = _folder(tmp_path, "pymp-live")
    held = mark(str(live))
    try:
        assert sweep(str(tmp_path), keep=str(kept)) == [str(stale)]
        for folder in (unmarked, other_name, kept, live):
            assert folder.is_dir(), folder
    finally:
        os.close(held)
    assert sweep(str(tmp_path), keep=str(kept)) == [str(live)]


def test_a_folder_goes_once_the_process_holding_it_ends(tmp_path):
    """Held by another process (as a --rank all process holds its folder), in another pid
    namespace or not: a pid seen from here meant nothing there (a review), a lock does."""
    folder = _folder(tmp_path, "pymp-held")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "marked"
        assert sweep(str(tmp_path)) == []
    finally:
        holder.stdin.close()
        holder.wait(30)
        holder.stdout.close()
    assert sweep(str(tmp_path)) == [str(folder)]


def test_a_folder_marked_on_another_machine_is_kept(tmp_path, monkeypatch):
    """A temporary directory on shared storage: a lock taken there may not be seen here."""
    monkeypatch.setattr(rank_server_folder, "_machine", lambda: "boot another")
    folder = _marked_and_released(tmp_path, "pymp-elsewhere")
    monkeypatch.undo()
    assert sweep(str(tmp_path)) == []
    assert folder.is_dir()


@pytest.mark.parametrize(
    "content", ["", "9999999999:1", "\udcff", "boot x\n" * 100], ids=["empty", "big", "bad", "long"]
)
def test_a_mark_that_is_not_ours_keeps_the_folder(tmp_path, content):
    """A corrupted or half-written mark: kept, and no error (a pid of 2**33 raised
    OverflowError out of the sweep, and the run died with exit 1; a review)."""
    folder = _folder(tmp_path, "pymp-odd")
    (folder / MARK).write_bytes(content.encode("utf-8", "surrogateescape"))
    assert sweep(str(tmp_path)) == []
    assert folder.is_dir()


def test_a_fifo_named_as_the_mark_does_not_block_the_sweep(tmp_path):
    folder = _folder(tmp_path, "pymp-fifo")
    os.mkfifo(folder / MARK)
    assert sweep(str(tmp_path)) == []
    assert folder.is_dir()


def test_links_and_files_named_like_a_folder_are_not_followed(tmp_path):
    elsewhere = _marked_and_released(tmp_path, "elsewhere")
    (tmp_path / "pymp-link").symlink_to(elsewhere)
    (tmp_path / "pymp-file").write_text("x")
    assert sweep(str(tmp_path)) == []
    assert elsewhere.is_dir() and (tmp_path / "pymp-file").is_file()


def test_a_missing_temporary_directory_removes_nothing(tmp_path):
    assert sweep(str(tmp_path / "absent")) == []


SWEEP_HERE = """
import sys
from fusion_switch.cli.rank_server_folder import sweep
print(sweep(sys.argv[1]))
"""


def test_a_run_in_another_pid_namespace_keeps_a_live_runs_folder(tmp_path):
    """A container or sandbox sharing the temporary directory: its pids are not ours. The
    sweep judged by pids, and removed the folder of a live run (a review)."""
    folder = _folder(tmp_path, "pymp-live")
    held = mark(str(folder))
    try:
        inside = subprocess.run(
            ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", SWEEP_HERE,
             str(tmp_path)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    except FileNotFoundError:
        pytest.skip("no unshare here")
    finally:
        os.close(held)
    if inside.returncode != 0:
        pytest.skip(f"no new pid namespace here: {inside.stderr.strip()[:200]}")
    assert inside.stdout.strip() == "[]"
    assert folder.is_dir()
