"""Every history layout earlier fusion-switch versions left keeps working with the commands
that write the configuration now:
- the old single backup (``<cfg>.before-all-off.json``): `off --all` on such a folder hung for
  ever (the migration took the history's lock again inside `record`, which held it);
- an index written before versions could be pending: read, restored, and added to;
- a version whose change is still being written (``"pending": true``) is listed only once the
  file holds that change."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest
from fusion_switch.workflow import safe_files
from fusion_switch.workflow.history import History
from fusion_switch.workflow.safe_files import digest

from tests.cli.cli_support import fs

USER = b'{\n  "Switch": {\n    "GraphFusion": {\n      "A": "on"\n    }\n  }\n}\n'
AFTER = b'{\n  "Switch": {\n    "GraphFusion": {\n      "ALL": "off"\n    }\n  }\n}\n'


def one_version(tmp_path: Path, on_disk: bytes, **marks) -> tuple[Path, Path]:
    """A cfg holding ``on_disk`` and a history of one 'all off' version (USER before it, AFTER
    written), its index entry as earlier versions wrote it plus ``marks``: (cfg, folder)."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(on_disk)
    folder = tmp_path / ".fusion-switch" / "fusion_switch.cfg.history"
    folder.mkdir(parents=True)
    (folder / "v0001.before").write_bytes(USER)
    entry = {
        "version": 1,
        "file": "v0001.before",
        "digest": digest(USER),
        "size": len(USER),
        "after_digest": digest(AFTER),
        "who": "cli",
        "kind": "all-off",
        "why": "all fusion off",
        "at": 1.0,
        "rules": [],
        **marks,
    }
    index = {"format": 1, "config": cfg.name, "versions": [entry]}
    (folder / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    return cfg, folder


def test_off_on_a_folder_with_the_old_backup_migrates_it_and_works(tmp_path):
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER)
    state = tmp_path / ".fusion-switch"
    state.mkdir()
    old = state / "fusion_switch.cfg.before-all-off.json"
    old.write_text(
        json.dumps(
            {"config": cfg.name, "saved_at": 1.0, "text": "older\n", "all_off_digest": "0" * 16}
        )
    )
    done = fs("off", cfg, "GraphFusion:B")
    assert done.returncode == 0, done.stderr
    assert not old.exists()
    versions = History(cfg).versions()
    assert [(v.number, v.kind) for v in versions] == [(1, "all-off"), (2, "off")]
    assert fs("restore", cfg, "--version", "2", "--yes").returncode == 0
    assert cfg.read_bytes() == USER
    assert fs("restore", cfg, "--version", "1", "--yes").returncode == 0
    assert cfg.read_bytes() == b"older\n"


def test_an_index_written_by_an_earlier_version_is_read_restored_and_added_to(tmp_path):
    cfg, _ = one_version(tmp_path, AFTER)
    listed = fs("restore", cfg, "--list")
    assert listed.returncode == 0 and "all fusion off" in listed.stdout, listed.stderr
    done = fs("restore", cfg, "--yes")
    assert done.returncode == 0, done.stderr
    assert cfg.read_bytes() == USER
    assert [v.kind for v in History(cfg).versions()] == ["all-off", "restore"]
    assert fs("restore", cfg, "--version", "2", "--yes").returncode == 0
    assert cfg.read_bytes() == AFTER


@pytest.mark.parametrize("written", [False, True])
def test_a_pending_version_is_listed_only_when_the_file_holds_its_change(tmp_path, written):
    """What a killed command leaves: the entry marked pending, its file maybe not written."""
    cfg, folder = one_version(tmp_path, AFTER if written else USER, pending=True)
    assert len(History(cfg).versions()) == int(written)
    assert History(cfg).unindexed() == []
    done = fs("off", cfg, "GraphFusion:B")  # the next change settles it for good
    assert done.returncode == 0, done.stderr
    kinds = [v.kind for v in History(cfg).versions()]
    assert kinds == (["all-off", "off"] if written else ["off"])
    assert "pending" not in (folder / "index.json").read_text()
    assert History(cfg).unindexed() == []
    assert fs("restore", cfg, "--version", "1", "--yes").returncode == 0
    assert cfg.read_bytes() == USER


def test_the_editors_record_leaves_no_unrecorded_file_when_the_index_cannot_be_written(
    tmp_path, monkeypatch
):
    """The editor records without writing the file: a full disk while the index is written
    left ``v0001.before`` behind, which restore then called a file it did not record."""
    history = History(tmp_path / "fusion_switch.cfg")
    real = os.fsync
    calls = []

    def full_after_one(fd):
        calls.append(fd)
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd)

    monkeypatch.setattr(safe_files.os, "fsync", full_after_one)
    with pytest.raises(OSError, match="No space"):
        history.record(USER, AFTER, who="editor", kind="all-off", why="all off")
    monkeypatch.undo()
    assert history.versions() == [] and history.unindexed() == []
    assert [p.name for p in history.folder.iterdir()] == [".lock"]
