"""textDocument/completion: keys and values valid at the cursor, with replace ranges."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from ..completion_text import JsonPieces
from ..convert import Converter
from ..safety import guarded
from .common import compute, document

if TYPE_CHECKING:
    from ...cfg import CfgDocument, Context
    from ..server import FusionSwitchServer


def _empty() -> types.CompletionList:
    return types.CompletionList(is_incomplete=False, items=[])


def completion_json(
    document: CfgDocument, offset: int, ctx: Context, conv: Converter
) -> JsonPieces:
    """The completion result for the client `conv` converts for, as JSON (`str()` of it:
    the text)."""
    from ... import cfg  # lazy: see engine note in state.py

    choices = cfg.complete_choices(document, offset, ctx, snippets=conv.client.snippets)
    return conv.completion_list(choices)


def register(server: FusionSwitchServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_COMPLETION)
    @guarded(_empty)
    async def completion(ls: FusionSwitchServer, params: types.CompletionParams):
        found = document(ls, params.text_document.uri)
        if found is None:
            return _empty()
        doc, conv = found
        parsed = await ls.state.document_async(doc)
        offset = conv.offset(params.position)
        return await compute(doc, completion_json, parsed, offset, ls.state.context(doc.uri), conv)
