"""LSP handlers, one module per method or small group; each has `register(server)`.

Handlers are thin: find the document, get its cached analysis, call the pure function in
`fusion_switch.cfg`, convert the result with `convert.Converter`. Every handler is wrapped in
`safety.guarded`, so odd input gets an empty answer and a log line, never an error.
"""

from __future__ import annotations

from . import (
    code_action,
    completion,
    configuration,
    diagnostics,
    folding,
    formatting,
    hover,
    lifecycle,
    symbols,
    sync,
)

MODULES = (
    lifecycle,
    configuration,
    sync,
    diagnostics,
    completion,
    hover,
    code_action,
    formatting,
    symbols,
    folding,
)


def register_all(server) -> None:
    for module in MODULES:
        module.register(server)
