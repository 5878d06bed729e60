"""textDocument/codeLens: the last comparison at the top of the file and on each suspected
entry (offered only to clients that declare code lens support; see capabilities.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from ..safety import guarded
from .common import annotated

if TYPE_CHECKING:
    from ..server import FusionSwitchServer


def register(server: FusionSwitchServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    @guarded(list)
    async def code_lens(ls: FusionSwitchServer, params: types.CodeLensParams):
        found = await annotated(ls, params.text_document.uri)
        if found is None:
            return []
        doc, conv, document, summary = found
        from ...workflow import annotate

        return [
            types.CodeLens(
                range=conv.range(lens.span),
                command=types.Command(
                    title=lens.title, command=lens.command, arguments=[lens.arguments]
                ),
            )
            for lens in annotate.lenses(document, summary, doc.uri)
        ]
