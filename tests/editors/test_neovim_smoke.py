"""A real editor: Debian's Neovim, headless, talks to `fusion-switch serve`.

Skipped (with the reason) when `nvim` is not installed; CI installs the `neovim` package.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from nvim_driver import nvim_or_skip, run_driver

pytestmark = pytest.mark.editor

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
    nvim = nvim_or_skip()
    result = run_driver(nvim, "nvim_smoke.lua", tmp_path, CONFIG, timeout=90)
    assert result["errors"] == []
    assert result["diagnostics_arrived"] is True
    unknown = [d for d in result["diagnostics"] if d["code"] == "unknown-rule"]
    assert len(unknown) == 1, result["diagnostics"]
    assert unknown[0]["line"] == 3 and unknown[0]["source"] == "fusion-switch"
    assert "ConvBatchnormFusionPass" in unknown[0]["message"]  # did you mean
    labels = result["completion_labels"]
    assert "ConvBatchnormFusionPass" in labels
    assert "ALL" not in labels  # already present in the section
