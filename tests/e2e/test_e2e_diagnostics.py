"""Diagnostics over stdio for each emulated client: codes, ranges, source, data, versions."""

from __future__ import annotations

import pytest
from e2e_support import Session
from lsprotocol import types
from lsprotocol.types import Position, Range

pytestmark = pytest.mark.asyncio(loop_scope="module")

TYPO = """{
  "Switch": {
    "GraphFusion": {
      "ConvBatchnormFusionPas": "on"
    }
  }
}
"""


def units(text: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-32":
        return len(text)
    return len(text.encode("utf-16-le")) // 2


async def test_unknown_rule_has_code_range_source_and_data(session: Session) -> None:
    uri = session.open("diag_typo/fusion_switch.cfg", TYPO)
    [diag] = await session.diagnostics(uri)
    assert diag.code == "unknown-rule"
    assert diag.source == "fusion-switch"
    assert diag.severity == types.DiagnosticSeverity.Warning
    assert diag.range == Range(Position(3, 6), Position(3, 6 + len('"ConvBatchnormFusionPas"')))
    assert "ConvBatchnormFusionPass" in diag.message
    assert diag.data["suggestions"][0] == "ConvBatchnormFusionPass"


@pytest.mark.parametrize(
    ("prefix", "name"),
    [("注释", "Pass"), ("😀", "FusionPass"), ("ä", "中文😀Pass")],
)
async def test_ranges_in_the_negotiated_encoding(session: Session, prefix: str, name: str) -> None:
    key = f'"{prefix}{name}"'
    text = '{"Switch": {"GraphFusion": {"a": "on", ' + key + ': "on"}}}'
    uri = session.open(f"diag_enc/{abs(hash(key))}/fusion_switch.cfg", text)
    found = [d for d in await session.diagnostics(uri) if d.code == "unknown-rule"]
    target = next(d for d in found if prefix in d.message)
    encoding = session.result.capabilities.position_encoding
    before = text[: text.index(key)]
    assert target.range.start == Position(0, units(before, encoding))
    assert target.range.end == Position(0, units(before + key, encoding))


@pytest.mark.parametrize(
    ("text", "code", "severity"),
    [
        ('{"Switch": {"GraphFusion": {"ALL": "off",}}}', "trailing-comma", 1),
        ('{"Switch": {"GraphFusion": {"ALL": "OFF"}}}', "invalid-switch-value", 1),
        ("", "empty-file", 1),
        ('{"Switch": {"GraphFusion": {"ALL": "off", "ALL": "on"}}}', "duplicate-key", 2),
        ('{"Switch": {"Graph": {}}}', "unknown-section", 1),
        ("ConvBatchnormFusionPass:off\n", "legacy-line-format", 3),
    ],
)
async def test_codes_and_severities(session: Session, text: str, code: str, severity) -> None:
    uri = session.open(f"diag_codes/{code}/fusion_switch.cfg", text)
    diagnostics = await session.diagnostics(uri)
    assert code in {d.code for d in diagnostics}
    assert next(d for d in diagnostics if d.code == code).severity == severity


async def test_incremental_change_updates_diagnostics_with_version(session: Session) -> None:
    uri = session.open("diag_change/fusion_switch.cfg", TYPO)
    assert [d.code for d in await session.diagnostics(uri)] == ["unknown-rule"]
    col = 6 + len('"ConvBatchnormFusionPas')
    insert = types.TextDocumentContentChangePartial(
        range=Range(Position(3, col), Position(3, col)), text="s"
    )
    version = session.change(uri, [insert], TYPO.replace('Pas"', 'Pass"'))
    assert await session.diagnostics(uri) == []
    if not session.pull:
        published = await session.published.wait(uri, version)
        assert published.version == version
    # several changes in one notification apply in order
    undo = types.TextDocumentContentChangePartial(
        range=Range(Position(3, col), Position(3, col + 1)), text=""
    )
    value = TYPO.splitlines()[3].index('"on"')
    wrong = types.TextDocumentContentChangePartial(
        range=Range(Position(3, value), Position(3, value + 4)), text='"On"'
    )
    session.change(uri, [undo, wrong], "")
    codes = sorted(d.code for d in await session.diagnostics(uri))
    assert codes == ["invalid-switch-value", "unknown-rule"]


async def test_other_documents_are_ignored_and_closing_clears(session: Session) -> None:
    other = session.open("diag_other/package.json", '{"name": "x",}')
    uri = session.open("diag_other/fusion_switch.cfg", TYPO)
    await session.diagnostics(uri)
    assert session.published.count(other) == 0
    hover = await session.client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(other), Position(0, 2))
    )
    assert hover is None
    before = session.published.count(uri)
    session.close(uri)
    cleared = await session.published.wait(uri, after=before)
    assert list(cleared.diagnostics) == []
