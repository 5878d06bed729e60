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


def _buffer_change(history, before, after, kind="all-off"):
    return history.record(before, after, who="editor", kind=kind, why=kind, in_buffer=True)


def test_a_change_in_an_editor_s_buffer_is_listed_once_the_file_holds_it(tmp_path):
    """The terminal lists what the file went through; the editor, holding its buffer, also
    what the buffer did; a save lists it for good (see the module's notes)."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(b"mine")
    history = History(cfg)
    v1 = _buffer_change(history, b"mine", b"off")
    assert v1.pending and history.versions() == []  # the file never held it
    assert [v.number for v in history.versions(holding=b"off")] == [1]
    assert history.versions(holding=b"mine") == []  # undone in the buffer
    v2 = _buffer_change(history, b"off", b"applied", kind="apply")  # same buffer: kept
    assert [v.number for v in history.versions(holding=b"applied")] == [1, 2]
    cfg.write_bytes(b"applied")  # saved
    assert [v.number for v in history.versions()] == [1, 2]
    history.settle()
    index = json.loads(history.index_path.read_text())["versions"]
    assert [v.get("pending", False) for v in index] == [False, False]
    assert history.content(v2) == b"off"


def test_another_writer_drops_a_buffer_change_the_file_never_held(tmp_path):
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(b"mine")
    history = History(cfg)
    _buffer_change(history, b"mine", b"off")
    history.record(
        b"mine", b"cli", who="cli", kind="off", why="off A", then=lambda: cfg.write_bytes(b"cli")
    )
    assert [(v.number, v.who) for v in history.versions(holding=b"off")] == [(1, "cli")]


def test_a_buffer_change_the_file_already_holds_is_listed_at_once(tmp_path):
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(b"result")  # a bisection wrote it; the buffer held text typed meanwhile
    history = History(cfg)
    version = _buffer_change(history, b"typed", b"result", kind="edit")
    assert not version.pending and [v.number for v in history.versions()] == [1]


@pytest.mark.parametrize(
    ("changes", "default"),
    [
        ([("all-off", b"mine", b"off")], 1),
        ([("all-off", b"mine", b"off"), ("apply", b"off", b"applied")], 1),  # recipe's end
        ([("off", b"mine", b"off"), ("apply", b"off", b"applied")], 2),  # not from 'all off'
        ([("all-off", b"mine", b"off"), ("apply", b"edited", b"applied")], 2),  # edited since
        ([("all-off", b"mine", b"off"), ("apply", b"off", b"ap"), ("restore", b"ap", b"mine")], 1),
    ],
)
def test_restore_s_default(tmp_path, changes, default):
    from fusion_switch.workflow.history import default_version

    history = History(tmp_path / "fusion_switch.cfg")
    for kind, before, after in changes:
        history.record(before, after, who="cli", kind=kind, why=kind)
    assert default_version(history.versions()).number == default
