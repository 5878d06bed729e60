"""LSP handlers, one module per method or small group; each has `register(server)`.

Handlers are thin: find the document, get its cached analysis, call the pure function in
`fusion_switch.cfg`, convert the result with `convert.Converter`. Every handler is wrapped in
`safety.guarded`, so odd input gets an empty answer and a log line, never an error.
"""

from __future__ import annotations

from . import (
    code_action,
    code_lens,
    completion,
    configuration,
    diagnostics,
    folding,
    formatting,
    hover,
    inlay_hint,
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
    code_lens,
    inlay_hint,
)


def register_all(server) -> None:
    for module in MODULES:
        module.register(server)
