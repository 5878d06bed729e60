"""Every LSP feature module, in registration order; `register_all` attaches them to a server."""

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
