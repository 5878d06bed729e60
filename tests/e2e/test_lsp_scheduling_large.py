"""Large documents: one analysis at a time per document, the newest text next; requests never
start analyses of their own, and a cancelled request's work is never started.

A review typed into an 8 MB configuration (one didChange per 100 ms for 5 s) and got its
final diagnostics 92 s after typing stopped, probe hovers after up to 24 s and 1.9 GB of
memory held: every version, and every request on a large document, started an analysis on a
thread of its own, dozens at once competing for the GIL with the event loop. What keeps the
server fast is the behaviour checked here (the figures are the benchmark's, in the report):

- while an analysis runs, edits start nothing; when it ends, only the text current then is
  analysed (the versions in between are skipped), and never two analyses of one document at
  once;
- requests made meanwhile are answered for their own text without an analysis of it;
- a request cancelled before its work started leaves that work unstarted;
- the last diagnostics published describe the final text.

The server runs over stdio as editors start it, with `cfg.analyse` and `cfg.parse` wrapped (in
the `-c` script below) to record each call on a large text, and to hold it until the test opens
a gate: the test decides what is running while it sends its messages, so nothing here depends
on timing.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import zlib
from pathlib import Path

import pytest
from e2e_support import TIMEOUT, Session, session_fixtures
from fusion_switch.cfg.sample import sample_document
from fusion_switch.lsp.state import LARGE_DOCUMENT
from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled
from pytest_lsp import ClientServerConfig

pytestmark = pytest.mark.asyncio(loop_scope="module")

# made by `_work_folder` while this module runs; without it the wrapper only calls through
WORK = Path(tempfile.gettempdir()) / f"fusion-switch-scheduling-{os.getpid()}"
ANALYSES_OPEN = WORK / "analyses-open"  # while absent, analyses of large texts wait
PARSES_OPEN = WORK / "parses-open"  # and parses of large texts
CALLS = WORK / "calls"  # one line per call on a large text: "<what> <crc32> <running>"

# `fusion-switch serve` with the pure layer's entry points wrapped (what the server calls
# through the `cfg` package; `analyse` parses with the parser module directly, not counted).
WRAPPED_SERVER = f"""
import os, sys, threading, time, zlib
from fusion_switch import cfg

lock = threading.Lock()
running = {{"analyse": 0, "parse": 0}}


def wrapped(what, real, gate):
    def call(text, *args, **kwargs):
        if len(text) < {LARGE_DOCUMENT} or not os.path.isdir({str(WORK)!r}):
            return real(text, *args, **kwargs)
        with lock:
            running[what] += 1
            with open({str(CALLS)!r}, "a") as log:
                log.write(f"{{what}} {{zlib.crc32(text.encode())}} {{running[what]}}\\n")
        try:
            while os.path.isdir({str(WORK)!r}) and not os.path.exists(gate):
                time.sleep(0.005)
            return real(text, *args, **kwargs)
        finally:
            with lock:
                running[what] -= 1

    return call


cfg.analyse = wrapped("analyse", cfg.analyse, {str(ANALYSES_OPEN)!r})
cfg.parse = wrapped("parse", cfg.parse, {str(PARSES_OPEN)!r})
from fusion_switch.lsp import state

state.PATIENCE = 3600.0  # a request that waits for an analysis here waits for the gate
from fusion_switch.cli import main

