"""Where the workflow keeps its files for one configuration: `<cfg dir>/.fusion-switch/`."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

STATE_DIR_NAME = ".fusion-switch"


def state_dir(cfg_path: Path) -> Path:
    return cfg_path.parent / STATE_DIR_NAME


def state_file(cfg_path: Path, kind: str) -> Path:
    """One file per configuration and kind; the cfg name keeps several configs in a folder apart."""
    return state_dir(cfg_path) / f"{cfg_path.name}.{kind}"


def atomic_write(path: Path, text: str) -> None:
    """Write via a temp file and rename, so a crash never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
