"""Pull diagnostics (a client declaring them with refresh support, as current VS Code does)
and settings given in `initializationOptions`."""

from __future__ import annotations

import pytest
import pytest_lsp
from e2e_support import SERVER, Session, start
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

pytestmark = pytest.mark.asyncio(loop_scope="module")

UB = '{"Switch": {"UBFusion": {"TbeConvDequantSigmoidMulAddFusionPass": "off"}}}'
TYPO = '{"Switch": {"GraphFusion": {"ConvBatchnormFusionPas": "on"}}}'


def vscode_with_pull() -> types.ClientCapabilities:
    caps = client_capabilities("visual-studio-code")
    caps.text_document.diagnostic = types.DiagnosticClientCapabilities(
        related_document_support=False
    )
    caps.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    return caps


@pytest_lsp.fixture(
    config=SERVER,
    scope="module",
    params=[
        ("pull", None),
        ("flat", {"target": "Atlas 350"}),
        ("nested", {"fusionSwitch": {"target": "Ascend950PR_9599"}}),
    ],
    ids=["pull", "init-flat", "init-nested"],
)
async def lsp(request, lsp_client: LanguageClient):
    kind, options = request.param
    caps = vscode_with_pull() if kind == "pull" else client_capabilities("neovim@v0.7.0")
    lsp_client.session = await start(
        lsp_client, "visual-studio-code", capabilities=caps, initialization_options=options
    )
    lsp_client.session.kind = kind
    yield
    await lsp_client.shutdown_session()


@pytest.fixture(scope="module")
def session(lsp: LanguageClient) -> Session:
    return lsp.session


async def pull(session: Session, uri: str, previous: str | None = None):
    return await session.client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri), previous_result_id=previous
        )
    )


async def test_pull_reports_with_result_ids(session: Session) -> None:
    if session.kind != "pull":
        assert session.result.capabilities.diagnostic_provider is None
        return
    assert session.pull
    uri = session.open("pull/fusion_switch.cfg", TYPO)
    full = await pull(session, uri)
    assert full.kind == "full" and [d.code for d in full.items] == ["unknown-rule"]
    assert full.result_id
    unchanged = await pull(session, uri, full.result_id)
    assert unchanged.kind == "unchanged" and unchanged.result_id == full.result_id

    session.change(uri, [types.TextDocumentContentChangeWholeDocument(text=UB)], UB)
    changed = await pull(session, uri, full.result_id)
    assert changed.kind == "full" and changed.result_id != full.result_id
    assert [d.code for d in changed.items] == []

    # a settings change asks the client to pull again, and the report changes
    refreshes = session.client.diagnostic_refresh_count
    session.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"fusionSwitch": {"target": "Atlas 350"}})
    )
    items = await session.next_diagnostics(uri, refreshes)
    assert [d.code for d in items] == ["ub-unsupported-on-target"] * 2
    assert session.published.count(uri) == 0  # pull clients get no pushed duplicates


async def test_initialization_options_set_the_target(session: Session) -> None:
    if session.kind == "pull":
        assert session.result.capabilities.diagnostic_provider.identifier == "fusion-switch"
        return
    uri = session.open("init/fusion_switch.cfg", UB)
    found = [d.code for d in await session.diagnostics(uri)]
    assert found.count("ub-unsupported-on-target") == 2
