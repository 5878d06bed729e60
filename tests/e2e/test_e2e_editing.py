"""Completion, hover, code actions, formatting, symbols and folding over stdio, per client."""

from __future__ import annotations

import json

import pytest
from e2e_support import Session, apply_text_edits, edits_of
from lsprotocol import types
from lsprotocol.types import Position, Range, TextDocumentIdentifier

pytestmark = pytest.mark.asyncio(loop_scope="module")

SNIPPET_CLIENTS = {"visual-studio-code", "neovim@v0.11.0"}


def at(text: str, marker: str = "|") -> tuple[str, Position]:
    """Remove the cursor marker; its position (single-line ASCII fixtures)."""
    offset = text.index(marker)
    return text.replace(marker, "", 1), Position(0, offset)


async def complete(session: Session, name: str, text_with_cursor: str):
    text, position = at(text_with_cursor)
    uri = session.open(f"complete/{name}/fusion_switch.cfg", text)
    result = await session.client.text_document_completion_async(
        types.CompletionParams(TextDocumentIdentifier(uri), position)
    )
    return text, {item.label: item for item in result.items}


async def test_completion_inside_quotes_replaces_the_whole_key(session: Session) -> None:
    text, items = await complete(
        session, "quotes", '{"Switch": {"GraphFusion": {"ALL": "on", "Conv|"}}}'
    )
    item = items["ConvBatchnormFusionPass"]
    start = text.index('"Conv"')
    assert item.text_edit.range == Range(Position(0, start), Position(0, start + len('"Conv"')))
    assert item.text_edit.new_text.startswith('"ConvBatchnormFusionPass"')
    assert item.filter_text == '"ConvBatchnormFusionPass"'
    assert "ALL" not in items  # already in the section
    assert "TbeConvDequantSigmoidMulAddFusionPass" not in items  # a UBFusion rule
    assert item.kind == types.CompletionItemKind.Property


async def test_completion_after_colon_offers_values(session: Session) -> None:
    text, items = await complete(
        session, "colon", '{"Switch": {"GraphFusion": {"ConvBatchnormFusionPass": |}}}'
    )
    assert set(items) == {"on", "off"}
    cursor = Position(0, text.index("}"))
    assert items["off"].text_edit == types.TextEdit(Range(cursor, cursor), '"off"')


async def test_completion_in_empty_object_and_snippet_gating(session: Session) -> None:
    text, items = await complete(session, "empty", '{"Switch": {"GraphFusion": {|}}}')
    cursor = Position(0, text.index("}"))
    item = items["ConvBatchnormFusionPass"]
    assert item.text_edit.range == Range(cursor, cursor)
    snippets = [i for i in items.values() if i.insert_text_format == types.InsertTextFormat.Snippet]
    if session.name in SNIPPET_CLIENTS:
        assert item in snippets and item.text_edit.new_text.endswith('"${1|on,off|}"')
    else:
        assert snippets == []
        assert not any("${" in i.text_edit.new_text for i in items.values())


async def test_completion_documentation_format(session: Session) -> None:
    _, items = await complete(session, "docs", '{"Switch": {"GraphFusion": {"Conv|"}}}')
    doc = items["ConvBatchnormFusionPass"].documentation
    if session.name == "emacs":  # declares no documentationFormat: a plain string
        assert isinstance(doc, str) and "ConvBatchnormFusionPass" in doc
    else:
        assert doc.kind == "markdown" and "**ConvBatchnormFusionPass**" in doc.value


async def test_completion_of_sections_and_line_format(session: Session) -> None:
    _, items = await complete(session, "sections", '{"Switch": {|}}')
    assert {"GraphFusion", "UBFusion"} <= set(items)
    _, items = await complete(session, "lines", "ConvBatchnormFusionPass:|")
    assert set(items) == {"on", "off"}


async def test_hover_on_rule_and_all(session: Session) -> None:
    text = '{"Switch": {"GraphFusion": {"ConvBatchnormFusionPass": "off", "ALL": "on"}}}'
    uri = session.open("hover/fusion_switch.cfg", text)
    start = text.index('"ConvBatchnormFusionPass"')
    hover = await session.client.text_document_hover_async(
        types.HoverParams(TextDocumentIdentifier(uri), Position(0, start + 5))
    )
    assert "**ConvBatchnormFusionPass**" in hover.contents.value
    assert "GraphFusion" in hover.contents.value
    assert hover.range == Range(Position(0, start), Position(0, start + 25))
    on_all = await session.client.text_document_hover_async(
        types.HoverParams(TextDocumentIdentifier(uri), Position(0, text.index("ALL")))
    )
    assert "ALL" in on_all.contents.value
    nothing = await session.client.text_document_hover_async(
        types.HoverParams(TextDocumentIdentifier(uri), Position(0, 0))
    )
    assert nothing is None or nothing.contents.value


