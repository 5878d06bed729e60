"""The `fusion-switch compare` command line on a generated case, for tests that run it as a
subprocess (one place for msaccucmp's flags: -m/-g dumps, -f/-cf graphs, -out)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def compare_command(case, out: Path, *extra: str) -> list[str]:
    """``python -m fusion_switch compare`` on ``case``'s dump leaves and JSON graphs."""
    return [
        *(sys.executable, "-m", "fusion_switch", "compare"),
        *("-m", str(case.on_dump), "-g", str(case.off_dump)),
        *("-f", str(case.on_graph), "-cf", str(case.off_graph)),
        *("-out", str(out), *extra),
    ]


def compare_summary(case, out: Path, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    """Run :func:`compare_command` (no progress bar); the process and its summary.json."""
    result = subprocess.run(
        compare_command(case, out, "--no-progress", *extra),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result, json.loads((out / "summary.json").read_text())
