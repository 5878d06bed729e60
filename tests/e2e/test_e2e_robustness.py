"""The server answers whatever it is given: binary garbage, lone surrogates, deep nesting.
After each, requests on it and on a normal document still get answers."""

from __future__ import annotations

import pytest
from e2e_support import Session, every_request, session_fixtures
from lsprotocol import types
from lsprotocol.types import Position, Range

pytestmark = pytest.mark.asyncio(loop_scope="module")


NASTY = {
    "binary": bytes(range(256)).decode("latin-1") * 50,
    "nul-and-separators": '{"Switch":\x00{"GraphFusion":\x0c{"A\u2028B": "on"}}}\x1c\x85',
    "lone-surrogate": '{"Switch": {"GraphFusion": {"\ud800Pass": "on", "x\udfff": "o\ud83d"}}}',
    "replacement-chars": '{"Switch": {"GraphFusion": {"\ufffd\ufffdPass": "on"}}}',
    "deep-nesting": "[" * 50_000 + "]" * 10,
    "deep-objects": '{"a":' * 20_000,
    "unterminated": '{"Switch": {"GraphFusion": {"ConvBatchnormFusionPass": "o',
}


lsp, session = session_fixtures(["visual-studio-code", "neovim@v0.11.0"])


@pytest.mark.parametrize("name", list(NASTY))
async def test_nasty_document_gets_answers(session: Session, name: str) -> None:
    text = NASTY[name]
    uri = session.open(f"nasty/{name}/fusion_switch.cfg", text)
    diagnostics = await session.diagnostics(uri)
    assert len(diagnostics) <= 2000
    for d in diagnostics:
        assert d.source == "fusion-switch"
        assert d.range.start.line <= d.range.end.line
    await every_request(session, uri, Position(0, 3))
    await every_request(session, uri, Position(3, 10**6))  # past the end of a line
    await every_request(session, uri, Position(10**6, 0))  # past the end of the file

    # an edit on the same document still round-trips
    edit = types.TextDocumentContentChangePartial(
        range=Range(Position(0, 0), Position(0, 0)), text=" "
    )
    session.change(uri, [edit], " " + text)
    await session.diagnostics(uri)
    session.close(uri)

    normal = session.open(f"nasty/{name}/after/fusion_switch.cfg", '{"Switch": {"Bad": {}}}')
    assert [d.code for d in await session.diagnostics(normal)] == ["unknown-section"]
