"""Nothing the user saved is lost to a change fusion-switch writes from an older read
(workflow/changes.write_change), found by a review of the recipe commands:
- a hand edit saved while `apply` or `restore` waited at its [y/N] prompt was overwritten and
  kept in no version of the history;
- four `off` commands run at once on one file all said they switched their rule off, and the
  file ended with one or two of them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fusion_switch.workflow.changes import ChangeError, read_cfg, write_change
from fusion_switch.workflow.history import History

BEFORE = b'{\n  "Switch": {\n    "GraphFusion": {\n      "A": "on"\n    }\n  }\n}\n'


def test_a_file_saved_after_it_was_read_is_not_overwritten(tmp_path: Path):
    path = tmp_path / "fusion_switch.cfg"
    path.write_bytes(BEFORE)
    cfg = read_cfg(path)
    saved = BEFORE.replace(b'"A": "on"', b'"A": "on",\n      "HandEdit": "off"')
    path.write_bytes(saved)  # the user saves while the command waits
    with pytest.raises(ChangeError, match="changed since"):
        write_change(cfg, b'{"Switch": {}}\n', who="cli", kind="apply", why="test")
    assert path.read_bytes() == saved
    assert History(path).versions() == []  # nothing recorded for a change not made


def test_a_file_removed_after_it_was_read_is_not_written_back(tmp_path: Path):
    path = tmp_path / "fusion_switch.cfg"
    path.write_bytes(BEFORE)
    cfg = read_cfg(path)
    path.unlink()
    with pytest.raises(ChangeError, match="changed since"):
        write_change(cfg, b'{"Switch": {}}\n', who="cli", kind="off", why="test")
    assert not path.exists()


def test_commands_at_once_never_lose_a_change_they_report(tmp_path: Path):
    path = tmp_path / "fusion_switch.cfg"
    path.write_bytes(BEFORE)
    rules = [f"R{i}" for i in range(4)]
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "fusion_switch", "off", str(path), f"GraphFusion:{rule}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rule in rules
    ]
    said = [run.communicate(timeout=120) for run in runs]
    final = json.loads(path.read_text())["Switch"]["GraphFusion"]
    for rule, run, (_, err) in zip(rules, runs, said, strict=True):
        if run.returncode == 0:
            assert final.get(rule) == "off", f"{rule} reported switched off, lost: {final}"
        else:
            assert "changed since" in err, err
    assert final["A"] == "on"
