"""A real editor runs the comparison: Debian's Neovim, headless, executes fusionSwitch.compare
on a small generated case and receives the `fusion-suspect` diagnostic on the injected rule.

Skipped (with the reason) when `nvim` is not installed; CI installs the `neovim` package.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fusion_switch.compare.generator import generate_case

pytestmark = pytest.mark.editor

DRIVER = Path(__file__).with_name("nvim_compare.lua")
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
    nvim = shutil.which("nvim")
    if nvim is None:
        pytest.skip("nvim not on PATH: install Debian's `neovim` package to run this test")
    case = generate_case(tmp_path / "case", n_ops=40)
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_text(CONFIG, encoding="utf-8")
    out = tmp_path / "result.json"
    env = {
        **os.environ,
        "FS_PYTHON": sys.executable,
        "FS_FILE": str(cfg),
        "FS_OUT": str(out),
        "FS_ON_DUMP": str(case.on_dump),
        "FS_OFF_DUMP": str(case.off_dump),
        "FS_ON_GRAPH": str(case.on_graph),
        "FS_OFF_GRAPH": str(case.off_graph),
        "FS_OUTPUT": str(tmp_path / "compare"),
        "HOME": str(tmp_path),
        "XDG_STATE_HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path),
    }
    proc = subprocess.run(
        [nvim, "--headless", "--clean", "-u", "NONE", "-c", f"luafile {DRIVER}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert out.exists(), f"driver wrote nothing: rc={proc.returncode} {proc.stderr[-2000:]}"
    result = json.loads(out.read_text(encoding="utf-8"))
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
