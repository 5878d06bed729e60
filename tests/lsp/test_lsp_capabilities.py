"""What the server offers each emulated client (pytest-lsp's captured capability snapshots)."""

from __future__ import annotations

import pytest
from fusion_switch.lsp.capabilities import ClientFeatures, server_capabilities
from lsprotocol import types
from pytest_lsp import client_capabilities

FLAGS = (
    "snippets",
    "completion_markdown",
    "hierarchical_symbols",
    "pull_diagnostics",
    "configuration",
    "related_information",
    "diagnostic_data",
)


@pytest.mark.parametrize(
    ("client", "expected"),
    [
        (
            "visual-studio-code",
            dict(
                snippets=True,
                completion_markdown=True,
                hierarchical_symbols=True,
                pull_diagnostics=False,
                configuration=True,
                related_information=True,
                diagnostic_data=True,
            ),
        ),
        (
            "neovim@v0.7.0",
            dict(
                snippets=False,
                completion_markdown=True,
                hierarchical_symbols=True,
                pull_diagnostics=False,
                configuration=False,
                related_information=True,
                diagnostic_data=False,
            ),
        ),
        # declares textDocument.diagnostic but not workspace.diagnostics.refreshSupport
        (
            "neovim@v0.11.0",
            dict(
                snippets=True,
                completion_markdown=True,
                hierarchical_symbols=True,
                pull_diagnostics=False,
                configuration=True,
                related_information=True,
                diagnostic_data=True,
            ),
        ),
        (
            "emacs",
            dict(
                snippets=False,
                completion_markdown=False,
                hierarchical_symbols=True,
                pull_diagnostics=False,
                configuration=True,
                related_information=False,
                diagnostic_data=False,
            ),
        ),
    ],
)
def test_client_features(client: str, expected: dict) -> None:
    features = ClientFeatures.from_capabilities(client_capabilities(client))
    assert {flag: getattr(features, flag) for flag in FLAGS} == expected


def with_pull(caps: types.ClientCapabilities) -> types.ClientCapabilities:
    caps.text_document.diagnostic = types.DiagnosticClientCapabilities()
    caps.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    return caps


def test_pull_diagnostics_offered_only_to_clients_that_can_refresh() -> None:
    push = ClientFeatures.from_capabilities(client_capabilities("visual-studio-code"))
    pull = ClientFeatures.from_capabilities(with_pull(client_capabilities("visual-studio-code")))
    assert pull.pull_diagnostics
    assert server_capabilities(push, "utf-16", []).diagnostic_provider is None
    options = server_capabilities(pull, "utf-16", []).diagnostic_provider
    assert options is not None and options.inter_file_dependencies is False


def test_declared_capabilities() -> None:
    caps = server_capabilities(ClientFeatures(), "utf-8", ["fusionSwitch.reloadCatalogue"])
    assert caps.position_encoding == "utf-8"
    assert caps.text_document_sync.change == types.TextDocumentSyncKind.Incremental
    assert caps.completion_provider.trigger_characters == ['"', ":"]
    assert caps.execute_command_provider.commands == ["fusionSwitch.reloadCatalogue"]
    assert caps.code_action_provider is True  # no literal support → no kinds
    literal = ClientFeatures(code_action_literals=True)
    kinds = server_capabilities(literal, "utf-16", []).code_action_provider.code_action_kinds
    assert types.CodeActionKind.QuickFix in kinds
