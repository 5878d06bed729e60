"""Pure-layer values ↔ protocol types (what each client gets), and the shared helpers."""

from __future__ import annotations

import asyncio

import pytest
from fusion_switch.cfg.model import Edit, Finding, Related, Span, Symbol
from fusion_switch.lsp import state as state_module
from fusion_switch.lsp.capabilities import ClientFeatures
from fusion_switch.lsp.convert import Converter
from fusion_switch.lsp.documents import OpenDocument
from fusion_switch.lsp.features.formatting import minimal_edit
from fusion_switch.lsp.features.symbols import limit
from fusion_switch.lsp.state import ServerState
from fusion_switch.lsp.text import LineIndex
from lsprotocol import types
from lsprotocol.types import Position, Range

TEXT = '{"注😀": "on",\n "B": "Off"}'


def conv(**flags) -> Converter:
    return Converter(LineIndex(TEXT), "utf-16", ClientFeatures(**flags))


def test_finding_round_trips_through_a_diagnostic() -> None:
    finding = Finding(
        "duplicate-key",
        "warning",
        Span(1, 5),
        "dup",
        {"key": "注😀"},
        [Related(Span(14, 17), "the one CANN uses")],
    )
    diagnostic = conv(related_information=True).diagnostic(finding, "file:///f.cfg")
    assert diagnostic.range == Range(Position(0, 1), Position(0, 6))  # 😀 = 2 UTF-16 units
    assert diagnostic.source == "fusion-switch" and diagnostic.code == "duplicate-key"
    assert diagnostic.related_information[0].location.range.start == Position(1, 1)
    assert conv(related_information=True).finding(diagnostic, "file:///f.cfg") == finding
    assert conv().diagnostic(finding, "file:///f.cfg").related_information is None


@pytest.mark.parametrize(
    ("document_changes", "shape"), [(True, "document_changes"), (False, "changes")]
)
def test_workspace_edit_shape(document_changes: bool, shape: str) -> None:
    edit = conv(document_changes=document_changes).workspace_edit(
        [Edit(Span(19, 24), '"off"')], "file:///f.cfg", 7
    )
    assert getattr(edit, shape)
    if document_changes:
        assert edit.document_changes[0].text_document.version == 7


def test_flat_symbols_for_clients_without_hierarchy() -> None:
    rule = Symbol("B", "rule", Span(16, 26), Span(16, 19), "Off")
    section = Symbol("GraphFusion", "group", Span(0, 27), Span(1, 6), children=[rule])
    flat = conv().symbol_information([section], "file:///f.cfg")
    assert [(s.name, s.container_name) for s in flat] == [
        ("GraphFusion", None),
        ("B", "GraphFusion"),
    ]


def test_symbol_limit_keeps_document_order_and_parents() -> None:
    rules = [Symbol(f"R{i}", "rule", Span(i, i + 1), Span(i, i + 1)) for i in range(10)]
    tree = [
        Symbol(
            "Switch",
            "section",
            Span(0, 20),
            Span(0, 1),
            children=[Symbol("GraphFusion", "group", Span(0, 20), Span(0, 1), children=rules)],
        )
    ]
    [switch] = limit(tree, 5)
    assert [c.name for c in switch.children[0].children] == ["R0", "R1", "R2"]
    assert limit(tree, 100) == tree


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("abc", "abc", None),
        ("abXc", "abc", (2, 3, "")),
        ("", "x", (0, 0, "x")),
        ("aaa", "aaaa", (3, 3, "a")),
    ],
)
def test_minimal_edit(old: str, new: str, expected) -> None:
    edit = minimal_edit(old, new)
    if expected is None:
        assert edit is None
    else:
        assert (edit.span.start, edit.span.end, edit.new_text) == expected
        assert old[: edit.span.start] + edit.new_text + old[edit.span.end :] == new


