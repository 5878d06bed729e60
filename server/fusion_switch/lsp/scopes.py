"""Which settings a document is checked, fixed and compared with, in a multi-root workspace.

The window's settings (`initializationOptions`, an unscoped `workspace/configuration` answer,
a `didChangeConfiguration` payload) apply to every document, unless the client answered a
`workspace/configuration` item scoped to the document (`scopeUri`: the configuration's URI)
for the document's workspace folder: then that folder's answer is in force, its keys over the
window's. VS Code answers with the folder's values (User < Workspace < Folder); Helix, Neovim
and eglot answer from their one set of settings (or null where the section is not set, which
leaves the window's): each document is then checked as before. A review found folder B
checked with folder A's target, compared with A's paths, and its extra catalogues read from A.

Relative `catalogue.extraFiles` are read from the folder the settings came from: a folder's
answer from that folder, the window's from the first workspace folder (else the root).

Plain values only; the requests themselves are `features/configuration`'s."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pygls.uris import to_fs_path

from .settings import Settings, parse_settings

Key = str | None  # a workspace folder's URI, or None: the window's settings


def path_of(uri: str) -> Path | None:
    try:
        path = to_fs_path(uri)
    except Exception:  # not a URI we can read: no folder
        return None
    return Path(path) if path else None


def resolved(files: tuple[str, ...], folder: Path | None) -> tuple[str, ...]:
    """`files` with the relative ones read from `folder` (as they are without a folder)."""
    if folder is None:
        return files
    return tuple(
        f if os.path.isabs(os.path.expanduser(f)) else os.path.join(folder, f) for f in files
    )


@dataclass(frozen=True)
class Scope:
    """The settings of one key, and the folder its relative paths are read from."""

    settings: Settings
    folder: Path | None

    @property
    def extra_files(self) -> tuple[str, ...]:
        return resolved(self.settings.extra_files, self.folder)


class Scopes:
    """The workspace folders, the client's answers for them, and the questions on the way."""

    def __init__(self) -> None:
        # (folder URIs, root path) of the workspace as the client declared it; the server
        # installs a reader of pygls's workspace (see `FusionSwitchServer`)
        self.workspace: Callable[[], tuple[list[str], str | None]] = lambda: ([], None)
        self.answers: dict[str, dict[str, Any]] = {}  # folder URI → the client's answer
        self.asked: dict[str, asyncio.Future] = {}  # folder URI → done once answered

    def folder_of(self, uri: str | None) -> str | None:
        """The URI of the innermost workspace folder holding the document, or None."""
        path = path_of(uri) if uri else None
        return None if path is None else self.folder_holding(path)

    def folder_holding(self, path: Path) -> str | None:
        """The URI of the innermost workspace folder holding ``path``, or None."""
        best: tuple[str, int] | None = None
        for folder in self.workspace()[0]:
            folder_path = path_of(folder)
            if folder_path is None or not path.is_relative_to(folder_path):
                continue
            if best is None or len(folder_path.parts) > best[1]:
                best = (folder, len(folder_path.parts))
        return best[0] if best else None

    def key_of(self, uri: str | None) -> Key:
        """The settings the document is checked with: its folder's answer, else the window's."""
        if not self.answers:
            return None
        folder = self.folder_of(uri)
        return folder if folder in self.answers else None

    def pending(self, uri: str) -> asyncio.Future | None:
        """Done once the document's folder has answered, when it was asked and has not yet."""
        if not self.asked:
            return None
        asked = self.asked.get(self.folder_of(uri) or "")
        return asked if asked is not None and not asked.done() else None

    def waiting(self, uri: str) -> bool:
        """Whether the document's folder was asked about and has not answered yet."""
        return self.pending(uri) is not None

    def window_folder(self) -> Path | None:
        """Where the window's relative paths are read from: the first workspace folder, else
        the root."""
        folders, root = self.workspace()
        for folder in folders:
            path = path_of(folder)
            if path is not None:
                return path
        return Path(root) if root else None

    def scopes(self, window: Settings) -> dict[Key, Scope]:
        """Every key's settings: the window's, and each answered folder's over them."""
        out: dict[Key, Scope] = {None: Scope(window, self.window_folder())}
        for folder, answer in self.answers.items():
            settings, _ = parse_settings(answer, window)
            out[folder] = Scope(settings, path_of(folder))
        return out
