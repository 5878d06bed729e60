"""The status bar's counts (`fusionSwitch/status`): rules suspected by the last comparison,
and of them the ones proven by replay, so that a run without the replay (labelled guesses
only) does not read as proven rules in VS Code's status bar."""

from __future__ import annotations

from pathlib import Path

import pytest
from fusion_switch.lsp.state import ServerState


@pytest.mark.parametrize(
    ("suspects", "counts"),
    [
        ([], (0, 0)),
        ([{"rule": "A", "verdict": "introduces"}], (1, 1)),
        ([{"rule": "A", "verdict": "heuristic"}, {"rule": "B", "verdict": "heuristic"}], (2, 0)),
        ([{"rule": "A", "verdict": "introduces"}, {"rule": "B", "verdict": "undecided"}], (2, 1)),
        ([{"rule": "A"}, "damaged"], (1, 0)),  # a summary of another version: no proof read
    ],
)
def test_the_status_counts_proven_rules_apart(tmp_path: Path, suspects, counts) -> None:
    state = ServerState()
    cfg, other = tmp_path / "fusion_switch.cfg", tmp_path / "other" / "fusion_switch.cfg"
    for path in (cfg, other):
        state.documents.open(path.as_uri(), "json", 1, "{}")
    assert state.status()["files"] == []
    state.results.put(cfg, {"suspects": suspects})
    status = state.status()
    # per file: the other open configuration has no count of its own (a review: the latest
    # comparison's count was shown on every file)
    assert status["files"] == [{"uri": cfg.as_uri(), "suspects": counts[0], "proven": counts[1]}]
    assert "suspects" not in status
