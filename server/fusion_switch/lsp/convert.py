"""Pure-layer values (offsets, plain dataclasses) ↔ protocol types, in one place."""

from __future__ import annotations

import json
from json.encoder import c_make_encoder
from json.encoder import encode_basestring_ascii as _string
from typing import TYPE_CHECKING

from lsprotocol import types

from .capabilities import ClientFeatures
from .completion_text import JsonPieces, completion_list
from .text import LineIndex

if TYPE_CHECKING:
    from ..cfg.completion import Completions
    from ..cfg.model import Completion, Edit, Finding, Fix, Fold, HoverInfo, Span, Symbol

SOURCE = "fusion-switch"

_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}
_SEVERITY_NAME = {v: k for k, v in _SEVERITY.items()}
_SEVERITY_JSON = {k: int(v.value) for k, v in _SEVERITY.items()}


def _compact_encoder():
    """JSON as `json.dumps` writes it, without the spaces after separators: the C encoder
    made once (`JSONEncoder.encode` makes a new one per call, more than the encoding of a
    small dict costs), or the pure-Python one where the C accelerator is missing."""
    plain = json.JSONEncoder(separators=(",", ":"))
    if c_make_encoder is None:
        return plain.encode
    encoder = c_make_encoder(None, plain.default, _string, None, ":", ",", False, False, True)
    return lambda value: "".join(encoder(value, 0))


_compact = _compact_encoder()

_COMPLETION_KIND = {
    "property": types.CompletionItemKind.Property,
    "value": types.CompletionItemKind.Value,
    "keyword": types.CompletionItemKind.Keyword,
    "snippet": types.CompletionItemKind.Snippet,
}

_SYMBOL_KIND = {
    "section": types.SymbolKind.Namespace,
    "group": types.SymbolKind.Object,
    "rule": types.SymbolKind.Property,
    "key": types.SymbolKind.Key,
}


