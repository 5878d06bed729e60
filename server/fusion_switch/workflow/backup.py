"""Step 1 of the recipe and back: keep the user's text before "all off" so restore is exact."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from .state_dir import atomic_write, state_file, text_digest


@dataclass
class Backup:
    text: str
    saved_at: float
    all_off_digest: str  # digest of the all-off text we wrote, to notice later hand edits

    @property
    def path_hint(self) -> str:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.saved_at))


def save_backup(cfg_path: Path, original_text: str, all_off_text: str) -> Path:
    path = state_file(cfg_path, "before-all-off.json")
    payload = {
        "config": cfg_path.name,
        "saved_at": time.time(),
        "text": original_text,
        "all_off_digest": text_digest(all_off_text),
    }
    atomic_write(path, json.dumps(payload, ensure_ascii=False, indent=1) + "\n")
    return path


def load_backup(cfg_path: Path) -> Backup | None:
    """The saved text, or None when there is none (or it is unreadable: then nothing is lost,
    the user's current text stays as it is)."""
    path = state_file(cfg_path, "before-all-off.json")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Backup(str(data["text"]), float(data["saved_at"]), str(data["all_off_digest"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def changed_since_all_off(backup: Backup, current_text: str) -> bool:
    return text_digest(current_text) != backup.all_off_digest


def clear_backup(cfg_path: Path) -> None:
    state_file(cfg_path, "before-all-off.json").unlink(missing_ok=True)
