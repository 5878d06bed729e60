"""The edit history: versions keep the exact previous bytes, the index is the only way in
(planted or changed files and symlinks are refused), the old all-off backup is migrated."""

from __future__ import annotations

import json
import os

import pytest
from fusion_switch.workflow.history import History, Untrusted
from fusion_switch.workflow.safe_files import UnsafePath, atomic_write_bytes


def test_record_and_read_back_exact_bytes(tmp_path):
    cfg = tmp_path / "fusion_switch.cfg"
    before = b'\xef\xbb\xbf{"Switch": {}}\r\n'
    history = History(cfg)
    v1 = history.record(before, b"{}", who="cli", kind="all-off", why="all off")
    v2 = history.record(None, b"x", who="editor", kind="off", why="off A")
    assert [v.number for v in history.versions()] == [1, 2]
    assert history.content(v1) == before
    assert history.content(v2) is None and v2.absent
    assert v1.wrote(b"{}") and not v1.wrote(b"{} ")


def test_changed_version_file_is_refused(tmp_path):
    history = History(tmp_path / "fusion_switch.cfg")
    v1 = history.record(b"mine", b"new", who="cli", kind="off", why="off")
    (history.folder / v1.file).write_bytes(b"planted")
    with pytest.raises(Untrusted, match="changed after fusion-switch wrote it"):
        history.content(v1)
    assert history.content(v1, trust_changed=True) == b"planted"


def test_symlinked_version_file_is_refused(tmp_path):
    history = History(tmp_path / "fusion_switch.cfg")
    v1 = history.record(b"mine", b"new", who="cli", kind="off", why="off")
    secret = tmp_path / "elsewhere"
    secret.write_bytes(b"mine")
    (history.folder / v1.file).unlink()
    os.symlink(secret, history.folder / v1.file)
    with pytest.raises(Untrusted, match="symbolic link"):
        history.content(v1)


def test_unindexed_files_are_listed_and_never_versions(tmp_path):
    history = History(tmp_path / "fusion_switch.cfg")
    history.record(b"mine", b"new", who="cli", kind="off", why="off")
    (history.folder / "v0002.before").write_bytes(b"planted")
    assert history.unindexed() == ["v0002.before"]
    assert [v.number for v in history.versions()] == [1]


def test_index_naming_a_foreign_file_is_refused(tmp_path):
    history = History(tmp_path / "fusion_switch.cfg")
    history.record(b"mine", b"new", who="cli", kind="off", why="off")
    index = json.loads(history.index_path.read_text())
    index["versions"][0]["file"] = "../../etc/passwd"
    history.index_path.write_text(json.dumps(index))
    with pytest.raises(Untrusted, match="not a file fusion-switch writes"):
        history.content(history.versions()[0])


def test_atomic_write_replaces_a_planted_symlink_instead_of_following_it(tmp_path):
    target = tmp_path / "victim"
    target.write_bytes(b"keep me")
    link = tmp_path / "state"
    os.symlink(target, link)
    atomic_write_bytes(link, b"ours")
    assert target.read_bytes() == b"keep me"
    assert not link.is_symlink() and link.read_bytes() == b"ours"


def test_state_folder_that_is_a_symlink_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cfg_dir = tmp_path / "project"
    cfg_dir.mkdir()
    os.symlink(elsewhere, cfg_dir / ".fusion-switch")
    with pytest.raises(UnsafePath):
        History(cfg_dir / "fusion_switch.cfg").record(b"a", b"b", who="cli", kind="off", why="off")
    assert list(elsewhere.iterdir()) == []


def test_old_all_off_backup_becomes_the_first_version(tmp_path):
    cfg = tmp_path / "fusion_switch.cfg"
    state = tmp_path / ".fusion-switch"
    state.mkdir()
    old = state / "fusion_switch.cfg.before-all-off.json"
    old.write_text(
        json.dumps(
            {"config": cfg.name, "saved_at": 1.0, "text": "user\n", "all_off_digest": "0" * 16}
        )
    )
    versions = History(cfg).versions()
    assert len(versions) == 1 and versions[0].kind == "all-off"
    assert History(cfg).content(versions[0]) == b"user\n"
    assert not old.exists()
