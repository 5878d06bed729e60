"""Document synchronisation: didOpen, didChange (incremental), didClose."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from ..recipe import annotations
from ..safety import guarded
from . import configuration, diagnostics

if TYPE_CHECKING:
    from ..server import FusionSwitchServer


def register(server: FusionSwitchServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    @guarded()
    def did_open(ls: FusionSwitchServer, params: types.DidOpenTextDocumentParams) -> None:
        item = params.text_document
        if ls.state.documents.open(item.uri, item.language_id, item.version, item.text):
            ls.state.forget(item.uri)
            if not configuration.ask_first(ls, item.uri):  # else checked once it answered
                diagnostics.validate(ls, ls.state.documents.get(item.uri), immediately=True)
            counts = ls.state.suspect_counts() if ls.state.client.status_notification else []
            if any(entry["uri"] == item.uri for entry in counts):
                annotations.send_status(ls)  # the status bar counts per file: this one's

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    @guarded()
    def did_change(ls: FusionSwitchServer, params: types.DidChangeTextDocumentParams) -> None:
        doc = ls.state.documents.get(params.text_document.uri)
        if doc is None:
            return
        doc.apply_changes(params.content_changes, params.text_document.version, ls.state.encoding)
        diagnostics.validate(ls, doc)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    @guarded()
    def did_close(ls: FusionSwitchServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        if ls.state.documents.close(uri) is not None:
            ls.state.forget(uri)
            diagnostics.clear(ls, uri)