class Converter:
    """Converts for one document version in the negotiated position encoding."""

    def __init__(self, index: LineIndex, encoding: str, client: ClientFeatures) -> None:
        self.index = index
        self.encoding = encoding
        self.client = client

    # positions -------------------------------------------------------------------------
    def range(self, span: Span) -> types.Range:
        return self.index.range(span.start, span.end, self.encoding)

    def offset(self, position: types.Position) -> int:
        return self.index.offset(position, self.encoding)

    def span(self, rng: types.Range) -> Span:
        from ..cfg.model import Span

        start, end = self.offset(rng.start), self.offset(rng.end)
        return Span(min(start, end), max(start, end))

    def text_edit(self, edit: Edit) -> types.TextEdit:
        return types.TextEdit(range=self.range(edit.span), new_text=edit.new_text)

    # diagnostics -----------------------------------------------------------------------
    def diagnostic(self, finding: Finding, uri: str) -> types.Diagnostic:
        related = None
        if finding.related and self.client.related_information:
            related = [
                types.DiagnosticRelatedInformation(
                    location=types.Location(uri=uri, range=self.range(r.span)),
                    message=r.message,
                )
                for r in finding.related
            ]
        return types.Diagnostic(
            range=self.range(finding.span),
            severity=_SEVERITY.get(finding.severity, types.DiagnosticSeverity.Warning),
            code=finding.code,
            source=SOURCE,
            message=finding.message,
            data=finding.data or None,
            related_information=related,
        )

    def diagnostics_text(self, findings: list[Finding], uri: str) -> str:
        """`[diagnostic(f) for f in findings]` as the JSON text lsprotocol would send (same
        keys in the same order, no spaces, ASCII only), written directly: publishing a few
        thousand diagnostics through attrs objects and cattrs, or even through dicts and
        `json.dumps`, costs more than the check."""
        where = self.index.range_text
        encoding = self.encoding
        related_ok = self.client.related_information
        quoted_uri = _string(uri)
        out = []
        for f in findings:
            span = f.span
            text = (
                f'{{"range":{where(span.start, span.end, encoding)},'
                f'"message":{_string(f.message)},'
                f'"severity":{_SEVERITY_JSON.get(f.severity, 2)},'
                f'"code":{_string(f.code)},"source":"{SOURCE}"'
            )
            if f.related and related_ok:
                text += ',"relatedInformation":[' + ",".join(
                    f'{{"location":{{"uri":{quoted_uri},'
                    f'"range":{where(r.span.start, r.span.end, encoding)}}},'
                    f'"message":{_string(r.message)}}}'
                    for r in f.related
                )
                text += "]"
            if f.data:
                text += ',"data":' + _compact(f.data)
            out.append(text + "}")
        return "[" + ",".join(out) + "]"

    def finding(self, diagnostic: types.Diagnostic, uri: str) -> Finding:
        """Rebuild a finding from a diagnostic the client sent back (code-action requests)."""
        from ..cfg.model import Finding, Related

        related = [
            Related(self.span(info.location.range), info.message)
            for info in diagnostic.related_information or []
            if info.location.uri == uri
        ]
        data = diagnostic.data if isinstance(diagnostic.data, dict) else {}
        return Finding(
            code=str(diagnostic.code) if diagnostic.code is not None else "",
            severity=_SEVERITY_NAME.get(diagnostic.severity, "warning"),
            span=self.span(diagnostic.range),
            message=diagnostic.message,
            data=data,
            related=related,
        )

    # features --------------------------------------------------------------------------
    def _markup(self, markdown: str, supports_markdown: bool) -> types.MarkupContent | str:
        """Markdown when the client renders it; otherwise the plain string (clients that
        declare no format at all must not get MarkupContent)."""
        if supports_markdown:
            return types.MarkupContent(kind=types.MarkupKind.Markdown, value=markdown)
        return markdown

    def completion_item(self, item: Completion) -> types.CompletionItem:
        snippet = item.is_snippet and self.client.snippets
        return types.CompletionItem(
            label=item.label,
            kind=_COMPLETION_KIND.get(item.kind, types.CompletionItemKind.Text),
            detail=item.detail or None,
            documentation=(
                self._markup(item.documentation, self.client.completion_markdown)
                if item.documentation
                else None
            ),
            sort_text=item.sort_text,
            filter_text=item.filter_text,
            insert_text_format=(
                types.InsertTextFormat.Snippet if snippet else types.InsertTextFormat.PlainText
            ),
            text_edit=types.TextEdit(range=self.range(item.span), new_text=item.new_text),
        )

    def completion_list(self, completions: Completions) -> JsonPieces:
        """`CompletionList(is_incomplete=False, items=[completion_item(i) ...])` as the JSON
        lsprotocol would send (see `completion_text`)."""
        span = completions.span
        where = self.index.range_text(span.start, span.end, self.encoding)
        return completion_list(
            completions, where, self.client.completion_markdown, self.client.snippets
        )

    def hover(self, info: HoverInfo) -> types.Hover:
        return types.Hover(
            contents=self._markup(info.markdown, self.client.hover_markdown),
            range=self.range(info.span),
        )

    def document_symbol(self, symbol: Symbol) -> types.DocumentSymbol:
        return types.DocumentSymbol(
            name=symbol.name or "(empty)",
            kind=_SYMBOL_KIND.get(symbol.kind, types.SymbolKind.Key),
            range=self.range(symbol.span),
            selection_range=self.range(symbol.selection),
            detail=symbol.detail or None,
            children=[self.document_symbol(c) for c in symbol.children],
        )

    def symbol_information(
        self, symbols: list[Symbol], uri: str, container: str | None = None
    ) -> list[types.SymbolInformation]:
        """The flat form, for clients without hierarchical symbol support."""
        out: list[types.SymbolInformation] = []
        for symbol in symbols:
            out.append(
                types.SymbolInformation(
                    name=symbol.name or "(empty)",
                    kind=_SYMBOL_KIND.get(symbol.kind, types.SymbolKind.Key),
                    location=types.Location(uri=uri, range=self.range(symbol.span)),
                    container_name=container,
                )
            )
            out.extend(self.symbol_information(symbol.children, uri, symbol.name))
        return out

    def folding_range(self, fold: Fold) -> types.FoldingRange | None:
        start = self.index.position(fold.start_offset, self.encoding)
        end = self.index.position(fold.end_offset, self.encoding)
        if end.line <= start.line:
            return None
        return types.FoldingRange(start_line=start.line, end_line=end.line)

    def workspace_edit(
        self, edits: list[Edit], uri: str, version: int | None
    ) -> types.WorkspaceEdit:
        text_edits = [self.text_edit(e) for e in edits]
        if self.client.document_changes:
            return types.WorkspaceEdit(
                document_changes=[
                    types.TextDocumentEdit(
                        text_document=types.OptionalVersionedTextDocumentIdentifier(
                            uri=uri, version=version
                        ),
                        edits=text_edits,
                    )
                ]
            )
        return types.WorkspaceEdit(changes={uri: text_edits})

    def code_action(
        self,
        fix: Fix,
        uri: str,
        version: int | None,
        diagnostics: list[types.Diagnostic],
    ) -> types.CodeAction:
        return types.CodeAction(
            title=fix.title,
            kind=fix.kind,
            diagnostics=[d for d in diagnostics if d.code in fix.codes] or None,
            edit=self.workspace_edit(fix.edits, uri, version),
            is_preferred=fix.preferred or None,
        )
