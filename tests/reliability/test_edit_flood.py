"""A flood of edits is debounced, never queued (issue 12, latency), over stdio.

Timing is the benchmark's job (`tests/benchmarks/bench_latency.py`); here the behaviour that
makes it fast: edits sent back to back produce far fewer diagnostics notifications than
versions, the last version's diagnostics always arrive and describe its text, and requests
sent in the middle of the flood are answered for the text as it is then.
"""

from __future__ import annotations

import pytest
import pytest_lsp
from e2e_support import SERVER, Session, start
from fusion_switch.cfg.sample import sample_document
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(config=SERVER, scope="module")
async def lsp(lsp_client: LanguageClient):
    lsp_client.session = await start(lsp_client, "neovim@v0.11.0")  # push diagnostics
    yield
    await lsp_client.shutdown_session()


@pytest.fixture(scope="module")
def session(lsp) -> Session:
    assert not lsp.session.pull
    return lsp.session


def edit(text: str, offset: int, old: str, new: str) -> tuple[types.Range, str]:
    line = text.count("\n", 0, offset)
    column = offset - (text.rfind("\n", 0, offset) + 1)
    return (
        types.Range(types.Position(line, column), types.Position(line, column + len(old))),
        text[:offset] + new + text[offset + len(old) :],
    )


async def test_flood_of_edits_is_debounced_and_ends_on_the_last_version(session):
    text = sample_document(1000)
    uri = session.open("flood.cfg", text)
    await session.diagnostics(uri)
    mark = session.mark(uri)
    key = text.index('"', text.index('"GraphFusion"') + len('"GraphFusion"') + 1)
    # 60 edits back to back: type a bad name, letter by letter, into the first rule key
    typed = "Zz" * 30
    for count in range(len(typed)):
        rng, text = edit(text, key + 1 + count, "", typed[count])
        session.change(
            uri, [types.TextDocumentContentChangePartial(range=rng, text=typed[count])], text
        )
    final = session.versions[uri]
    diagnostics = await session.diagnostics(uri)  # the final version's, or it times out
    published = session.published.by_uri[uri][mark:]
    assert len(published) < 10, [p.version for p in published]  # not one per version
    assert published[-1].version == final
    versions = [p.version for p in published]
    assert versions == sorted(versions)  # never an older version after a newer one
    name = text[key + 1 : text.index('"', key + 1)]
    assert name.startswith(typed)
    assert any(d.code == "unknown-rule" and name in d.message for d in diagnostics)
    session.close(uri)


async def test_completion_during_a_flood_sees_the_current_text(session):
    text = sample_document(1000)
    uri = session.open("flood-complete.cfg", text)
    await session.diagnostics(uri)
    value = text.index('": "') + 4  # the first value, "on" or "off"
    old = text[value : text.index('"', value)]
    for _ in range(40):
        new = "off" if old == "on" else "on"
        rng, text = edit(text, value, old, new)
        session.change(uri, [types.TextDocumentContentChangePartial(range=rng, text=new)], text)
        old = new
    rng, text = edit(text, value, old, "")  # an empty value: completion offers on/off
    session.change(uri, [types.TextDocumentContentChangePartial(range=rng, text="")], text)
    result = await session.client.text_document_completion_async(
        types.CompletionParams(types.TextDocumentIdentifier(uri), rng.start)
    )
    labels = {item.label.strip('"') for item in result.items}
    assert {"on", "off"} <= labels, labels
    await session.diagnostics(uri)
    session.close(uri)
