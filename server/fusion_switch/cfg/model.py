"""Plain data the pure cfg layer speaks: offsets into the document text, never protocol types.

Offsets are indexes into the Python `str` of the document (code points). The protocol layer
converts them to the client's position encoding (UTF-16 by default).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..catalogue import Catalogue, Target, builtin_catalogue

Severity = Literal["error", "warning", "information", "hint"]


@dataclass(frozen=True, order=True)
class Span:
    start: int
    end: int

    def contains(self, offset: int) -> bool:
        """True when the offset is inside or touching the span (a cursor at its end counts)."""
        return self.start <= offset <= self.end


@dataclass
class Related:
    span: Span
    message: str


@dataclass
class Finding:
    """One diagnostic. `data` carries what a quick fix needs (yaml-language-server style)."""

    code: str
    severity: Severity
    span: Span
    message: str
    data: dict = field(default_factory=dict)
    related: list[Related] = field(default_factory=list)


@dataclass
class Edit:
    span: Span
    new_text: str


@dataclass
class Fix:
    """A code action: a title and the edits that carry it out (against the current text)."""

    title: str
    edits: list[Edit]
    kind: str = "quickfix"  # quickfix | source | refactor.rewrite
    codes: list[str] = field(default_factory=list)  # the diagnostic codes it resolves
    preferred: bool = False


@dataclass
class Completion:
    label: str
    span: Span  # the range the new text replaces
    new_text: str
    kind: Literal["property", "value", "keyword", "snippet"] = "property"
    detail: str = ""
    documentation: str = ""  # markdown
    sort_text: str | None = None
    filter_text: str | None = None
    is_snippet: bool = False


@dataclass
class HoverInfo:
    markdown: str
    span: Span


@dataclass
class Symbol:
    name: str
    kind: Literal["section", "group", "rule", "key"]
    span: Span  # whole entry
    selection: Span  # the key
    detail: str = ""
    children: list[Symbol] = field(default_factory=list)


@dataclass
class Fold:
    start_offset: int
    end_offset: int


@dataclass
class Context:
    """What the checks depend on besides the text."""

    catalogue: Catalogue = field(default_factory=builtin_catalogue)
    target: Target | None = None
