"""Running a Lua driver in Debian's Neovim, headless, against `fusion-switch serve`.

The driver reads its inputs from `FS_*` environment variables and writes what it observed as
JSON to `FS_OUT`; HOME and the XDG directories point into the test's temporary directory so
no user configuration leaks in.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def nvim_or_skip() -> str:
    """The `nvim` executable, or skip the test (with the reason) when it is not installed."""
    nvim = shutil.which("nvim")
    if nvim is None:
        pytest.skip("nvim not on PATH: install Debian's `neovim` package to run this test")
    return nvim


def run_driver(
    nvim: str,
    driver: str,
    tmp_path: Path,
    config: str,
    *,
    timeout: float,
    extra_env: dict[str, str] | None = None,
) -> dict:
    """Write `config` to `tmp_path/fusion_switch.cfg`, run the Lua `driver` (a file next to this
    module) on it and return the JSON result it wrote."""
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_text(config, encoding="utf-8")
    out = tmp_path / "result.json"
    env = {
        **os.environ,
        "FS_PYTHON": sys.executable,
        "FS_FILE": str(cfg),
        "FS_OUT": str(out),
        **(extra_env or {}),
        "HOME": str(tmp_path),
        "XDG_STATE_HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path),
    }
    proc = subprocess.run(
        [nvim, "--headless", "--clean", "-u", "NONE", "-c", f"luafile {HERE / driver}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=tmp_path,
    )
    assert out.exists(), f"driver wrote nothing: rc={proc.returncode} {proc.stderr[-2000:]}"
    return json.loads(out.read_text(encoding="utf-8"))
