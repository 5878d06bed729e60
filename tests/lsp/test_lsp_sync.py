"""Document synchronisation keeps one copy of a document: the server's own (`lsp.documents`).

pygls's built-in didOpen/didChange/didClose also keep every open file in its workspace,
which this server never reads; at 5,000 entries that copy cost ~0.7 ms of each edit
(issue 16). The server is driven in process through pygls's own message dispatch, so the
built-in handlers run exactly as they do over stdio.
"""

from __future__ import annotations

import asyncio

from fusion_switch.lsp.features.diagnostics import DEBOUNCE
from in_process import Writer, connected

URI = "file:///project/fusion_switch.cfg"
OTHER = "file:///project/notes.json"


def _published(writer: Writer, uri: str) -> list[list[str]]:
    return [
        [d["message"] for d in m["params"]["diagnostics"]]
        for m in writer.messages
        if m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
    ]


async def _initialised_with_a_document(send) -> str:
    """Initialise the server and open :data:`URI`; its text."""
    send("initialize", {"capabilities": {}, "processId": None, "rootUri": None}, 1)
    await asyncio.sleep(0)
    text = '{"Switch": {"GraphFusion": {"ALL": "on"}}}'
    send(
        "textDocument/didOpen",
        {"textDocument": {"uri": URI, "languageId": "json", "version": 1, "text": text}},
    )
    return text


async def test_documents_are_kept_once_and_still_checked():
    server, writer, send = connected()

    text = await _initialised_with_a_document(send)
    send(
        "textDocument/didOpen",
        {"textDocument": {"uri": OTHER, "languageId": "json", "version": 1, "text": "{}"}},
    )
    # "on" -> "maybe": an incremental change the server must apply to its own copy
    start = text.index('"on"')
    change = {
        "range": {
            "start": {"line": 0, "character": start},
            "end": {"line": 0, "character": start + 4},
        },
        "text": '"maybe"',
    }
    send(
        "textDocument/didChange",
        {"textDocument": {"uri": URI, "version": 2}, "contentChanges": [change]},
    )
    waited = 0.0
    while len(_published(writer, URI)) < 2 and waited < 20 * DEBOUNCE:
        await asyncio.sleep(0.02)
        waited += 0.02
    assert len(_published(writer, URI)) >= 2, writer.messages

    assert server.workspace.text_documents == {}
    assert server.state.documents.get(URI).text == text.replace('"on"', '"maybe"')
    assert server.state.documents.get(OTHER) is None
    first, after_edit = _published(writer, URI)[:2]
    assert not any("maybe" in message for message in first), first
    assert any("maybe" in message for message in after_edit), after_edit

    send("textDocument/didClose", {"textDocument": {"uri": URI}})
    await asyncio.sleep(0)
    assert server.state.documents.get(URI) is None
    assert _published(writer, URI)[-1] == []
    pending = asyncio.all_tasks() - {asyncio.current_task()}
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)


async def test_handled_notifications_leave_nothing_behind():
    """pygls keeps the future of every notification it runs through a generator handler
    (didOpen, didChange, didClose: our own document synchronisation) in its table of running
    requests and never removes it: 61,001 entries after 60,000 edits, and a review found each
    edit paying for the whole table once `$/cancelRequest` was passed on to command tasks
    (0.05 ms an edit growing to 9.4 ms at 60,000 edits). Finished handlers leave the table."""
    server, _, send = connected()
    protocol = server.protocol

    text = await _initialised_with_a_document(send)
    for version in range(2, 2002):
        send(
            "textDocument/didChange",
            {"textDocument": {"uri": URI, "version": version}, "contentChanges": [{"text": text}]},
        )
    await asyncio.sleep(0)
    assert len(protocol._request_futures) < 10, len(protocol._request_futures)
