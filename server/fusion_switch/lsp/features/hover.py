"""textDocument/hover: what a rule does, whether it can be switched off, its evidence."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from ..recipe import annotations
from ..safety import guarded
from .common import compute, document

if TYPE_CHECKING:
    from ..server import FusionSwitchServer


def register(server: FusionSwitchServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    @guarded()
    async def hover(ls: FusionSwitchServer, params: types.HoverParams):
        from ... import cfg  # lazy: see engine note in state.py

        found = document(ls, params.text_document.uri)
        if found is None:
            return None
        doc, conv = found
        parsed = await ls.state.document_async(doc)
        info = await compute(
            doc,
            cfg.hover,
            parsed,
            conv.offset(params.position),
            ls.state.context(doc.uri),
            evidence=annotations.evidence(ls, doc) or None,
        )
        return conv.hover(info) if info is not None else None
