"""The one place where the server decides what it offers, from what the client declares.

`ClientFeatures.from_capabilities` reads the client's capabilities once, at `initialize`;
handlers consult the resulting flags (snippets, markdown, hierarchical symbols...) instead of
digging in the capability tree. `server_capabilities` builds the `initialize` answer.

Diagnostics: the server pushes (`textDocument/publishDiagnostics`) by default. A client that
declares pull diagnostics *and* `workspace.diagnostics.refreshSupport` (current VS Code) gets
pull instead: the server answers `textDocument/diagnostic` and asks for a refresh when the
target or catalogue changes. Offering both to one client makes it show every problem twice
(VS Code and Neovim keep pushed and pulled diagnostics in separate collections), and a pull
client that cannot be asked to refresh would miss re-validation after a settings change.
"""

from __future__ import annotations

from dataclasses import dataclass

from lsprotocol import types
from pygls.capabilities import get_capability

COMPLETION_TRIGGERS = ['"', ":"]
CODE_ACTION_KINDS = [types.CodeActionKind.QuickFix, types.CodeActionKind.Source]
SOURCE_CONVERT_TO_JSON = "source.convertToJson"


@dataclass(frozen=True)
class ClientFeatures:
    snippets: bool = False
    completion_markdown: bool = False
    hover_markdown: bool = False
    hierarchical_symbols: bool = False
    pull_diagnostics: bool = False
    related_information: bool = False
    diagnostic_data: bool = False
    code_action_literals: bool = False
    document_changes: bool = False
    configuration: bool = False
    line_folding_only: bool = False
    folding_range_limit: int | None = None
    work_done_progress: bool = False
    show_message: bool = True
    apply_edit: bool = False
    show_message_request: bool = False
    show_document: bool = False
    code_lens: bool = False
    code_lens_refresh: bool = False
    inlay_hints: bool = False
    inlay_hint_refresh: bool = False
    status_notification: str | None = None  # experimental.fusionSwitch.statusNotification
    # experimental.fusionSwitch.compareChoices: the client offers the ranks or iterations a
    # comparison needs named itself (our VS Code extension: a quick pick), no message shown
    compare_choices: bool = False

    @classmethod
    def from_capabilities(cls, caps: types.ClientCapabilities | None) -> ClientFeatures:
        if caps is None:
            return cls()

        def has(path: str) -> bool:
            return bool(get_capability(caps, path, None))

        def markdown(path: str) -> bool:
            formats = get_capability(caps, path, None) or []
            return types.MarkupKind.Markdown in formats

        return cls(
            snippets=has("text_document.completion.completion_item.snippet_support"),
            completion_markdown=markdown(
                "text_document.completion.completion_item.documentation_format"
            ),
            hover_markdown=markdown("text_document.hover.content_format"),
            hierarchical_symbols=has(
                "text_document.document_symbol.hierarchical_document_symbol_support"
            ),
            pull_diagnostics=get_capability(caps, "text_document.diagnostic", None) is not None
            and has("workspace.diagnostics.refresh_support"),
            related_information=has("text_document.publish_diagnostics.related_information"),
            diagnostic_data=has("text_document.publish_diagnostics.data_support"),
            code_action_literals=has("text_document.code_action.code_action_literal_support"),
            document_changes=has("workspace.workspace_edit.document_changes"),
            configuration=has("workspace.configuration"),
            line_folding_only=has("text_document.folding_range.line_folding_only"),
            folding_range_limit=get_capability(caps, "text_document.folding_range.range_limit"),
            work_done_progress=has("window.work_done_progress"),
            apply_edit=has("workspace.apply_edit"),
            show_message_request=get_capability(caps, "window.show_message", None) is not None,
            show_document=has("window.show_document.support"),
            code_lens=get_capability(caps, "text_document.code_lens", None) is not None,
            code_lens_refresh=has("workspace.code_lens.refresh_support"),
            inlay_hints=get_capability(caps, "text_document.inlay_hint", None) is not None,
            inlay_hint_refresh=has("workspace.inlay_hint.refresh_support"),
            status_notification=_status_notification(caps.experimental),
            compare_choices=_ours(caps.experimental).get("compareChoices") is True,
        )


def _ours(experimental) -> dict:
    """`experimental.fusionSwitch`, what our VS Code extension announces (else empty)."""
    ours = experimental.get("fusionSwitch") if isinstance(experimental, dict) else None
    return ours if isinstance(ours, dict) else {}


def _status_notification(experimental) -> str | None:
    """The method of our status notification, when the client announced it (our VS Code
    extension sends `experimental.fusionSwitch = {"statusNotification": "fusionSwitch/status"}`)."""
    method = _ours(experimental).get("statusNotification")
    return method if isinstance(method, str) and method else None


def server_capabilities(
    client: ClientFeatures, position_encoding: str, commands: list[str]
) -> types.ServerCapabilities:
    return types.ServerCapabilities(
        position_encoding=position_encoding,
        text_document_sync=types.TextDocumentSyncOptions(
            open_close=True,
            change=types.TextDocumentSyncKind.Incremental,
            save=False,
        ),
        completion_provider=types.CompletionOptions(
            trigger_characters=COMPLETION_TRIGGERS, resolve_provider=False
        ),
        hover_provider=True,
        code_action_provider=(
            types.CodeActionOptions(code_action_kinds=CODE_ACTION_KINDS)
            if client.code_action_literals
            else True
        ),
        document_formatting_provider=True,
        document_symbol_provider=types.DocumentSymbolOptions(label="fusion switch"),
        folding_range_provider=True,
        diagnostic_provider=(
            types.DiagnosticOptions(
                identifier="fusion-switch",
                inter_file_dependencies=False,
                workspace_diagnostics=False,
            )
            if client.pull_diagnostics
            else None
        ),
        execute_command_provider=types.ExecuteCommandOptions(commands=commands),
        code_lens_provider=types.CodeLensOptions(resolve_provider=False)
        if client.code_lens
        else None,
        inlay_hint_provider=(
            types.InlayHintOptions(resolve_provider=False) if client.inlay_hints else None
        ),
    )
