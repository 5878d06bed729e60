"""Big documents: 10 MB (a huge value), and 2.3 MB with 50,000 entries (49,443 findings,
published capped). Every request is answered and edits round-trip. One client: the work is
the same whatever the client is."""

from __future__ import annotations

import asyncio

import pytest
from e2e_support import Session, every_request, session_fixtures
from fusion_switch.cfg import sample_document
from lsprotocol import types
from lsprotocol.types import Position, Range

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def full_diagnostics(
    session: Session, uri: str, allow_empty: bool = False
) -> list[types.Diagnostic]:
    """On a slow machine the server first publishes syntax problems only (after PATIENCE
    seconds) and the full list when the analysis finishes: wait for a non-empty one."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 120
    while loop.time() < deadline:
        for params in session.published.by_uri[uri]:
            if params.version == session.versions[uri] and (params.diagnostics or allow_empty):
                return list(params.diagnostics)
        await asyncio.sleep(0.05)
    raise AssertionError("no full diagnostics within 120 s")


BIG = '{"Switch": {"GraphFusion": {"ALL": "' + "of" * 5_000_000 + '"}}}'
MANY = sample_document(50_000)  # mostly names unknown to the catalogue


lsp, session = session_fixtures(["visual-studio-code"])


async def test_ten_megabyte_document(session: Session) -> None:
    assert len(BIG) > 10_000_000
    uri = session.open("big/ten/fusion_switch.cfg", BIG)
    [diagnostic] = await full_diagnostics(session, uri)
    assert diagnostic.code == "invalid-switch-value"
    assert diagnostic.range.end == Position(0, len(BIG) - 3)
    symbols = await every_request(session, uri, Position(0, 40))
    assert [s.name for s in symbols] == ["Switch"]
    start = BIG.index('"of')
    end = start + 2 + 10_000_000
    edit = types.TextDocumentContentChangePartial(
        range=Range(Position(0, start), Position(0, end)), text='"off"'
    )
    session.change(uri, [edit], "")
    assert [d.code for d in await full_diagnostics(session, uri, allow_empty=True)] == [
        "all-overridden"
    ]
    session.close(uri)


async def test_many_findings_are_capped(session: Session) -> None:
    uri = session.open("big/many/fusion_switch.cfg", MANY)
    diagnostics = await full_diagnostics(session, uri)
    assert len(diagnostics) == 2000  # capped; the rest is summarised in the log
    assert {d.code for d in diagnostics} == {"unknown-rule"}
    symbols = await every_request(session, uri, Position(5, 10))
    assert 0 < sum(1 + len(s.children) for s in symbols) <= 5000 + 2  # bounded outline
    session.close(uri)


GARBAGE = (bytes(range(256)).decode("latin-1") * 40_000)[:10_000_000]
ENTRY = '      "ConvBatchnormFusionPass": "on",\n'
DUPLICATES = (
    '{"Switch": {"GraphFusion": {\n' + ENTRY * (10_000_000 // len(ENTRY)) + '"ALL": "on"}}}'
)


@pytest.mark.parametrize(
    ("name", "text", "code"),
    [("garbage", GARBAGE, "line-syntax"), ("duplicates", DUPLICATES, "duplicate-key")],
    ids=["garbage", "duplicates"],
)
async def test_ten_megabytes_of_garbage_or_duplicates(
    session: Session, name: str, text: str, code: str
) -> None:
    uri = session.open(f"big/{name}/fusion_switch.cfg", text)
    diagnostics = await full_diagnostics(session, uri)
    assert 0 < len(diagnostics) <= 2000
    assert code in {d.code for d in diagnostics}
    await every_request(session, uri, Position(1, 3))
    session.close(uri)
