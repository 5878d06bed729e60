"""`fusion-switch restore` as a subprocess: lists versions, restores byte for byte, asks unless
--yes, and never applies a file it did not write (planted files, edited versions, symlinks)."""

from __future__ import annotations

import json
import os

from cli_support import GRAPH_RULE, USER_CFG, fs, user_cfg
from fusion_switch.workflow.history import History


def test_list_and_restore_any_version(tmp_path):
    cfg = user_cfg(tmp_path)
    assert fs("off", cfg, GRAPH_RULE).returncode == 0
    after_first = cfg.read_bytes()
    assert fs("off", cfg, "--all").returncode == 0
    listing = fs("restore", cfg, "--list")
    assert listing.returncode == 0
    lines = [line for line in listing.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert len(lines) == 2 and "cli" in lines[0] and GRAPH_RULE in lines[0]
    assert "all fusion off" in lines[1]
    assert fs("restore", cfg, "--yes").returncode == 0  # default: before the last change
    assert cfg.read_bytes() == after_first
    assert fs("restore", cfg, "--version", "1", "--yes").returncode == 0
    assert cfg.read_bytes() == USER_CFG
    assert fs("restore", cfg, "--version", "9", "--yes").returncode == 1


def test_asks_before_restoring(tmp_path):
    cfg = user_cfg(tmp_path)
    assert fs("off", cfg, "--all").returncode == 0
    all_off = cfg.read_bytes()
    declined = fs("restore", cfg)  # no terminal to ask on: nothing happens
    assert declined.returncode == 1 and "--yes" in declined.stderr
    assert cfg.read_bytes() == all_off


def test_planted_and_changed_history_files_are_refused(tmp_path):
    cfg = user_cfg(tmp_path)
    assert fs("off", cfg, "--all").returncode == 0
    history = History(cfg)
    all_off = cfg.read_bytes()
    (history.folder / "v0002.before").write_bytes(b'{"planted": true}')  # not in the index
    listing = fs("restore", cfg, "--list")
    assert "did not record: v0002.before" in listing.stderr
    assert fs("restore", cfg, "--version", "2", "--yes").returncode == 1
    (history.folder / "v0001.before").write_bytes(b'{"Switch": {}}')  # changed after we wrote
    refused = fs("restore", cfg, "--yes")
    assert refused.returncode == 1 and "does not match the digest" in refused.stderr
    assert cfg.read_bytes() == all_off


def test_symlink_planted_as_a_version_is_refused(tmp_path):
    cfg = user_cfg(tmp_path)
    assert fs("off", cfg, "--all").returncode == 0
    history = History(cfg)
    outside = tmp_path / "outside.cfg"
    outside.write_bytes(USER_CFG)  # even with the right content, a link is not followed
    version = history.folder / "v0001.before"
    version.unlink()
    os.symlink(outside, version)
    refused = fs("restore", cfg, "--yes")
    assert refused.returncode == 1 and "symbolic link" in refused.stderr
    assert json.loads(cfg.read_bytes())["Switch"]["GraphFusion"] == {"ALL": "off"}


def test_restore_is_itself_undoable(tmp_path):
    cfg = user_cfg(tmp_path)
    assert fs("off", cfg, "--all").returncode == 0
    all_off = cfg.read_bytes()
    assert fs("restore", cfg, "--yes").returncode == 0
    twice = fs("restore", cfg, "--yes")  # harmless: already as before 'off --all'
    assert twice.returncode == 0 and "already" in twice.stdout
    assert cfg.read_bytes() == USER_CFG
    assert fs("restore", cfg, "--version", "2", "--yes").returncode == 0  # undo the restore
    assert cfg.read_bytes() == all_off


def test_no_history_yet(tmp_path):
    cfg = user_cfg(tmp_path)
    done = fs("restore", cfg, "--yes")
    assert done.returncode == 1 and "no history" in done.stderr


def test_a_file_saved_in_another_encoding_can_still_be_restored(tmp_path):
    """A review: an editor saved the file as GBK, and restore (even --list) refused it as
    "not valid UTF-8", exactly when a user needs it."""
    cfg = user_cfg(tmp_path)
    assert fs("off", cfg, "--all").returncode == 0
    cfg.write_bytes('{"Switch": {"GraphFusion": {"规则": "off"}}}'.encode("gbk"))
    assert fs("restore", cfg, "--list").returncode == 0
    done = fs("restore", cfg, "--yes")
    assert done.returncode == 0, done.stderr
    assert cfg.read_bytes() == USER_CFG


def test_restore_after_apply_from_all_off_brings_back_the_user_s_own(tmp_path):
    """`apply` on the all-off file switches the rules off in the configuration from before
    'off --all'; its version holds the all-off file. Restore's default is then the user's own
    configuration (a review: it brought back the all-off file), and it says which version."""
    cfg = user_cfg(tmp_path)
    assert fs("off", cfg, "--all").returncode == 0
    summary = tmp_path / "summary.json"
    summary.write_text(
        json.dumps(
            {"rules": [{"rule": GRAPH_RULE, "section": "GraphFusion", "verdict": "introduces"}]}
        )
    )
    assert fs("apply", summary, cfg, "--yes").returncode == 0
    assert json.loads(cfg.read_bytes())["Switch"]["GraphFusion"][GRAPH_RULE] == "off"
    done = fs("restore", cfg, "--yes")
    assert done.returncode == 0, done.stderr
    assert cfg.read_bytes() == USER_CFG
    assert "change 1" in done.stdout and "your own configuration" in done.stdout, done.stdout
    twice = fs("restore", cfg, "--yes")
    assert twice.returncode == 0 and "already as version 1" in twice.stdout, twice.stdout
    assert fs("restore", cfg, "--version", "2", "--yes").returncode == 0  # the all-off file
    assert json.loads(cfg.read_bytes())["Switch"]["GraphFusion"] == {"ALL": "off"}
