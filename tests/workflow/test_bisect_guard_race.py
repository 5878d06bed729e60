"""bisect's guard of the user's file: a save that lands between its check of the file and its
write of a trial is kept and recorded, never overwritten unrecorded (a review: with the write
slowed by a second, an in-place save 0.3 s into it was lost, bisect exit 0)."""

from __future__ import annotations

import pytest
from fusion_switch.workflow import bisect_guard, safe_files
from fusion_switch.workflow.bisect_guard import CfgGuard, EditedMeanwhile
from fusion_switch.workflow.history import History

BASE = b'{"Switch": {"GraphFusion": {"KeepMe": "on"}}}\n'
TRIAL = b'{"Switch": {"GraphFusion": {"KeepMe": "on", "R1": "off"}}}\n'
SAVED = b'{"Switch": {"GraphFusion": {"KeepMe": "on", "MyPreciousEdit": "off"}}}\n'


@pytest.mark.parametrize("how", ["in place", "renamed"])
def test_a_save_between_the_check_and_the_write_is_kept_and_recorded(tmp_path, monkeypatch, how):
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(BASE)
    guard = CfgGuard(cfg, BASE)
    real_check = guard.check

    def check_then_the_user_saves(when, ran):
        real_check(when, ran)  # the file is as bisect left it ...
        if how == "in place":  # ... and the editor saves right after (vim, a script)
            cfg.write_bytes(SAVED)
        else:  # (VS Code and most editors: a new file renamed over it)
            safe_files.atomic_write_bytes(cfg, SAVED)

    monkeypatch.setattr(guard, "check", check_then_the_user_saves)
    with pytest.raises(EditedMeanwhile):
        guard.write(TRIAL, "before trial 1")
    assert cfg.read_bytes() == SAVED
    recorded = [History(cfg).content(v) for v in History(cfg).versions()]
    assert SAVED in recorded


def test_without_an_exchange_the_guard_writes_as_before(tmp_path, monkeypatch):
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(BASE)
    monkeypatch.setattr(bisect_guard, "exchange_bytes", _unsupported)
    guard = CfgGuard(cfg, BASE)
    guard.write(TRIAL, "before trial 1")
    assert cfg.read_bytes() == TRIAL
    guard.check("after trial 1", 1)


def _unsupported(path, data):
    raise safe_files.ExchangeUnsupported
