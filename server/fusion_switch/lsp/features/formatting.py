"""textDocument/formatting: the layout of the CANN docs, as one minimal edit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from ..safety import guarded
from .common import compute, document

if TYPE_CHECKING:
    from ...cfg.model import Edit
    from ..server import FusionSwitchServer


def minimal_edit(old: str, new: str) -> Edit | None:
    """One edit replacing only the part between the common prefix and suffix (so the
    editor keeps cursors and folds outside it); None when the texts are equal."""
    from ...cfg.model import Edit, Span

    if old == new:
        return None
    limit = min(len(old), len(new))
    prefix = 0
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    return Edit(Span(prefix, len(old) - suffix), new[prefix : len(new) - suffix])


def register(server: FusionSwitchServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_FORMATTING)
    @guarded(list)
    async def formatting(ls: FusionSwitchServer, params: types.DocumentFormattingParams):
        from ... import cfg  # lazy: see engine note in state.py

        found = document(ls, params.text_document.uri)
        if found is None:
            return []
        doc, conv = found
        asked = doc.text  # the converter's text: the edit's positions are in it
        parsed = await ls.state.document_async(doc)
        if parsed.text != asked:
            return []  # parsed after an edit: the editor asks again for the new text
        formatted = await compute(doc, cfg.format_document, parsed)
        if formatted is None or doc.text is not asked:
            return []  # the document moved on while formatting ran (a review)
        edit = minimal_edit(asked, formatted)
        return [conv.text_edit(edit)] if edit is not None else []
