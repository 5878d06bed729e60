"""textDocument/codeAction: quick fixes from the diagnostics the client sends back, and the
source action "Convert to JSON" for a file in the old line format.

Fixes are derived only from each diagnostic's code, range and data (the server keeps no
per-request memory), and only for a diagnostic the current text still has (same code and
range): a stale one's fix would edit text that is no longer there. Clients that drop `data`
(no `dataSupport`) get it restored from that finding.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from ..capabilities import SOURCE_CONVERT_TO_JSON
from ..convert import SOURCE
from ..recipe import annotations
from ..safety import guarded
from .common import compute, document

if TYPE_CHECKING:
    from ...cfg.model import Finding
    from ..server import FusionSwitchServer

LEGACY_CODE = "legacy-line-format"


def wanted(kind: str, only: list[str] | None) -> bool:
    """LSP kind filtering: `only=["source"]` admits `source.convertToJson`."""
    return not only or any(kind == k or kind.startswith(k + ".") for k in only)


def register(server: FusionSwitchServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION)
    @guarded(list)
    async def code_action(ls: FusionSwitchServer, params: types.CodeActionParams):
        from ... import cfg  # lazy: see engine note in state.py

        found = document(ls, params.text_document.uri)
        if found is None:
            return []
        doc, conv = found
        asked, version = doc.text, doc.version  # the converter's text and its version
        analysis = await ls.state.analysis_async(doc)
        if analysis.document.text != asked:
            return []  # analysed after an edit: its spans are not the converter's
        ctx = ls.state.context(doc.uri)
        only = list(params.context.only) if params.context.only else None
        from ...workflow import annotate

        ours_found = annotations.findings(ls, doc, analysis.document)
        # keyed by the span as a client gives it back: a range has no room for a CRLF's CR,
        # so a span ending on one comes back a character shorter
        known = {
            (f.code, conv.span(conv.range(f.span))): f for f in [*analysis.findings, *ours_found]
        }

        ours = [d for d in params.context.diagnostics if d.source == SOURCE]
        findings: list[Finding] = []
        for diagnostic in ours:
            finding = conv.finding(diagnostic, doc.uri)
            cached = known.get((finding.code, finding.span))
            if cached is None:  # stale: its fix would edit text that is no longer there
                continue
            if not finding.data:
                finding.data = cached.data
                finding.related = cached.related
            finding.span = cached.span  # the finding's own, CR included
            findings.append(finding)

        # no conversion while a line with text has no colon: the converted file would drop it
        text = analysis.document.text
        unread = any(
            f.code == "line-syntax" and text[f.span.start : f.span.end].strip()
            for f in analysis.findings
        )
        actions: list[types.CodeAction] = []
        if findings:
            found_fixes = await compute(doc, cfg.code_actions, analysis.document, findings, ctx)
            found_fixes += annotate.fixes(analysis.document, findings)
            for fix in found_fixes:
                if unread and LEGACY_CODE in fix.codes:
                    continue
                if wanted(fix.kind, only):
                    actions.append(conv.code_action(fix, doc.uri, version, ours))

        if wanted(SOURCE_CONVERT_TO_JSON, only) and not unread:
            legacy = [f for f in analysis.findings if f.code == LEGACY_CODE]
            fixes = await compute(doc, cfg.code_actions, analysis.document, legacy, ctx)
            for fix in fixes if legacy else []:
                if LEGACY_CODE in fix.codes:
                    fix.kind = SOURCE_CONVERT_TO_JSON
                    fix.title = "Convert to JSON"
                    actions.append(conv.code_action(fix, doc.uri, version, []))
                    break
        if doc.text is not asked:
            return []  # edits for a text the editor no longer holds (a review)
        return actions
