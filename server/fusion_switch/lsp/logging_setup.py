"""Python logging for the server process: one format, levels that follow the client's trace setting.

The server's stderr is its log. VS Code shows every stderr line in the *Fusion Switch* output
channel (as `[error]`), so by default only warnings and errors go there; the client's trace value
(`fusionSwitch.trace.server` in VS Code, `trace` in `initialize`, changed later with `$/setTrace`)
raises it: `messages` logs info, `verbose` logs debug. `FUSION_SWITCH_LOG_LEVEL` (a level name)
overrides both, for debugging from a terminal.

pygls logs a few harmless races at warning level: a `$/cancelRequest` for a request that has
already been answered (the editor cancels completion while the user types, and the answer
crosses the cancel) and a response to a request it no longer tracks. Those are demoted to debug.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from lsprotocol import types

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
TRACE_LEVELS = {
    types.TraceValue.Off: logging.WARNING,
    types.TraceValue.Messages: logging.INFO,
    types.TraceValue.Verbose: logging.DEBUG,
}
HARMLESS = (
    "Cancel notification for unknown message id",
    "Received response to unknown message id",
)
ENV_LEVEL = "FUSION_SWITCH_LOG_LEVEL"

_handler: logging.Handler | None = None


class _DemoteHarmlessRaces(logging.Filter):
    """Re-label pygls's known-harmless race messages as debug, and drop them below debug level."""

    def __init__(self, handler: logging.Handler) -> None:
        super().__init__()
        self.handler = handler

    def filter(self, record: logging.LogRecord) -> bool:
        harmless = record.name.startswith("pygls") and str(record.msg).startswith(HARMLESS)
        if harmless and record.levelno > logging.DEBUG:
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return self.handler.level <= logging.DEBUG
        return True


def _env_level() -> int | None:
    name = os.environ.get(ENV_LEVEL, "").strip().upper()
    level = logging.getLevelName(name) if name else None
    return level if isinstance(level, int) else None


def configure(stream: Any = None) -> logging.Handler:
    """Install the one stderr handler on the root logger (idempotent); warning level by default."""
    global _handler
    root = logging.getLogger()
    if _handler is not None and _handler in root.handlers:
        return _handler
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(logging.Formatter(FORMAT))
    handler.addFilter(_DemoteHarmlessRaces(handler))
    root.addHandler(handler)
    _handler = handler
    set_trace(types.TraceValue.Off)
    return handler


def set_trace(value: Any) -> None:
    """Follow the client's trace value (unknown values count as off)."""
    level = _env_level()
    if level is None:
        try:
            level = TRACE_LEVELS.get(types.TraceValue(value), logging.WARNING)
        except ValueError:
            level = logging.WARNING
    logging.getLogger().setLevel(level)
    if _handler is not None:
        _handler.setLevel(level)


def install(server: Any) -> None:
    """Configure logging and follow `initialize`'s trace and later `$/setTrace` notifications."""
    configure()

    @server.feature(types.SET_TRACE)
    def on_set_trace(ls: Any, params: types.SetTraceParams) -> None:
        set_trace(params.value)
