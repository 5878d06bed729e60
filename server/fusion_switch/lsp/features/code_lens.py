"""textDocument/codeLens: the last comparison at the top of the file and on each suspected
entry (offered only to clients that declare code lens support; see capabilities.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from ..recipe import annotations
from ..safety import guarded
from .common import document

if TYPE_CHECKING:
    from ..server import FusionSwitchServer


def register(server: FusionSwitchServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    @guarded(list)
    async def code_lens(ls: FusionSwitchServer, params: types.CodeLensParams):
        found = document(ls, params.text_document.uri)
        if found is None:
            return []
        doc, conv = found
        summary = annotations.results(ls, doc)
        if not summary:
            return []
        from ...workflow import annotate

        analysis = await ls.state.analysis_async(doc)
        return [
            types.CodeLens(
                range=conv.range(lens.span),
                command=types.Command(
                    title=lens.title, command=lens.command, arguments=[lens.arguments]
                ),
            )
            for lens in annotate.lenses(analysis.document, summary, doc.uri)
        ]
