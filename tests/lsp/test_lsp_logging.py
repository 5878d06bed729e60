"""The server's log in a normal session: no error line; the client's trace value is honoured.

Drives `python -m fusion_switch serve` over stdio with pygls's client and reads its stderr (what
VS Code prints in the *Fusion Switch* output channel, each line as `[error]`) and every
`window/logMessage`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys

import pytest
from lsprotocol import types
from pygls.lsp.client import LanguageClient

RULE = "ConvBatchnormFusionPass"
TEXT = '{\n  "Switch": {\n    "GraphFusion": {\n      "ALL": "on"\n    }\n  }\n}\n'
URI = "file:///tmp/fusion-switch-logging/fusion_switch.cfg"


async def _session(trace: str, env: dict[str, str] | None = None, set_trace: str | None = None):
    """Open, type a name letter by letter, complete, hover, cancel answered requests, close."""
    client = LanguageClient("logging-test", "1")
    messages: list[types.LogMessageParams] = []
    client.feature(types.WINDOW_LOG_MESSAGE)(lambda params: messages.append(params))
    client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)(lambda params: None)
    client.feature(types.WINDOW_SHOW_MESSAGE)(lambda params: None)
    server_env = {k: v for k, v in os.environ.items() if k != "FUSION_SWITCH_LOG_LEVEL"}
    server_env.update(env or {})
    await client.start_io(sys.executable, "-m", "fusion_switch", "serve", env=server_env)
    stderr_task = asyncio.create_task(client._server.stderr.read())  # a full pipe would block it
    caps = types.ClientCapabilities(
        text_document=types.TextDocumentClientCapabilities(
            completion=types.CompletionClientCapabilities(
                completion_item=types.ClientCompletionItemOptions(snippet_support=True)
            ),
            hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown]),
        ),
        window=types.WindowClientCapabilities(work_done_progress=True),
    )
    await client.initialize_async(
        types.InitializeParams(capabilities=caps, trace=types.TraceValue(trace))
    )
    client.initialized(types.InitializedParams())
    if set_trace is not None:
        client.set_trace(types.SetTraceParams(value=types.TraceValue(set_trace)))
    doc = types.TextDocumentIdentifier(uri=URI)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=URI, language_id="fusion-switch", version=1, text=TEXT)
        )
    )
    line, col = 3, len('      "ALL": "on"')
    typed = ',\n      "'
    for version, char in enumerate(typed + RULE[:6], start=2):
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=URI, version=version),
                [
                    types.TextDocumentContentChangePartial(
                        range=types.Range(types.Position(line, col), types.Position(line, col)),
                        text=char,
                    )
                ],
            )
        )
        if char == "\n":
            line, col = line + 1, 0
        else:
            col += 1
        position = types.Position(line, col)
        msg_id = f"completion-{version}"
        request = client.protocol.send_request_async(
            types.TEXT_DOCUMENT_COMPLETION, types.CompletionParams(doc, position), msg_id=msg_id
        )
        result = await request
        # the editor cancels completion requests while the user types; often the answer is
        # already on its way: pygls then sees a cancel for an id it no longer knows
        client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
        assert result is not None
    await client.text_document_hover_async(
        types.HoverParams(doc, types.Position(3, len('      "A')))
    )
    client.text_document_did_close(types.DidCloseTextDocumentParams(doc))
    await client.shutdown_async(None)
    client.exit(None)
    await asyncio.wait_for(client._server.wait(), 10)
    stderr = (await stderr_task).decode("utf-8", "replace")
    await client.stop()
    return stderr, messages


def test_a_normal_session_writes_no_error_line():
    stderr, messages = asyncio.run(_session("off"))
    assert stderr.strip() == "", stderr
    assert [m.message for m in messages if m.type == types.MessageType.Error] == []


def test_verbose_trace_logs_debug_lines_in_one_format_with_the_race_demoted():
    stderr, _ = asyncio.run(_session("verbose"))
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines, "verbose trace logged nothing"
    levels = {logging.getLevelName(n) for n in range(0, 60, 10)}
    head = [line for line in lines if line[:4].isdigit()]  # continuation lines are tracebacks
    assert head and all(line.split(" ")[2] in levels for line in head), head[:3]
    assert any(" DEBUG " in line for line in head)
    races = [line for line in head if "Cancel notification for unknown message id" in line]
    assert races and all(" DEBUG pygls" in line for line in races), races
    assert not any(" ERROR " in line for line in head), [x for x in head if " ERROR " in x]


def test_set_trace_off_after_verbose_silences_the_debug_lines():
    stderr, _ = asyncio.run(_session("verbose", set_trace="off"))
    assert "$/setTrace" in stderr  # logged while verbose
    after = stderr.split("$/setTrace", 1)[-1]
    assert "textDocument/completion" not in after, after[:800]


@pytest.mark.parametrize("level", ["INFO"])
def test_the_environment_variable_overrides_the_trace(level):
    stderr, _ = asyncio.run(_session("off", env={"FUSION_SWITCH_LOG_LEVEL": level}))
    assert " INFO " in stderr
