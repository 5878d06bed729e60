"""The pure editing layer for fusion_switch.cfg: parse, check, complete, hover, fix, format,
outline. No editor protocol here; offsets are Python str indexes (see model.py)."""

from .analysis import Analysis, analyse
from .completion import complete
from .edits import all_off_text, apply_edits, set_switches
from .fixes import code_actions
from .formatting import format_document
from .hover import hover
from .model import (
    Completion,
    Context,
    Edit,
    Finding,
    Fix,
    Fold,
    HoverInfo,
    Related,
    Span,
    Symbol,
)
from .outline import folds, symbols
from .sample import sample_catalogue, sample_document
from .syntax import parse
from .tree import (
    ArrayNode,
    CfgDocument,
    LineEntry,
    Member,
    Node,
    ObjectNode,
    ScalarNode,
    StringNode,
)

CODES = {
    "json-syntax": "error",
    "line-syntax": "error",
    "trailing-comma": "error",
    "comment": "error",
    "empty-file": "error",
    "duplicate-key": "warning",  # error in the line format (CANN rejects a repeated name there)
    "unknown-top-level-key": "error",  # warning when only surrounding spaces are wrong
    "unknown-section": "error",
    "invalid-switch-value": "error",  # warning when only surrounding spaces are wrong
    "invalid-priority": "error",
    "unknown-rule": "warning",
    "wrong-section": "warning",
    "cannot-switch-off": "warning",
    "all-overridden": "information",
    "ub-unsupported-on-target": "warning",
    "legacy-line-format": "information",
}


__all__ = [
    "CODES",
    "Analysis",
    "ArrayNode",
    "CfgDocument",
    "Completion",
    "Context",
    "Edit",
    "Finding",
    "Fix",
    "Fold",
    "HoverInfo",
    "LineEntry",
    "Member",
    "Node",
    "ObjectNode",
    "Related",
    "ScalarNode",
    "Span",
    "StringNode",
    "Symbol",
    "all_off_text",
    "analyse",
    "apply_edits",
    "code_actions",
    "complete",
    "folds",
    "format_document",
    "hover",
    "parse",
    "sample_catalogue",
    "sample_document",
    "set_switches",
    "symbols",
]
