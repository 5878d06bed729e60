"""Helpers for driving `fusion-switch serve` over stdio with pytest-lsp.

`CLIENTS` are pytest-lsp's captured capability snapshots of real editors. Servers are
module-scoped (one per client per test module) to keep the suite fast, so each test opens
documents under its own URIs. `Published` records every publishDiagnostics with its version.
"""

from __future__ import annotations

import asyncio
import sys
from collections import defaultdict
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

CLIENTS = ["visual-studio-code", "neovim@v0.7.0", "neovim@v0.11.0", "emacs"]
SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "fusion_switch", "serve"])
ROOT = Path(__file__).resolve().parent / "workspace"
TIMEOUT = 10.0


def _unit_width(char: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(char.encode("utf-8"))
    if encoding == "utf-32":
        return 1
    return 2 if ord(char) > 0xFFFF else 1


def offset_at(text: str, position: types.Position, encoding: str) -> int:
    """Independent of the server's code: walk the \n-separated lines unit by unit."""
    lines = text.split("\n")
    offset = sum(len(line) + 1 for line in lines[: position.line])
    units = 0
    for char in lines[position.line] if position.line < len(lines) else "":
        if units >= position.character:
            break
        units += _unit_width(char, encoding)
        offset += 1
    return offset


def apply_text_edits(text: str, edits, encoding: str) -> str:
    """Apply LSP TextEdits the way an editor does (all ranges refer to the original text)."""
    spans = [
        (offset_at(text, e.range.start, encoding), offset_at(text, e.range.end, encoding), e)
        for e in edits
    ]
    for start, end, edit in sorted(spans, key=lambda s: (s[0], s[1]), reverse=True):
        text = text[:start] + edit.new_text + text[end:]
    return text


def edits_of(edit: types.WorkspaceEdit, uri: str) -> list[types.TextEdit]:
    """The text edits for `uri` in either WorkspaceEdit shape."""
    if edit.document_changes:
        return [
            e
            for change in edit.document_changes
            if change.text_document.uri == uri
            for e in change.edits
        ]
    return list((edit.changes or {}).get(uri, []))


def uri_for(name: str) -> str:
    return (ROOT / name).as_uri()


class Published:
    """Every publishDiagnostics the client received, per URI, in order."""

    def __init__(self, client: LanguageClient) -> None:
        self.by_uri: dict[str, list[types.PublishDiagnosticsParams]] = defaultdict(list)
        features = client.protocol.fm.features
        original = features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

        def record(params: types.PublishDiagnosticsParams) -> None:
            original(params)
            self.by_uri[params.uri].append(params)

        features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = record

    async def wait(
        self, uri: str, version: int | None = None, after: int = 0
    ) -> types.PublishDiagnosticsParams:
        """The first publication for `uri` (with `version`, if given) past index `after`."""
        deadline = asyncio.get_running_loop().time() + TIMEOUT
        while True:
            for params in self.by_uri[uri][after:]:
                if version is None or params.version == version:
                    return params
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"no diagnostics for {uri} version {version}")
            await asyncio.sleep(0.005)

    def count(self, uri: str) -> int:
        return len(self.by_uri[uri])


class Session:
    """A client plus helpers shared by the e2e tests."""

    def __init__(self, client: LanguageClient, name: str, result: types.InitializeResult):
        self.client = client
        self.name = name
        self.result = result
        self.published = Published(client)
        self.versions: dict[str, int] = {}
        self.texts: dict[str, str] = {}

    @property
    def encoding(self) -> str:
        return self.result.capabilities.position_encoding or "utf-16"

    @property
    def pull(self) -> bool:
        return self.result.capabilities.diagnostic_provider is not None

    def open(self, name: str, text: str, language_id: str = "json") -> str:
        uri = uri_for(name)
        self.versions[uri] = 1
        self.texts[uri] = text
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id=language_id, version=1, text=text
                )
            )
        )
        return uri

    def change(self, uri: str, changes: list, new_text: str) -> int:
        self.versions[uri] += 1
        self.texts[uri] = new_text
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=uri, version=self.versions[uri]
                ),
                content_changes=changes,
            )
        )
        return self.versions[uri]

    def close(self, uri: str) -> None:
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )

    async def diagnostics(self, uri: str) -> list[types.Diagnostic]:
        """The current diagnostics of `uri`'s latest version, however the client gets them."""
        if self.pull:
            report = await self.client.text_document_diagnostic_async(
                types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri))
            )
            return list(report.items)
        params = await self.published.wait(uri, self.versions[uri])
        return list(params.diagnostics)

    async def barrier(self) -> None:
        """A request round trip: everything the server sent before answering has arrived."""
        await self.client.text_document_hover_async(
            types.HoverParams(
                types.TextDocumentIdentifier(uri_for("none.cfg")), types.Position(0, 0)
            )
        )

    def mark(self, uri: str) -> int:
        """Remember how many publications `uri` has had (to wait for the next one)."""
        return self.published.count(uri) if not self.pull else self.client.diagnostic_refresh_count

    async def next_diagnostics(self, uri: str, mark: int) -> list[types.Diagnostic]:
        """Diagnostics the server sends on its own after `mark` (e.g. after a settings change)."""
        if not self.pull:
            return list((await self.published.wait(uri, after=mark)).diagnostics)
        deadline = asyncio.get_running_loop().time() + TIMEOUT
        while self.client.diagnostic_refresh_count <= mark:
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError("no workspace/diagnostic/refresh")
            await asyncio.sleep(0.005)
        return await self.diagnostics(uri)


async def start(client: LanguageClient, name: str, **init) -> Session:
    from pytest_lsp import client_capabilities

    result = await client.initialize_session(
        types.InitializeParams(
            capabilities=init.pop("capabilities", None) or client_capabilities(name),
            root_uri=ROOT.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=ROOT.as_uri(), name="workspace")],
            **init,
        )
    )
    return Session(client, name, result)


def session_fixtures(clients: list[str], config: ClientServerConfig = SERVER):
    """The module-scoped `lsp` and `session` fixtures: one server started by `config` per
    client in `clients`; assign both in a test module (or conftest) to use them:
    `lsp, session = session_fixtures([...])`."""

    @pytest_lsp.fixture(config=config, params=clients, scope="module")
    async def lsp(request, lsp_client: LanguageClient):
        lsp_client.session = await start(lsp_client, request.param)
        yield
        await lsp_client.shutdown_session()

    @pytest.fixture(scope="module")
    def session(lsp: LanguageClient) -> Session:
        return lsp.session

    return lsp, session


async def every_request(session: Session, uri: str, position: types.Position) -> list:
    """Each document request answers (possibly with nothing) instead of failing; returns the
    document symbols."""
    doc = types.TextDocumentIdentifier(uri)
    client = session.client
    await client.text_document_hover_async(types.HoverParams(doc, position))
    completion = await client.text_document_completion_async(types.CompletionParams(doc, position))
    assert completion is not None
    symbols = await client.text_document_document_symbol_async(types.DocumentSymbolParams(doc))
    await client.text_document_folding_range_async(types.FoldingRangeParams(doc))
    await client.text_document_formatting_async(
        types.DocumentFormattingParams(doc, types.FormattingOptions(2, True))
    )
    await client.text_document_code_action_async(
        types.CodeActionParams(doc, types.Range(position, position), types.CodeActionContext([]))
    )
    return list(symbols or [])
