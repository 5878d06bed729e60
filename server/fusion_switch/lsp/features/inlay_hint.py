"""textDocument/inlayHint: `suspect · cosine 0.87` after each suspected entry (clients that
declare inlay hints only)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from ..recipe import annotations
from ..safety import guarded
from .common import document

if TYPE_CHECKING:
    from ..server import FusionSwitchServer


def register(server: FusionSwitchServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_INLAY_HINT)
    @guarded(list)
    async def inlay_hints(ls: FusionSwitchServer, params: types.InlayHintParams):
        found = document(ls, params.text_document.uri)
        if found is None:
            return []
        doc, conv = found
        summary = annotations.results(ls, doc)
        if not summary:
            return []
        from ...workflow import annotate

        analysis = await ls.state.analysis_async(doc)
        wanted = conv.span(params.range)
        return [
            types.InlayHint(
                position=conv.index.position(hint.offset, conv.encoding),
                label=hint.label,
                tooltip=hint.tooltip,
                padding_left=True,
            )
            for hint in annotate.hints(analysis.document, summary)
            if wanted.start <= hint.offset <= wanted.end
        ]
