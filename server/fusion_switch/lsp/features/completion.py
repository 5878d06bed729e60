"""textDocument/completion: keys and values valid at the cursor, with replace ranges."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from ..safety import guarded
from .common import compute, document

if TYPE_CHECKING:
    from ..server import FusionSwitchServer


def _empty() -> types.CompletionList:
    return types.CompletionList(is_incomplete=False, items=[])


def register(server: FusionSwitchServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_COMPLETION)
    @guarded(_empty)
    async def completion(ls: FusionSwitchServer, params: types.CompletionParams):
        from ... import cfg  # lazy: see engine note in state.py

        found = document(ls, params.text_document.uri)
        if found is None:
            return _empty()
        doc, conv = found
        analysis = await ls.state.analysis_async(doc)
        offset = conv.offset(params.position)
        items = await compute(
            doc,
            cfg.complete,
            analysis.document,
            offset,
            ls.state.context(),
            snippets=ls.state.client.snippets,
        )
        return types.CompletionList(
            is_incomplete=False, items=[conv.completion_item(i) for i in items]
        )
