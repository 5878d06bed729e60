"""No exception escapes a handler: `guarded` logs it and answers with an empty result.

A language server that dies or answers with an error on odd input is worse than one that
answers "nothing here": the editor keeps working, and the traceback is in the server log
(`window/logMessage`, shown in the editor's output panel), never in a crash pop-up.
"""

from __future__ import annotations

import functools
import inspect
import logging
import traceback
from collections.abc import Callable
from typing import Any

from lsprotocol import types

logger = logging.getLogger("fusion_switch.lsp")


_LEVELS = {
    types.MessageType.Error: logging.ERROR,
    types.MessageType.Warning: logging.WARNING,
    types.MessageType.Info: logging.INFO,
}


def log(ls: Any, message: str, kind: types.MessageType = types.MessageType.Log) -> None:
    """Write to the client's log (`window/logMessage`, shown with its own level); never raises.

    stderr (see `logging_setup`) gets the message at its level only when the client could not be
    told; otherwise at debug, so the editor's output channel does not show it twice.
    """
    try:
        ls.window_log_message(types.LogMessageParams(type=kind, message=message))
    except Exception:  # the client may be gone; stderr is all that is left
        logger.log(_LEVELS.get(kind, logging.INFO), message)
        logger.debug("could not send a log message", exc_info=True)
        return
    logger.debug(message)


def show(ls: Any, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
    """A message the user sees (`window/showMessage`), also logged."""
    log(ls, message, kind)
    try:
        ls.window_show_message(types.ShowMessageParams(type=kind, message=message))
    except Exception:
        logger.debug("could not show a message", exc_info=True)


def _report(ls: Any, name: str, exc: BaseException) -> None:
    detail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    log(
        ls,
        f"fusion-switch: {name} failed; answered with an empty result.\n{detail}",
        types.MessageType.Error,
    )


def guarded(default: Callable[[], Any] = lambda: None):
    """Wrap a handler `(ls, params)`: an exception is logged and `default()` is returned."""

    def wrap(fn):
        name = fn.__name__
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(ls, *args):
                try:
                    return await fn(ls, *args)
                except Exception as exc:
                    _report(ls, name, exc)
                    return default()

            return run_async

        @functools.wraps(fn)
        def run(ls, *args):
            try:
                return fn(ls, *args)
            except Exception as exc:
                _report(ls, name, exc)
                return default()

        return run

    return wrap
