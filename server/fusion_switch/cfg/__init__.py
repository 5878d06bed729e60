"""The pure editing layer for fusion_switch.cfg: parse, check, complete, hover, fix, format,
outline. No editor protocol here; offsets are Python str indexes (see model.py)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# Submodules are imported on first use of one of their names (PEP 562): the server's first
# check needs only the parser and the checks, not completion, fixes or formatting.
_HOME = {
    "Analysis": "analysis",
    "analyse": "analysis",
    "fill_suggestions": "analysis",
    "complete": "completion",
    "complete_choices": "completion",
    "all_off_text": "edits",
    "apply_edits": "edits",
    "set_switches": "edits",
    "code_actions": "fixes",
    "format_document": "formatting",
    **dict.fromkeys(
        ["Completion", "Context", "Edit", "Finding", "Fix", "Fold", "HoverInfo", "Related"],
        "model",
    ),
    "Span": "model",
    "Symbol": "model",
    "folds": "outline",
    "symbols": "outline",
    "sample_catalogue": "sample",
    "sample_document": "sample",
    "parse": "syntax",
    **dict.fromkeys(
        [
            "ArrayNode",
            "CfgDocument",
            "LineEntry",
            "Member",
            "Node",
            "ObjectNode",
            "ScalarNode",
            "StringNode",
        ],
        "tree",
    ),
}


# `hover` is both a submodule and the function it exports: imported here, so that the package
# attribute is the function whichever is imported first.
from .hover import hover  # noqa: E402


def __getattr__(name: str):
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOME])


if TYPE_CHECKING:
    from .analysis import Analysis, analyse, fill_suggestions
    from .completion import complete, complete_choices
    from .edits import all_off_text, apply_edits, set_switches
    from .fixes import code_actions
    from .formatting import format_document
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
    "text-after-object": "warning",  # CANN reads one JSON value and stops
    "line-syntax": "error",
    "trailing-comma": "error",
    "comment": "error",
    "empty-file": "error",
    "duplicate-key": "warning",  # error in the line format (CANN rejects a repeated name there)
    "unknown-top-level-key": "error",
    "unknown-section": "error",
    "invalid-switch-value": "error",  # warning for spaces around on/off (the rule is off)
    "invalid-priority": "error",
    "unknown-rule": "warning",
    "wrong-section": "warning",
    "cannot-switch-off": "warning",
    "all-overridden": "information",
    "ub-unsupported-on-target": "warning",
    "legacy-line-format": "information",
    "ge-pass-in-line-format": "warning",
    "spelling-twin": "information",
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
    "complete_choices",
    "fill_suggestions",
    "folds",
    "format_document",
    "hover",
    "parse",
    "sample_catalogue",
    "sample_document",
    "set_switches",
    "symbols",
]