def test_slow_analysis_falls_back_to_the_syntax_tree(monkeypatch) -> None:
    """A pathological file must not make requests wait: after PATIENCE the answer comes from
    the parser alone, and the full analysis is still delivered later."""
    import time

    from fusion_switch import cfg

    real = cfg.analyse

    def slow(text, ctx):
        time.sleep(0.5)
        return real(text, ctx)

    monkeypatch.setattr(cfg, "analyse", slow)
    monkeypatch.setattr(state_module, "LARGE_DOCUMENT", 0)
    monkeypatch.setattr(state_module, "PATIENCE", 0.05)
    text = '{"Switch": {"GraphFusion": {"ALL": "off",}}}'

    async def run():
        state = ServerState()
        state.documents.open("file:///w/fusion_switch.cfg", "json", 1, text)
        doc = state.documents.get("file:///w/fusion_switch.cfg")
        quick, complete = await state.analysis_or_syntax(doc)
        full = await state.full_analysis(doc)
        again, cached = await state.analysis_or_syntax(doc)
        return quick, complete, full, again, cached

    quick, complete, full, again, cached = asyncio.run(run())
    monkeypatch.setattr(cfg, "analyse", real)
    assert complete is False and [f.code for f in quick.findings] == ["trailing-comma"]
    expected = real(text, cfg.Context()).findings
    assert [f.code for f in full.findings] == [f.code for f in expected]
    assert cached is True and again is full


def test_documents_apply_incremental_changes_in_order() -> None:
    doc = OpenDocument("file:///f.cfg", "json", 1, "abc\ndef")
    doc.apply_changes(
        [
            types.TextDocumentContentChangePartial(
                range=Range(Position(1, 0), Position(1, 1)), text="X"
            ),
            types.TextDocumentContentChangePartial(
                range=Range(Position(0, 3), Position(1, 0)), text=""
            ),
        ],
        2,
        "utf-16",
    )
    assert (doc.text, doc.version) == ("abcXef", 2)


def _findings_of_every_kind() -> list[tuple[str, Finding]]:
    """Real findings of a document with every kind of problem, and their text."""
    from fusion_switch.catalogue import resolve_target
    from fusion_switch.cfg import Context, analyse

    texts = [
        '{"Switch": {"GraphFusion": {"ALL": "off", "ConvBatchnormFusionPas": "On",\r\n'
        '"AABiasaddConvFusion": "off", "X": 1, "X": "on", "TbeEltwiseFusionPass": "on"},\n'
        '"UBFusion": {"注😀": " off ", "ConvBatchnormFusionPass": "on"}}, "Bad": [], }',
        "ConvBatchnormFusionPass:off\nALL:on\nBogus:OFF\n",
        '{"Switch": {"GraphFusion": {"A" "on"',
        "",
        '{"Priority": {"GraphFusion": {"Top": {"A": "1000"}, "Late": {}}}} // c',
    ]
    ctx = Context(target=resolve_target("Atlas 350"))
    return [(text, f) for text in texts for f in analyse(text, ctx).findings]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8", "utf-32"])
@pytest.mark.parametrize("related", [True, False])
def test_diagnostics_text_is_what_lsprotocol_sends(encoding: str, related: bool) -> None:
    """The publish path writes the diagnostics' JSON text directly; read back, it must equal
    lsprotocol's serialisation, the order of keys included (only the spaces differ)."""
    import json

    from pygls.protocol import default_converter

    serialiser = default_converter()
    pairs = _findings_of_every_kind()
    assert {f.code for _, f in pairs} >= {"unknown-rule", "duplicate-key", "json-syntax"}
    assert any(f.related for _, f in pairs) and any(not f.data for _, f in pairs)
    assert any(not f.message.isascii() for _, f in pairs)  # escaped as json.dumps does
    for text in dict.fromkeys(t for t, _ in pairs):
        findings = [f for t, f in pairs if t == text]
        c = Converter(LineIndex(text), encoding, ClientFeatures(related_information=related))
        expected = serialiser.unstructure([c.diagnostic(f, "file:///f.cfg") for f in findings])
        fast = c.diagnostics_text(findings, "file:///f.cfg")
        assert fast.isascii()
        assert json.dumps(json.loads(fast)) == json.dumps(expected)
    assert Converter(LineIndex(""), encoding, ClientFeatures()).diagnostics_text([], "u") == "[]"


def test_diagnostics_text_escapes_whatever_a_message_holds() -> None:
    """Messages quote names from the file: quotes, backslashes, control characters, lone
    surrogates and astral characters must come out as valid JSON of the same string."""
    import json

    from fusion_switch.cfg.model import Finding, Span

    odd = 'a"b\\c\n\td\x00e\u2028f\ud800g😀h'
    finding = Finding("unknown-rule", "warning", Span(0, 1), odd, {"name": odd, "n": [1, None]})
    text = Converter(LineIndex("x"), "utf-16", ClientFeatures()).diagnostics_text([finding], "u")
    (back,) = json.loads(text)
    assert back["message"] == odd and back["data"] == {"name": odd, "n": [1, None]}
