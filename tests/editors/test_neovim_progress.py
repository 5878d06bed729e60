"""Neovim (Debian's 0.7, headless) with client-config/neovim/fusion_switch.lua: the comparison
runs in the background with $/progress, cancel stops it, all-off asks first (issue 15)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fusion_switch.synth.generator import generate_case
from nvim_driver import nvim_or_skip, run_driver

pytestmark = pytest.mark.editor
CONFIG_DIR = Path(__file__).resolve().parents[2] / "client-config" / "neovim"
CONFIG = (
    '{\n  "Switch": {\n    "GraphFusion": {\n      "ConvBatchnormFusionPass": "on"\n    }\n  }\n}\n'
)


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> dict:
    nvim = nvim_or_skip()
    tmp = tmp_path_factory.mktemp("nvim-progress")
    case = generate_case(tmp / "case", n_ops=400)
    paths = {
        "FS_ON_DUMP": case.on_dump,
        "FS_OFF_DUMP": case.off_dump,
        "FS_ON_GRAPH": case.on_graph,
        "FS_OFF_GRAPH": case.off_graph,
        "FS_OUTPUT": tmp / "compare",
        "FS_CONFIG_DIR": CONFIG_DIR,
    }
    env = {name: str(path) for name, path in paths.items()}
    return run_driver(nvim, "nvim_progress.lua", tmp, CONFIG, timeout=300, extra_env=env)


def test_compare_runs_in_the_background_with_progress(session):
    assert session["errors"] == []
    assert session["attached"] is True
    assert session["returned_before_done"] is True
    assert session["finished"] is True
    rules = [s["rule"] for s in session["compare_result"]["suspects"]]
    assert "ConvBatchnormFusionPass" in rules
    kinds = session["events"]
    assert "begin" in kinds and "report" in kinds and "end" in kinds, kinds


def test_cancel_stops_the_comparison(session):
    assert session["cancellable_seen"] is True
    assert session["cancel_result"] == {"cancelled": True}


def test_all_off_asks_with_vim_ui_select(session):
    assert [q["prompt"] for q in session["questions"]] == [
        "Switch all fusion off in this file?"
    ] * 2
    assert session["unchanged_after_no"] is True
    assert session["all_off_after_yes"] is True
