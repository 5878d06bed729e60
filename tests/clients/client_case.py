"""The case the editor-config tests share: one configuration and what the server must say."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLIENT_CONFIG = ROOT / "client-config"
DRIVERS = Path(__file__).resolve().parent / "drivers"

# A rule name with a typo (unknown-rule, "did you mean") and a UBFusion section, which the target
# from the editor's settings (Atlas 350) does not support: that finding proves settings arrive.
CFG_TEXT = """\
{
  "Switch": {
    "GraphFusion": {
      "ConvBatchnormFusionPas": "off"
    },
    "UBFusion": {
      "TbeConv2DAddMulQuantPass": "off"
    }
  }
}
"""
TARGET = "Ascend950PR_9599"
UNKNOWN_RULE_LINE = 3  # 0-based
COMPLETION_POSITION = (3, 11)  # inside the key, after `"Conv`
EXPECTED_CODES = ("unknown-rule", "ub-unsupported-on-target")

# The server from this checkout, as the editors are told via FUSION_SWITCH_SERVER_CMD.
SERVER_COMMAND = [sys.executable, "-m", "fusion_switch", "serve"]


def make_workspace(base: Path) -> Path:
    """A project folder (root marker `.git`) holding fusion_switch.cfg."""
    project = base / "project"
    (project / ".git").mkdir(parents=True)
    (project / "fusion_switch.cfg").write_text(CFG_TEXT)
    return project


def editor_env(tmp_path: Path, extra: dict[str, str]) -> dict[str, str]:
    """A clean environment: the editors' state, cache and config go under tmp_path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "NVIM", "EMACS"))}
    home = tmp_path / "home"
    for sub in ("config", "cache", "data", "state"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_CACHE_HOME=str(home / "cache"),
        XDG_DATA_HOME=str(home / "data"),
        XDG_STATE_HOME=str(home / "state"),
    )
    env.update(extra)
    return env


def driver_env(tmp_path: Path, workspace: Path, out: Path, **extra: str) -> dict[str, str]:
    """`editor_env` plus what every driver reads: the server command, the case and its output."""
    line, character = COMPLETION_POSITION
    return editor_env(
        tmp_path,
        {
            "FUSION_SWITCH_SERVER_CMD": shlex.join(SERVER_COMMAND),
            "FUSION_SWITCH_TEST_CFG": str(workspace / "fusion_switch.cfg"),
            "FUSION_SWITCH_TEST_OUT": str(out),
            "FUSION_SWITCH_TEST_LINE": str(line),
            "FUSION_SWITCH_TEST_CHAR": str(character),
            "FUSION_SWITCH_TEST_CODES": ",".join(EXPECTED_CODES),
            **extra,
        },
    )


def run_driver(
    editor: str, command: list[str], cwd: Path, env: dict[str, str], out: Path, timeout: int = 120
) -> tuple[dict, str]:
    """Run an editor headless; the JSON its driver wrote to `out`, and the editor's stderr."""
    result = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert out.is_file(), f"{editor} wrote no result (exit {result.returncode}):\n{result.stderr}"
    return json.loads(out.read_text()), result.stderr


def dotted_keys(settings: dict, prefix: str = "") -> set[str]:
    """`{"fusionSwitch": {"compare": {"onDump": ""}}}` → `{"fusionSwitch.compare.onDump"}`."""
    keys: set[str] = set()
    for key, value in settings.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            keys |= dotted_keys(value, f"{name}.")
        else:
            keys.add(name)
    return keys


def server_read_settings() -> set[str]:
    """Keys the server reads (client-only ones, such as the trace level, excluded)."""
    from fusion_switch.lsp.settings import SETTINGS

    return {key for key, spec in SETTINGS.items() if not spec.get("client_only")}


# File names every editor config must (and must not) treat as fusion_switch.cfg.
MATCHING_NAMES = ("fusion_switch.cfg", "fusion_switch_resnet50.cfg", "bert.fusion_switch.cfg")
OTHER_NAMES = ("fusion.cfg", "myfusion_switch.cfg", "fusion_switch.json", "config.json")


def vscode_patterns() -> list[str]:
    """The file-name patterns of the VS Code language contribution (the reference)."""
    manifest = json.loads((CLIENT_CONFIG / "vscode" / "package.json").read_text())
    (language,) = manifest["contributes"]["languages"]
    return language["filenamePatterns"]