sys.exit(main(["serve"]))
"""

SERVER = ClientServerConfig(
    server_command=[sys.executable, "-c", WRAPPED_SERVER], server_env=dict(os.environ)
)
lsp, session = session_fixtures(["neovim@v0.11.0"], SERVER)  # push diagnostics

TEXT = sample_document(8000)  # catalogue rules first, then unknown names
# just inside the first key of GraphFusion: where the tests type
KEY = TEXT.index('"', TEXT.index('"GraphFusion"') + len('"GraphFusion"') + 1) + 1
assert len(TEXT) > LARGE_DOCUMENT


@pytest.fixture(autouse=True)
def _gates_open_after():
    """A failed test leaves no call held (the next tests would wait behind it)."""
    yield
    gates(analyses=True, parses=True)


@pytest.fixture(scope="module", autouse=True)
def _work_folder():
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir()
    yield
    shutil.rmtree(WORK, ignore_errors=True)  # held calls go on once it is gone


def crc(text: str) -> int:
    return zlib.crc32(text.encode())


def calls(what: str) -> list[tuple[int, int]]:
    """(crc32 of the text, how many such calls were running with it) per call so far."""
    if not CALLS.exists():
        return []
    lines = [line.split() for line in CALLS.read_text().splitlines()]
    return [(int(c), int(n)) for kind, c, n in lines if kind == what]


def gates(analyses: bool, parses: bool) -> None:
    for gate, is_open in ((ANALYSES_OPEN, analyses), (PARSES_OPEN, parses)):
        if is_open:
            gate.touch()
        else:
            gate.unlink(missing_ok=True)


async def until(condition) -> None:
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "the server never got there"
        await asyncio.sleep(0.005)


def typed(text: str, offset: int, char: str) -> tuple[types.TextDocumentContentChangePartial, str]:
    line = text.count("\n", 0, offset)
    column = offset - (text.rfind("\n", 0, offset) + 1)
    at = types.Position(line, column)
    change = types.TextDocumentContentChangePartial(range=types.Range(at, at), text=char)
    return change, text[:offset] + char + text[offset:]


def position(text: str, offset: int) -> types.Position:
    return types.Position(text.count("\n", 0, offset), offset - (text.rfind("\n", 0, offset) + 1))


def request(session: Session, method: str, params, msg_id: str) -> asyncio.Future:
    """Send a request now (pytest-lsp's `*_async` send only once awaited)."""
    return asyncio.wrap_future(session.client.protocol.send_request(method, params, msg_id=msg_id))


def completion(session: Session, uri: str, at: types.Position, msg_id: str) -> asyncio.Future:
    params = types.CompletionParams(types.TextDocumentIdentifier(uri), at)
    return request(session, types.TEXT_DOCUMENT_COMPLETION, params, msg_id)


async def typed_and_asked(
    session: Session, uri: str, letters: str, ids: str, after: int, then
) -> tuple[list[str], list]:
    """``letters`` typed one at a time into ``TEXT`` at ``KEY``, a completion asked after each
    (ids ``ids`` + its number), ``then`` awaited after letter number ``after`` (0: the first):
    (texts, answers)."""
    text, texts, answers = TEXT, [], []
    for count, char in enumerate(letters):
        change, text = typed(text, KEY + count, char)
        session.change(uri, [change], text)
        texts.append(text)
        answers.append(completion(session, uri, position(text, KEY + count + 1), f"{ids}{count}"))
        if count == after:
            await then()
    return texts, answers


async def final_diagnostics(session: Session, uri: str) -> list[types.Diagnostic]:
    """The final version's full diagnostics (a syntax-only publication may come first when
    the check waits longer than the server's patience)."""
    version = session.versions[uri]
    found: list = []

    def published() -> bool:
        found[:] = [
            p
            for p in session.published.by_uri[uri]
            if p.version == version and any(d.code == "unknown-rule" for d in p.diagnostics)
        ]
        return bool(found)

    await until(published)
    return list(found[-1].diagnostics)


async def test_edits_during_an_analysis_start_only_the_newest_text(session: Session) -> None:
    gates(analyses=False, parses=True)
    start = len(calls("analyse"))
    uri = session.open("scheduling/flood/fusion_switch.cfg", TEXT)
    await until(lambda: len(calls("analyse")) > start)  # the first version's, held

    text = TEXT
    later_rule = text.splitlines()[5].split('"')[1]  # a catalogue rule, for hover
    completions, hovers = [], []
    for count, char in enumerate("Zz" * 10):  # type a bad name into the first key
        change, text = typed(text, KEY + count, char)
        session.change(uri, [change], text)
        if count in (4, 9, 14):
            at = position(text, KEY + count + 1)
            completions.append(completion(session, uri, at, f"complete-{count}"))
        if count == 11:
            at = position(text, text.index(later_rule) + 2)
            params = types.HoverParams(types.TextDocumentIdentifier(uri), at)
            hovers.append(request(session, types.TEXT_DOCUMENT_HOVER, params, "hover"))
    await session.barrier()  # every change has been read; the server answers meanwhile
    assert len(calls("analyse")) == start + 1  # nothing started while one runs
    gates(analyses=True, parses=True)

    diagnostics = await final_diagnostics(session, uri)
    assert any("ZzZzZzZzZzZzZzZzZzZz" in d.message for d in diagnostics)
    for answer in [await c for c in completions]:
        assert answer.items, "a completion was answered with nothing"
    [hover] = [await h for h in hovers]
    assert hover is not None and later_rule in hover.contents.value
    # the first text, then the one current when its analysis ended: none in between
    assert [c for c, _ in calls("analyse")[start:]] == [crc(TEXT), crc(text)]
    assert max(n for _, n in calls("analyse")[start:]) == 1
    session.close(uri)


async def test_requests_on_the_syntax_tree_never_wait_for_the_analysis(session: Session) -> None:
    """Completion, hover, outline, folding and formatting read the syntax tree only: while
    the analysis of the very text they ask about is held, they are answered from a parse (they
    waited for the analysis before, up to the server's patience: seconds on a large file)."""
    gates(analyses=False, parses=True)
    analysed = len(calls("analyse"))
    uri = session.open("scheduling/syntax-only/fusion_switch.cfg", TEXT)
    await until(lambda: len(calls("analyse")) > analysed)  # this text's analysis, held
    doc = types.TextDocumentIdentifier(uri)
    rule = TEXT.splitlines()[5].split('"')[1]
    asked = {
        "completion": (
            types.TEXT_DOCUMENT_COMPLETION,
            types.CompletionParams(doc, position(TEXT, KEY)),
        ),
        "hover": (
            types.TEXT_DOCUMENT_HOVER,
            types.HoverParams(doc, position(TEXT, TEXT.index(rule) + 2)),
        ),
        "symbols": (types.TEXT_DOCUMENT_DOCUMENT_SYMBOL, types.DocumentSymbolParams(doc)),
        "folding": (types.TEXT_DOCUMENT_FOLDING_RANGE, types.FoldingRangeParams(doc)),
        "formatting": (
            types.TEXT_DOCUMENT_FORMATTING,
            types.DocumentFormattingParams(doc, types.FormattingOptions(4, True)),
        ),
    }
    pending = {
        name: request(session, method, params, f"syntax-{name}")
        for name, (method, params) in asked.items()
    }
    answers = {name: await asyncio.wait_for(answer, TIMEOUT) for name, answer in pending.items()}
    assert len(calls("analyse")) == analysed + 1  # still the one, still held
    assert answers["completion"].items
    assert rule in answers["hover"].contents.value
    assert answers["symbols"] and answers["folding"]
    assert list(answers["formatting"]) == []  # answered: the sample is laid out as it lays it out
    gates(analyses=True, parses=True)
    await final_diagnostics(session, uri)
    session.close(uri)


async def test_a_cancelled_request_leaves_its_work_unstarted(session: Session) -> None:
    gates(analyses=False, parses=False)
    analysed, parsed = len(calls("analyse")), len(calls("parse"))
    uri = session.open("scheduling/cancelled/fusion_switch.cfg", TEXT)
    await until(lambda: len(calls("analyse")) > analysed)

    async def cancel_it():  # the second request is cancelled by the client (as VS Code does)
        session.client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="c1"))

    texts, answers = await typed_and_asked(session, uri, "Qqq", "c", after=1, then=cancel_it)
    await session.barrier()
    assert len(calls("analyse")) == analysed + 1
    gates(analyses=True, parses=True)

    first, last = await answers[0], await answers[2]
    assert first.items and last.items
    with pytest.raises(JsonRpcRequestCancelled):
        await answers[1]
    await final_diagnostics(session, uri)
    session.close(uri)
    await session.barrier()
    # the cancelled request's text was never parsed nor analysed
    texts_seen = {c for c, _ in calls("parse")[parsed:]} | {c for c, _ in calls("analyse")}
    assert crc(texts[1]) not in texts_seen
    assert max((n for _, n in calls("analyse")[analysed:]), default=0) == 1