FIXES = [
    (
        "trailing-comma",
        '{\n  "Switch": {\n    "GraphFusion": {\n      "ALL": "off",\n    }\n  }\n}\n',
        '{\n  "Switch": {\n    "GraphFusion": {\n      "ALL": "off"\n    }\n  }\n}\n',
    ),
    (
        "invalid-switch-value",
        '{"Switch": {"GraphFusion": {"ALL": "Off"}}}',
        '{"Switch": {"GraphFusion": {"ALL": "off"}}}',
    ),
    (
        "unknown-rule",
        '{"Switch": {"GraphFusion": {"注释😀": "on", "ConvBatchnormFusionPas": "on"}}}',
        '{"Switch": {"GraphFusion": {"注释😀": "on", "ConvBatchnormFusionPass": "on"}}}',
    ),
]


async def code_actions(
    session: Session, uri: str, rng: Range, diagnostics=(), only: list[str] | None = None
) -> list[types.CodeAction]:
    """textDocument/codeAction at ``rng`` with the client's ``diagnostics`` (none: [])."""
    actions = await session.client.text_document_code_action_async(
        types.CodeActionParams(
            TextDocumentIdentifier(uri),
            rng,
            types.CodeActionContext(diagnostics=list(diagnostics), only=only),
        )
    )
    return list(actions or [])


ORIGIN = Range(Position(0, 0), Position(0, 0))


@pytest.mark.parametrize(("code", "before", "after"), FIXES, ids=[f[0] for f in FIXES])
async def test_quick_fix_applied_gives_expected_file(
    session: Session, code: str, before: str, after: str
) -> None:
    uri = session.open(f"fix/{code}/fusion_switch.cfg", before)
    diagnostics = [d for d in await session.diagnostics(uri) if d.code == code]
    assert diagnostics, f"no {code} diagnostic"
    target = diagnostics[-1]
    actions = await code_actions(session, uri, target.range, [target])
    fixes = [a for a in actions if a.kind == types.CodeActionKind.QuickFix]
    assert fixes, f"no quick fix for {code}"
    fix = next((a for a in fixes if a.is_preferred), fixes[0])
    assert [d.code for d in fix.diagnostics] == [code]
    fixed = apply_text_edits(before, edits_of(fix.edit, uri), session.encoding)
    assert fixed == after


async def test_source_action_converts_line_format_to_json(session: Session) -> None:
    before = "ConvBatchnormFusionPass:off\nTbeConvDequantSigmoidMulAddFusionPass:on\n"
    uri = session.open("fix/lines/fusion_switch.cfg", before)
    await session.diagnostics(uri)
    actions = await code_actions(session, uri, ORIGIN, only=[types.CodeActionKind.Source])
    [action] = actions
    assert action.kind == "source.convertToJson" and action.title == "Convert to JSON"
    data = json.loads(apply_text_edits(before, edits_of(action.edit, uri), session.encoding))
    assert data["Switch"]["GraphFusion"]["ConvBatchnormFusionPass"] == "off"
    assert data["Switch"]["UBFusion"]["TbeConvDequantSigmoidMulAddFusionPass"] == "on"
    quick_only = await code_actions(session, uri, ORIGIN, only=[types.CodeActionKind.QuickFix])
    assert list(quick_only) == []


async def test_formatting_gives_the_cann_layout(session: Session) -> None:
    before = '{"Switch":{"GraphFusion":{"ALL":"off","ConvBatchnormFusionPass":"on"}}}'
    expected = (
        '{\n  "Switch": {\n    "GraphFusion": {\n      "ALL": "off",\n'
        '      "ConvBatchnormFusionPass": "on"\n    }\n  }\n}\n'
    )
    uri = session.open("format/fusion_switch.cfg", before)
    options = types.FormattingOptions(tab_size=2, insert_spaces=True)
    edits = await session.client.text_document_formatting_async(
        types.DocumentFormattingParams(TextDocumentIdentifier(uri), options)
    )
    assert apply_text_edits(before, edits, session.encoding) == expected
    same = session.open("format/done/fusion_switch.cfg", expected)
    again = await session.client.text_document_formatting_async(
        types.DocumentFormattingParams(TextDocumentIdentifier(same), options)
    )
    assert list(again) == []


