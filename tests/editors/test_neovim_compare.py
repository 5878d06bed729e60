"""A real editor runs the comparison: Debian's Neovim, headless, executes fusionSwitch.compare
on a small generated case and receives the `fusion-suspect` diagnostic on the injected rule.

Skipped (with the reason) when `nvim` is not installed; CI installs the `neovim` package.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fusion_switch.synth.generator import generate_case
from nvim_driver import nvim_or_skip, run_driver

pytestmark = pytest.mark.editor

CONFIG = """{
  "Switch": {
    "GraphFusion": {
      "ConvBatchnormFusionPass": "on",
      "AvgPoolFusionPas": "on"
    }
  }
}
"""


def test_neovim_runs_compare_and_gets_the_suspect_diagnostic(tmp_path: Path) -> None:
    nvim = nvim_or_skip()
    case = generate_case(tmp_path / "case", n_ops=40)
    paths = {
        "FS_ON_DUMP": case.on_dump,
        "FS_OFF_DUMP": case.off_dump,
        "FS_ON_GRAPH": case.on_graph,
        "FS_OFF_GRAPH": case.off_graph,
        "FS_OUTPUT": tmp_path / "compare",
    }
    result = run_driver(
        nvim,
        "nvim_compare.lua",
        tmp_path,
        CONFIG,
        timeout=120,
        extra_env={name: str(path) for name, path in paths.items()},
    )
    assert result["errors"] == []
    assert result["ready"] is True
    rules = [s["rule"] for s in result["result"]["suspects"]]
    assert "ConvBatchnormFusionPass" in rules
    assert result["diagnostics_arrived"] is True
    [suspect] = [d for d in result["suspects"] if "ConvBatchnormFusionPass (" in d["message"]]
    assert (suspect["line"], suspect["col"]) == (3, 6)  # the rule's key
    assert suspect["severity"] == 2  # vim.diagnostic.severity.WARN
    assert any("ConvBatchnormFusionPass" in m for m in result["messages"])  # the verdict
    assert (tmp_path / "compare" / "report.html").is_file()
