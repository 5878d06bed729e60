"""The last comparison attached to a configuration: saved next to it, shown again after restarts."""

from __future__ import annotations

import json
import time
from pathlib import Path

from .state_dir import atomic_write, state_file

RESULTS_KIND = "last-compare.json"


def save_results(cfg_path: Path, summary: dict) -> Path:
    """Replace the stored comparison for this configuration (a newer run always wins)."""
    path = state_file(cfg_path, RESULTS_KIND)
    payload = {"config": cfg_path.name, "saved_at": time.time(), "summary": summary}
    atomic_write(path, json.dumps(payload, ensure_ascii=False, indent=1) + "\n")
    return path


def load_results(cfg_path: Path) -> dict | None:
    """The stored summary, or None when there is none or it cannot be read."""
    try:
        data = json.loads(state_file(cfg_path, RESULTS_KIND).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    summary = data.get("summary") if isinstance(data, dict) else None
    return summary if isinstance(summary, dict) else None


def clear_results(cfg_path: Path) -> None:
    state_file(cfg_path, RESULTS_KIND).unlink(missing_ok=True)
