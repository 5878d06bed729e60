"""Diagnostics: pushed after every change (`publishDiagnostics` with the version), or pulled
(`textDocument/diagnostic` with result ids) by clients that declare it; see capabilities.py."""

from __future__ import annotations

import asyncio
from json.encoder import encode_basestring_ascii as _string
from typing import TYPE_CHECKING

from lsprotocol import types

from ...readers.collector import collector_paused
from ..convert import Converter
from ..documents import OpenDocument
from ..safety import guarded, log
from ..state import LARGE_DOCUMENT, PATIENCE

if TYPE_CHECKING:
    from ..server import FusionSwitchServer

# More than this many problems in one file is noise; the rest is summarised in the log.
MAX_DIAGNOSTICS = 2000
# At most one check of a document per this many seconds while it is being edited (see
# `validate`); a single edit after a quiet spell is still checked at once.
DEBOUNCE = 0.3


def _shown(ls: FusionSwitchServer, doc: OpenDocument, findings, quiet: bool = False) -> list:
    if len(findings) > MAX_DIAGNOSTICS and not quiet:
        log(
            ls,
            f"fusion-switch: {doc.uri} has {len(findings)} problems; "
            f"showing the first {MAX_DIAGNOSTICS}",
        )
    return findings[:MAX_DIAGNOSTICS]


def _diagnostics(ls: FusionSwitchServer, doc: OpenDocument, findings) -> list[types.Diagnostic]:
    conv = Converter(doc.index, ls.state.encoding, ls.state.client)
    return [conv.diagnostic(f, doc.uri) for f in _shown(ls, doc, findings)]


def _with_results(ls: FusionSwitchServer, doc: OpenDocument, analysis) -> list:
    """The analysis findings plus what the last comparison says about this file."""
    from ..recipe import annotations

    return list(analysis.findings) + annotations.findings(ls, doc, analysis.document)


def _publish(ls: FusionSwitchServer, doc: OpenDocument, findings, quiet: bool = False) -> None:
    """publishDiagnostics, written as JSON text without lsprotocol objects (the same message,
    a fraction of the time for thousands of diagnostics; see `Converter.diagnostics_text`).
    `quiet`: the log line about too many problems was written already for this version."""
    conv = Converter(doc.index, ls.state.encoding, ls.state.client)
    shown = _shown(ls, doc, findings, quiet)
    params = f'{{"uri":{_string(doc.uri)},"diagnostics":{conv.diagnostics_text(shown, doc.uri)}'
    if doc.version is not None:
        params += f',"version":{int(doc.version)}'
    ls.protocol.notify_text(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, params + "}")


async def _publish_later(ls: FusionSwitchServer, doc: OpenDocument) -> None:
    """Publish a large document's diagnostics once the worker thread has analysed its text;
    syntax problems first if that takes longer than `PATIENCE`. Nothing when a newer text
    took its turn: that text's own check publishes."""
    state = ls.state
    version, generation, text = doc.version, state.generation, doc.text

    def current() -> bool:
        return (
            state.documents.get(doc.uri) is doc
            and doc.version == version
            and doc.text is text
            and state.generation == generation
        )

    full = asyncio.ensure_future(state.full_analysis(doc))
    try:
        try:
            analysis = await asyncio.wait_for(asyncio.shield(full), PATIENCE)
        except TimeoutError:
            if not current():
                return
            log(ls, f"fusion-switch: checking {doc.uri} is slow; syntax problems shown first")
            document = await state.document_async(doc)
            if current():
                _publish(ls, doc, document.syntax_findings)
            analysis = await full
    finally:
        full.cancel()  # when this check was cancelled: the analysis itself goes on
    if analysis is not None and current():
        _publish(ls, doc, _with_results(ls, doc, analysis))


def validate(ls: FusionSwitchServer, doc: OpenDocument, *, immediately: bool = False) -> None:
    """Bring the client's diagnostics for `doc` up to date (push clients only).

    Checks are debounced, never queued: the first change after a quiet spell is checked at
    once; changes within `DEBOUNCE` seconds of a check share one later check, which reads the
    newest version when it runs. A check of an older version still in progress is cancelled
    (a large document's analysis on the worker thread goes on; only the newest text's
    follows it: see `state`). So a flood of edits costs a few checks a second and requests
    (completion) do not wait behind a queue of stale ones. `immediately`: no waiting (a newly
    opened document)."""
    if ls.state.client.pull_diagnostics or ls.state.scopes.waiting(doc.uri):
        return  # (waiting: checked once the client said which settings its folder has)
    state = ls.state
    uri = doc.uri
    previous = state.validations.get(uri)
    if previous is not None and not previous.done():
        if uri in state.debouncing and not immediately:
            return  # a check is already due; it will see this version
        previous.cancel()
        state.validations.pop(uri, None)
    now = asyncio.get_event_loop().time()
    due = state.last_checked.get(uri, -DEBOUNCE) + DEBOUNCE
    if (immediately or now >= due) and len(doc.text) < LARGE_DOCUMENT:
        state.last_checked[uri] = now
        # the collection the check's new objects are due is run after the publish, not
        # before it (the check runs with the collector paused; see `cfg.analyse`)
        with collector_paused(freeze=False):
            analysis = state.analysis(doc, defer_suggestions=True)
            _publish(ls, doc, _with_results(ls, doc, analysis))
        if analysis.deferred:
            _publish_suggestions_next(ls, doc)
        return
    delay = 0.0 if immediately else max(0.0, due - now)
    task = asyncio.ensure_future(guarded()(_check_later)(ls, uri, delay))
    state.validations[uri] = task
    task.add_done_callback(
        lambda t: state.validations.pop(uri) if state.validations.get(uri) is t else None
    )


