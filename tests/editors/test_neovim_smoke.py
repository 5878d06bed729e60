"""A real editor: Debian's Neovim, headless, talks to `fusion-switch serve`.

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

pytestmark = pytest.mark.editor

DRIVER = Path(__file__).with_name("nvim_smoke.lua")
CONFIG = """{
  "Switch": {
    "GraphFusion": {
      "ConvBatchnormFusionPas": "on",
      "ALL": "off"
    }
  }
}
"""


def test_neovim_gets_diagnostics_and_completion(tmp_path: Path) -> None:
    nvim = shutil.which("nvim")
    if nvim is None:
        pytest.skip("nvim not on PATH: install Debian's `neovim` package to run this test")
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_text(CONFIG, encoding="utf-8")
    out = tmp_path / "result.json"
    env = {
        **os.environ,
        "FS_PYTHON": sys.executable,
        "FS_FILE": str(cfg),
        "FS_OUT": str(out),
        "HOME": str(tmp_path),
        "XDG_STATE_HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path),
    }
    proc = subprocess.run(
        [nvim, "--headless", "--clean", "-u", "NONE", "-c", f"luafile {DRIVER}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        cwd=tmp_path,
    )
    assert out.exists(), f"driver wrote nothing: rc={proc.returncode} {proc.stderr[-2000:]}"
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["errors"] == []
    assert result["diagnostics_arrived"] is True
    unknown = [d for d in result["diagnostics"] if d["code"] == "unknown-rule"]
    assert len(unknown) == 1, result["diagnostics"]
    assert unknown[0]["line"] == 3 and unknown[0]["source"] == "fusion-switch"
    assert "ConvBatchnormFusionPass" in unknown[0]["message"]  # did you mean
    labels = result["completion_labels"]
    assert "ConvBatchnormFusionPass" in labels
    assert "ALL" not in labels  # already present in the section
