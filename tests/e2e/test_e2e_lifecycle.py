"""Start-up, capability negotiation and commands, per emulated client."""

from __future__ import annotations

import pytest
from e2e_support import Session
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_server_info_and_capabilities(session: Session) -> None:
    result = session.result
    assert result.server_info.name == "fusion-switch"
    caps = result.capabilities
    assert caps.text_document_sync.change == types.TextDocumentSyncKind.Incremental
    assert set(caps.completion_provider.trigger_characters) == {'"', ":"}
    assert caps.hover_provider and caps.document_formatting_provider
    assert caps.folding_range_provider and caps.document_symbol_provider
    assert "fusionSwitch.reloadCatalogue" in caps.execute_command_provider.commands
    assert caps.diagnostic_provider is None  # none of these snapshots can be asked to refresh


async def test_position_encoding_follows_client_preference(session: Session) -> None:
    expected = {"emacs": "utf-32", "neovim@v0.11.0": "utf-8"}.get(session.name, "utf-16")
    assert session.result.capabilities.position_encoding == expected


async def test_reload_catalogue_command(session: Session) -> None:
    result = await session.client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="fusionSwitch.reloadCatalogue")
    )
    assert result["rules"] > 600
    assert result["errors"] == []
