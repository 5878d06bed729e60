"""textDocument/inlayHint: `suspect · cosine 0.87` after each suspected entry (clients that
declare inlay hints only)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from ..safety import guarded
from .common import annotated

if TYPE_CHECKING:
    from ..server import FusionSwitchServer


def register(server: FusionSwitchServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_INLAY_HINT)
    @guarded(list)
    async def inlay_hints(ls: FusionSwitchServer, params: types.InlayHintParams):
        found = await annotated(ls, params.text_document.uri)
        if found is None:
            return []
        _doc, conv, document, summary = found
        from ...workflow import annotate

        wanted = conv.span(params.range)
        return [
            types.InlayHint(
                position=conv.index.position(hint.offset, conv.encoding),
                label=hint.label,
                tooltip=hint.tooltip,
                padding_left=True,
            )
            for hint in annotate.hints(document, summary)
            if wanted.start <= hint.offset <= wanted.end
        ]
