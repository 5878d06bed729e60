"""Open documents the server validates, and the rule that decides which ones those are.

Which documents are fusion switch configurations (`is_fusion_switch_config`):
  1. languageId `fusion-switch` (what the VS Code extension declares), whatever the name;
  2. a file name `fusion_switch*.cfg` or `*.fusion_switch.cfg`, whatever the languageId
     (editors without our language mode send `json`, `jsonc`, `plaintext`, `js`...);
  3. languageId `json`, `jsonc` or `plaintext` and a name ending in `.cfg`
     (CANN lets the file have any name; these editors opened it as plain JSON/text).
Anything else (other JSON files, source code) is ignored: no diagnostics, empty answers.
"""

from __future__ import annotations

import itertools
import posixpath
import re
from dataclasses import dataclass, field
from urllib.parse import unquote, urlparse

from .text import LineIndex, apply_change

LANGUAGE_ID = "fusion-switch"
_NAME_PATTERN = re.compile(r"(fusion_switch[^/]*|[^/]*\.fusion_switch)\.cfg", re.IGNORECASE)
_GENERIC_LANGUAGES = frozenset({"json", "jsonc", "plaintext"})
_REVISIONS = itertools.count(1)  # one number per text a document ever had, in this process


def file_name(uri: str) -> str:
    return posixpath.basename(unquote(urlparse(uri).path))


def is_fusion_switch_config(uri: str, language_id: str | None) -> bool:
    if language_id == LANGUAGE_ID:
        return True
    name = file_name(uri)
    if _NAME_PATTERN.fullmatch(name):
        return True
    return (language_id or "") in _GENERIC_LANGUAGES and name.lower().endswith(".cfg")


@dataclass
class OpenDocument:
    """One open configuration. `revision` moves with every change of its text, whatever the
    version number the client sent (LSP wants it to increase; nothing here relies on that)."""

    uri: str
    language_id: str
    version: int | None
    text: str
    _index: LineIndex | None = field(default=None, repr=False)
    revision: int = field(default_factory=lambda: next(_REVISIONS))

    @property
    def index(self) -> LineIndex:
        if self._index is None or self._index.text is not self.text:
            self._index = LineIndex(self.text)
        return self._index

    def apply_changes(self, changes: list, version: int | None, encoding: str) -> None:
        """Apply `didChange` content changes in order (each one is relative to the previous)."""
        for change in changes:
            if getattr(change, "range", None) is None:  # no line index of the old text needed
                self.text = change.text
            else:
                self.text = apply_change(self.text, self.index, change, encoding)
        if changes:
            self.revision = next(_REVISIONS)
        self.version = version


class DocumentStore:
    """The fusion switch configurations the client has open, by URI."""

    def __init__(self) -> None:
        self._docs: dict[str, OpenDocument] = {}

    def open(self, uri: str, language_id: str, version: int | None, text: str) -> bool:
        """Track the document if it is a configuration; returns whether it is tracked."""
        if not is_fusion_switch_config(uri, language_id):
            self._docs.pop(uri, None)
            return False
        self._docs[uri] = OpenDocument(uri, language_id, version, text)
        return True

    def get(self, uri: str) -> OpenDocument | None:
        return self._docs.get(uri)

    def close(self, uri: str) -> OpenDocument | None:
        return self._docs.pop(uri, None)

    def __iter__(self):
        return iter(list(self._docs.values()))

    def __len__(self) -> int:
        return len(self._docs)
