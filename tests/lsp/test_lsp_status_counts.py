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
    assert "suspects" not in state.status()
    state.results.put(tmp_path / "fusion_switch.cfg", {"suspects": suspects})
    status = state.status()
    assert (status["suspects"], status["proven"]) == counts
