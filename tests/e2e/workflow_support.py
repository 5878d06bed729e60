"""Helpers for the recipe e2e tests: an editor that applies the server's edits, a recorder of
every message in both directions, a generated comparison case, and client profiles without
progress / code lens / showDocument support."""

from __future__ import annotations

import asyncio
import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from e2e_support import TIMEOUT, Session, apply_text_edits, edits_of, start
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

BARE = (
    "bare"  # Neovim 0.7's capabilities minus work-done progress (and it has no lens/showDocument)
)
USER_CFG = """{
  "Switch": {
    "GraphFusion": {
      "ConvBatchnormFusionPass": "on",
      "AvgPoolFusionPass": "off"
    },
    "UBFusion": {
      "ALL": "on"
    }
  }
}
"""
INJECTED = ("GraphFusion", "ConvBatchnormFusionPass")  # generate_case's wrong_epsilon fault


def capabilities(name: str) -> types.ClientCapabilities:
    if name != BARE:
        return client_capabilities(name)
    caps = copy.deepcopy(client_capabilities("neovim@v0.7.0"))
    caps.window.work_done_progress = False
    caps.window.show_document = None
    caps.text_document.code_lens = None
    caps.text_document.inlay_hint = None
    return caps


def profile(name: str) -> str:
    return "neovim@v0.7.0" if name == BARE else name


class Recorder:
    """Every message the client sends and receives, as (direction, kind, method, payload)."""

    def __init__(self, client: LanguageClient) -> None:
        self.events: list[tuple[str, str, str, Any]] = []
        self._methods: dict[Any, str] = {}
        protocol = client.protocol
        handle, send = protocol.handle_message, protocol._send_data

        def incoming(message):
            method = getattr(message, "method", None)
            if method is not None:
                kind = "request" if getattr(message, "id", None) is not None else "notification"
                self.events.append(("in", kind, method, getattr(message, "params", None)))
            else:
                method = self._methods.get(getattr(message, "id", None), "?")
                self.events.append(("in", "response", method, getattr(message, "result", None)))
            return handle(message)

        def outgoing(data):
            method = getattr(data, "method", None)
            msg_id = getattr(data, "id", None)
            if method is not None:
                if msg_id is not None:
                    self._methods[msg_id] = method
                kind = "request" if msg_id is not None else "notification"
                self.events.append(("out", kind, method, getattr(data, "params", None)))
            else:
                self.events.append(("out", "response", "", getattr(data, "result", None)))
            return send(data)

        protocol.handle_message = incoming
        protocol._send_data = outgoing

    def mark(self) -> int:
        return len(self.events)

    def since(self, mark: int) -> list[tuple[str, str, str, Any]]:
        return self.events[mark:]


class Editor:
    """Applies `workspace/applyEdit` to the session's texts and sends the full new text back
    with the next version, as an editor does."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.applied: list[types.ApplyWorkspaceEditParams] = []
        self.answer: str | None = None  # the button the user clicks in showMessageRequest
        self.questions: list[str] = []
        client = session.client

        self.refreshes: list[str] = []

        @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
        def lens_refresh(params: None):
            self.refreshes.append(types.WORKSPACE_CODE_LENS_REFRESH)

        @client.feature(types.WORKSPACE_INLAY_HINT_REFRESH)
        def hint_refresh(params: None):
            self.refreshes.append(types.WORKSPACE_INLAY_HINT_REFRESH)

        @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
        def ask(params: types.ShowMessageRequestParams):
            self.questions.append(params.message)
            return types.MessageActionItem(self.answer) if self.answer else None

        @client.feature(types.WORKSPACE_APPLY_EDIT)
        def apply_edit(params: types.ApplyWorkspaceEditParams):
            self.applied.append(params)
            edit = params.edit
            uris = (
                [c.text_document.uri for c in edit.document_changes]
                if edit.document_changes
                else list(edit.changes or {})
            )
            for uri in uris:
                if edit.document_changes:
                    version = next(
                        c.text_document.version
                        for c in edit.document_changes
                        if c.text_document.uri == uri
                    )
                    if version is not None and version != session.versions[uri]:
                        return types.ApplyWorkspaceEditResult(
                            applied=False, failure_reason="stale version"
                        )
                text = apply_text_edits(session.texts[uri], edits_of(edit, uri), session.encoding)
                session.change(uri, [types.TextDocumentContentChangeWholeDocument(text=text)], text)
            return types.ApplyWorkspaceEditResult(applied=True)


async def start_workflow(client: LanguageClient, name: str, *, record: bool = False) -> Session:
    """A session for the recipe as client `name` (or BARE), with an `Editor` that applies the
    server's edits (and, with `record`, a `Recorder` of every message)."""
    session = await start(client, profile(name), capabilities=capabilities(name))
    session.bare = name == BARE
    if record:
        session.recorder = Recorder(client)
    session.editor = Editor(session)
    return session


