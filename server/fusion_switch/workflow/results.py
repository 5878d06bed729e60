"""The last comparison attached to a configuration: saved next to it, shown again after restarts.

A comparison is made for one configuration, and its results are kept for that one only: the
file names the configuration's absolute path, and results whose path is another's (a folder
copied with its `.fusion-switch/`, or a file an earlier fusion-switch wrote beside every cfg of
a folder) are not this configuration's: they are neither shown nor applied (a review: model A's
verdict switched a rule off in model B's cfg). A file without that name is from before it was
kept, and is not trusted either.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from .state_dir import atomic_write, state_file

RESULTS_KIND = "last-compare.json"


def _key(cfg_path: Path) -> str:
    return os.path.abspath(cfg_path)


def _same(stored: object, cfg_path: Path) -> bool:
    if not isinstance(stored, str) or not stored:
        return False
    if stored == _key(cfg_path):
        return True
    try:  # the same file reached through a link of the folder
        return os.path.samefile(stored, cfg_path)
    except OSError:
        return False


def save_results(cfg_path: Path, summary: dict, cfg_uri: str | None = None) -> Path:
    """Replace the stored comparison for this configuration (a newer run always wins)."""
    path = state_file(cfg_path, RESULTS_KIND)
    payload = {
        "config": cfg_path.name,
        "cfg": _key(cfg_path),
        "cfgUri": cfg_uri or Path(_key(cfg_path)).as_uri(),
        "saved_at": time.time(),
        "summary": summary,
    }
    atomic_write(path, json.dumps(payload, ensure_ascii=False, indent=1) + "\n")
    return path


def _stored(cfg_path: Path) -> dict | None:
    try:
        data = json.loads(state_file(cfg_path, RESULTS_KIND).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def load_results(cfg_path: Path) -> dict | None:
    """The stored summary of a comparison made for this very configuration, or None (none,
    unreadable, or made for another file)."""
    data = _stored(cfg_path)
    if data is None or not _same(data.get("cfg"), cfg_path):
        return None
    summary = data.get("summary")
    return summary if isinstance(summary, dict) else None


def foreign_results(cfg_path: Path) -> str | None:
    """When the results kept beside this configuration were made for another file: that
    file's path (or a phrase saying they name none)."""
    data = _stored(cfg_path)
    if data is None or _same(data.get("cfg"), cfg_path):
        return None
    stored = data.get("cfg")
    return stored if isinstance(stored, str) and stored else "a file they do not name"


def clear_results(cfg_path: Path) -> None:
    state_file(cfg_path, RESULTS_KIND).unlink(missing_ok=True)
