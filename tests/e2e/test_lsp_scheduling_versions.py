"""A change that does not raise the version number still gets a new check and new answers.

A review found the analysis cache matched a document by (version, generation, text length):
`didChange` with the same version and a text of the same length (`"off"` → `"ofx"`) kept the
first text's diagnostics and hover. LSP asks clients to raise the version, but a client that
resends a version (or a server restarted under a client) must not get answers for a text that
is no longer there. Every client: push clients by the next publishDiagnostics, pull clients by a
pull that names the previous result id (what VS Code sends).
"""

from __future__ import annotations

import pytest
import pytest_lsp
from e2e_support import CLIENTS, SERVER, Session, start
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

pytestmark = pytest.mark.asyncio(loop_scope="module")
PULL = "visual-studio-code, pull diagnostics"


def _capabilities(name: str) -> types.ClientCapabilities:
    if name != PULL:
        return client_capabilities(name)
    caps = client_capabilities("visual-studio-code")  # as current VS Code declares them
    caps.text_document.diagnostic = types.DiagnosticClientCapabilities(
        related_document_support=False
    )
    caps.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    return caps


@pytest_lsp.fixture(config=SERVER, params=[*CLIENTS, PULL], scope="module")
async def lsp(request, lsp_client: LanguageClient):
    lsp_client.session = await start(
        lsp_client, request.param, capabilities=_capabilities(request.param)
    )
    yield
    await lsp_client.shutdown_session()


@pytest.fixture(scope="module")
def session(lsp: LanguageClient) -> Session:
    return lsp.session


OFF = '{"Switch": {"GraphFusion": {"ALL": "off"}}}'
OFX = '{"Switch": {"GraphFusion": {"ALL": "ofx"}}}'  # the same length
VALUE = types.Position(0, OFF.index('"off"') + 2)


def _same_version_change(session: Session, uri: str, text: str) -> None:
    """A full-text didChange that repeats the document's current version."""
    session.texts[uri] = text
    session.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(
                uri=uri, version=session.versions[uri]
            ),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


async def _pull(session: Session, uri: str, previous: str | None = None):
    return await session.client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri), previous_result_id=previous
        )
    )


async def _hover(session: Session, uri: str) -> str:
    hover = await session.client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), VALUE)
    )
    assert hover is not None
    return hover.contents.value


async def test_same_version_same_length_text_is_checked_again(session: Session) -> None:
    uri = session.open("scheduling/same-version/fusion_switch.cfg", OFF)
    if session.pull:
        first = await _pull(session, uri)
        assert [d.code for d in first.items] == ["all-overridden"]
    else:
        assert [d.code for d in await session.diagnostics(uri)] == ["all-overridden"]
    assert "switches off every rule" in await _hover(session, uri)

    mark = session.mark(uri)
    _same_version_change(session, uri, OFX)
    if session.pull:
        report = await _pull(session, uri, first.result_id)
        assert report.kind == "full", "the new text's diagnostics were reported unchanged"
        diagnostics = report.items
    else:
        diagnostics = await session.next_diagnostics(uri, mark)
    assert [d.code for d in diagnostics] == ["invalid-switch-value"]
    assert '"on"' in await _hover(session, uri)  # `Must be the string "on" or "off"`
    session.close(uri)


async def test_an_edit_that_restores_a_text_is_answered_for_that_text(session: Session) -> None:
    """Back to the first text, again under the same version: its own findings, not the
    ones cached for the text in between."""
    uri = session.open("scheduling/back-and-forth/fusion_switch.cfg", OFF)
    await session.diagnostics(uri)
    _same_version_change(session, uri, OFX)
    assert '"on"' in await _hover(session, uri)
    mark = session.mark(uri)
    _same_version_change(session, uri, OFF)
    assert "switches off every rule" in await _hover(session, uri)
    if session.pull:
        diagnostics = (await _pull(session, uri)).items
    else:
        diagnostics = await session.next_diagnostics(uri, mark)
        while [d.code for d in diagnostics] != ["all-overridden"]:  # the OFX check may come first
            mark += 1
            diagnostics = await session.next_diagnostics(uri, mark)
    assert [d.code for d in diagnostics] == ["all-overridden"]
    session.close(uri)