def workflow_fixtures(
    config: ClientServerConfig,
    clients: tuple[str, ...] = ("visual-studio-code",),
    *,
    record: bool = False,
):
    """A recipe test module's fixtures: ``workflow_client`` (a server started with ``config``
    and a session per client name in ``clients``, shut down after the module) and ``session``.
    Use as ``workflow_client, session = workflow_fixtures(SERVER)`` at module level."""

    @pytest_lsp.fixture(config=config, params=list(clients), scope="module")
    async def workflow_client(request, lsp_client: LanguageClient):
        lsp_client.session = await start_workflow(lsp_client, request.param, record=record)
        yield
        await lsp_client.shutdown_session()

    @pytest.fixture(scope="module")
    def session(workflow_client):
        return workflow_client.session

    return workflow_client, session


def fs(*args) -> subprocess.CompletedProcess:
    """`fusion-switch ARGS` in a terminal."""
    return subprocess.run(
        [sys.executable, "-m", "fusion_switch", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )


async def execute(session: Session, command: str, **arguments) -> Any:
    return await asyncio.wait_for(
        session.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=command, arguments=[arguments])
        ),
        TIMEOUT * 3,
    )


def by_code(diagnostics, code: str) -> list[types.Diagnostic]:
    return [d for d in diagnostics if d.code == code]


def text_at(text: str, rng: types.Range) -> str:
    lines = text.split("\n")
    return lines[rng.start.line][rng.start.character : rng.end.character]


def case_paths(case) -> dict[str, str]:
    return {
        "onDump": str(case.on_dump),
        "offDump": str(case.off_dump),
        "onGraph": str(case.on_graph),
        "offGraph": str(case.off_graph),
    }


async def compare(session: Session, uri: str, case, output: Path) -> Any:
    """fusionSwitch.compare on the open configuration `uri` with the generated `case`."""
    return await execute(
        session,
        "fusionSwitch.compare",
        cfgUri=uri,
        output=str(output),
        **case_paths(case),
    )


def write_cfg(folder: Path, text: str = USER_CFG) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "fusion_switch.cfg"
    path.write_bytes(text.encode("utf-8"))
    return path


def open_path(session: Session, path: Path, text: str | None = None) -> str:
    """Open ``path`` in the session with ``text`` (default: the file's)."""
    uri = path.as_uri()
    text = path.read_bytes().decode("utf-8") if text is None else text
    session.versions[uri] = 1
    session.texts[uri] = text
    session.client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="json", version=1, text=text)
        )
    )
    return uri


async def fresh_vscode(env: dict[str, str] | None = None) -> tuple[LanguageClient, Session]:
    """A server of its own (``env``: its environment) with a VS Code-like client, initialised,
    answering the server's questions and edits as an editor does; stop it with
    ``client.stop()`` (after ``exit``)."""
    import os
    import sys

    config = ClientServerConfig(
        server_command=[sys.executable, "-m", "fusion_switch", "serve"],
        server_env=env if env is not None else dict(os.environ),
    )
    client = await config.start()
    fresh = await start(client, "visual-studio-code")
    Editor(fresh)
    return client, fresh