def _publish_suggestions_next(ls: FusionSwitchServer, doc: OpenDocument) -> None:
    """Publish again once the deferred "did you mean" of the analysis just published are in.

    The first publish of a file with many new unknown names carries every finding; searching
    close names for them (tens of ms for a thousand) runs after it, on the next turn of the
    event loop, and a newer edit cancels it like any pending check of the document."""
    state = ls.state
    uri = doc.uri
    task = asyncio.ensure_future(
        guarded()(_publish_complete)(ls, doc, doc.version, state.generation)
    )
    state.validations[uri] = task
    task.add_done_callback(
        lambda t: state.validations.pop(uri) if state.validations.get(uri) is t else None
    )


async def _publish_complete(
    ls: FusionSwitchServer, doc: OpenDocument, version: int | None, generation: int
) -> None:
    await asyncio.sleep(0)
    state = ls.state
    if state.documents.get(doc.uri) is doc and (doc.version, state.generation) == (
        version,
        generation,
    ):
        _publish(ls, doc, _with_results(ls, doc, state.analysis(doc)), quiet=True)


async def _check_later(ls: FusionSwitchServer, uri: str, delay: float) -> None:
    """The debounced check: wait, then check whatever version is current."""
    state = ls.state
    state.debouncing.add(uri)
    try:
        await asyncio.sleep(delay)
    finally:
        state.debouncing.discard(uri)
    doc = state.documents.get(uri)
    if doc is None:
        return
    state.last_checked[uri] = asyncio.get_event_loop().time()
    if len(doc.text) < LARGE_DOCUMENT:
        _publish(ls, doc, _with_results(ls, doc, state.analysis(doc)))
    else:
        await _publish_later(ls, doc)


def validate_all(ls: FusionSwitchServer) -> None:
    """Re-check every open configuration at once (after a target, catalogue or results
    change: not an edit, so not debounced; the new diagnostics go out before the command or
    notification that caused them is answered)."""
    if not len(ls.state.documents):
        return
    if ls.state.client.pull_diagnostics:
        ls.workspace_diagnostic_refresh(None)
        return
    for doc in ls.state.documents:
        validate(ls, doc, immediately=True)


def clear(ls: FusionSwitchServer, uri: str) -> None:
    task = ls.state.validations.pop(uri, None)
    if task is not None:
        task.cancel()
    ls.state.debouncing.discard(uri)
    ls.state.last_checked.pop(uri, None)
    if not ls.state.client.pull_diagnostics:
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )


def _empty_report() -> types.RelatedFullDocumentDiagnosticReport:
    return types.RelatedFullDocumentDiagnosticReport(items=[])


def register(server: FusionSwitchServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DIAGNOSTIC)
    @guarded(_empty_report)
    async def pull_diagnostics(ls: FusionSwitchServer, params: types.DocumentDiagnosticParams):
        doc = ls.state.documents.get(params.text_document.uri)
        if doc is None:
            return _empty_report()
        answer = ls.state.scopes.pending(doc.uri)  # its folder's settings, asked at didOpen
        if answer is not None:
            await asyncio.shield(answer)
        result_id = ls.state.result_id(doc)
        if params.previous_result_id == result_id:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
        analysis, complete = await ls.state.analysis_or_syntax(doc)
        if not complete:  # ask for a new pull once the full analysis is in
            result_id += ":syntax-only"
            ls.state.keep(asyncio.ensure_future(guarded()(_refresh_when_done)(ls, doc)))
        found = _with_results(ls, doc, analysis) if complete else analysis.findings
        return types.RelatedFullDocumentDiagnosticReport(
            items=_diagnostics(ls, doc, found), result_id=result_id
        )


async def _refresh_when_done(ls: FusionSwitchServer, doc: OpenDocument) -> None:
    """After a syntax-only pull: ask for a new pull once the full analysis is in (not when a
    newer text took its turn: the client pulls again for that one)."""
    if await ls.state.full_analysis(doc) is not None:
        ls.workspace_diagnostic_refresh(None)