async def test_document_symbols_and_folding(session: Session) -> None:
    text = (
        '{\n  "Switch": {\n    "GraphFusion": {\n      "ALL": "off",\n'
        '      "ConvBatchnormFusionPass": "on"\n    }\n  }\n}\n'
    )
    uri = session.open("outline/fusion_switch.cfg", text)
    [switch] = await session.client.text_document_document_symbol_async(
        types.DocumentSymbolParams(TextDocumentIdentifier(uri))
    )
    assert switch.name == "Switch"
    [graph] = switch.children
    assert graph.name == "GraphFusion"
    assert [c.name for c in graph.children] == ["ALL", "ConvBatchnormFusionPass"]
    rule = graph.children[1]
    assert rule.selection_range == Range(Position(4, 6), Position(4, 31))
    assert rule.kind == types.SymbolKind.Property
    folds = await session.client.text_document_folding_range_async(
        types.FoldingRangeParams(TextDocumentIdentifier(uri))
    )
    assert sorted((f.start_line, f.end_line) for f in folds) == [(0, 7), (1, 6), (2, 5)]


async def test_a_stale_diagnostic_gets_no_fix_that_would_destroy_the_text(
    session: Session,
) -> None:
    """A review: an `empty-file` diagnostic sent back after the user typed content got
    "Insert a skeleton", replacing the whole new text; a stale `trailing-comma` deleted the
    `}` now at its place. The edits carried the current version, so clients applied them."""
    uri = session.open("stale/fusion_switch.cfg", "")
    [empty] = [d for d in await session.diagnostics(uri) if d.code == "empty-file"]
    typed = '{"Switch": {"GraphFusion": {"ALL": "off"}}}'
    session.change(uri, [types.TextDocumentContentChangeWholeDocument(typed)], typed)
    assert not [d for d in await session.diagnostics(uri) if d.code == "empty-file"]
    actions = await code_actions(session, uri, empty.range, [empty])
    assert actions == []
    with_comma = '{"Switch": {"GraphFusion": {"ALL": "off",}}}'
    session.change(uri, [types.TextDocumentContentChangeWholeDocument(with_comma)], with_comma)
    [comma] = [d for d in await session.diagnostics(uri) if d.code == "trailing-comma"]
    session.change(uri, [types.TextDocumentContentChangeWholeDocument(typed)], typed)
    await session.diagnostics(uri)
    actions = await code_actions(session, uri, comma.range, [comma])
    assert actions == []


async def test_convert_to_json_is_not_offered_while_lines_would_be_dropped(
    session: Session,
) -> None:
    """A review: lines with no colon (a typo, a comment) vanished from the converted file."""
    before = "ConvBatchnormFusionPass:off\nTbeConvRequantFusionPass off\n# note\n"
    uri = session.open("fix/lines-bad/fusion_switch.cfg", before)
    await session.diagnostics(uri)
    actions = await code_actions(session, uri, ORIGIN, only=[types.CodeActionKind.Source])
    assert [a.title for a in actions] == []
    [legacy] = [d for d in await session.diagnostics(uri) if d.code == "legacy-line-format"]
    quick = await code_actions(session, uri, legacy.range, [legacy])
    assert [a.title for a in quick if "JSON" in a.title] == []  # nor as a quick fix


async def test_a_crlf_file_keeps_the_fixes_of_its_current_diagnostics(session: Session) -> None:
    """A review of this round's diff: a finding whose span ends on a CRLF's CR comes back from
    the client one character shorter (an LSP range has no room for the CR), so the staleness
    check took current diagnostics for stale and dropped their fixes."""
    before = "ConvBatchnormFusionPass:off\r\nTbeConvDequantSigmoidMulAddFusionPass:on\r\n"
    uri = session.open("fix/lines-crlf/fusion_switch.cfg", before)
    [legacy] = [d for d in await session.diagnostics(uri) if d.code == "legacy-line-format"]
    actions = await code_actions(session, uri, legacy.range, [legacy])
    fixes = [a for a in actions if a.kind == types.CodeActionKind.QuickFix]
    assert fixes, "the current diagnostic's fix was dropped"
