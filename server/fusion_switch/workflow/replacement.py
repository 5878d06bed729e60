"""Replacing a whole configuration text (all off, restore) with one small edit."""

from __future__ import annotations

from ..cfg.model import Edit, Span


def replacement_edit(old: str, new: str) -> Edit | None:
    """One edit replacing the part between the common prefix and suffix (the editor keeps
    cursors and folds outside it). Its ends never fall inside a `\\r\\n`: an LSP position
    cannot point between the two. None when the texts are equal."""
    if old == new:
        return None
    limit = min(len(old), len(new))
    prefix = 0
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    if prefix and old[prefix - 1] == "\r":
        prefix -= 1
    suffix = 0
    while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    end = len(old) - suffix
    if suffix and end > 0 and old[end - 1] == "\r" and old[end] == "\n":
        suffix -= 1
    return Edit(Span(prefix, len(old) - suffix), new[prefix : len(new) - suffix])
