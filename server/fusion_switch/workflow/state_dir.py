"""Where the workflow keeps its files for one configuration: `<cfg dir>/.fusion-switch/`."""

from __future__ import annotations

import hashlib
from pathlib import Path

STATE_DIR_NAME = ".fusion-switch"


def state_dir(cfg_path: Path) -> Path:
    return cfg_path.parent / STATE_DIR_NAME


def state_file(cfg_path: Path, kind: str) -> Path:
    """One file per configuration and kind; the cfg name keeps several configs in a folder apart."""
    return state_dir(cfg_path) / f"{cfg_path.name}.{kind}"


def atomic_write(path: Path, text: str) -> None:
    """Write via a temp file and rename, so a crash never leaves half a file; the folder is
    created if needed and never written through a planted symlink (see safe_files)."""
    from .safe_files import atomic_write_text, ensure_private_dir

    ensure_private_dir(path.parent)
    atomic_write_text(path, text)


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