async def test_a_flood_on_a_large_document_ends_on_its_final_text(session: Session) -> None:
    """No gates: edits back to back while analyses run as they will."""
    gates(analyses=True, parses=True)
    analysed = len(calls("analyse"))
    uri = session.open("scheduling/ungated/fusion_switch.cfg", TEXT)
    text = TEXT
    for count, char in enumerate("Xy" * 15):
        change, text = typed(text, KEY + count, char)
        session.change(uri, [change], text)
        if count % 5 == 0:
            await session.barrier()
    diagnostics = await final_diagnostics(session, uri)
    assert any("XyXyXyXyXyXyXyXyXyXyXyXyXyXyXy" in d.message for d in diagnostics)
    published = [p.version for p in session.published.by_uri[uri]]
    assert published == sorted(published)  # never an older version after a newer one
    assert max(n for _, n in calls("analyse")[analysed:]) == 1
    session.close(uri)


async def test_requests_waiting_for_parses_get_the_newest_text_first(session: Session) -> None:
    """A client that never cancels (the review's second scenario: a completion every 200 ms
    on 8 MB): the parses its requests wait for are started newest first, so the answer the
    user looks at is not behind every stale one."""
    gates(analyses=False, parses=False)
    analysed, parsed = len(calls("analyse")), len(calls("parse"))
    uri = session.open("scheduling/newest-first/fusion_switch.cfg", TEXT)
    await until(lambda: len(calls("analyse")) > analysed)

    async def its_parse_started():  # the first request's parse starts, held
        await until(lambda: len(calls("parse")) > parsed)

    # waited for after the first letter, before the second is sent: waited for after the
    # second (as before), the server had sometimes read both edits before any parse began,
    # and rightly started the newest first (CI, with the suite spread over two workers)
    texts, answers = await typed_and_asked(
        session, uri, "Newest", "n", after=0, then=its_parse_started
    )
    await session.barrier()
    gates(analyses=False, parses=True)
    await until(lambda: len(calls("parse")) >= parsed + len(texts))
    gates(analyses=True, parses=True)
    for answer in answers:
        assert (await answer).items
    order = [c for c, _ in calls("parse")[parsed:]]
    # the first (held when the others came), then the newest first: the last text's too,
    # whose analysis follows the first version's (a completion waits for no analysis)
    assert order[: len(texts)] == [crc(t) for t in (texts[0], *reversed(texts[1:]))]
    session.close(uri)
