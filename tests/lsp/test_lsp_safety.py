"""`guarded`: an exception in a handler is logged to the client and answered with a default."""

from __future__ import annotations

import asyncio

from fusion_switch.lsp.safety import guarded
from lsprotocol import types


class FakeServer:
    def __init__(self) -> None:
        self.logged: list[types.LogMessageParams] = []
        self.shown: list[types.ShowMessageParams] = []

    def window_log_message(self, params: types.LogMessageParams) -> None:
        self.logged.append(params)

    def window_show_message(self, params: types.ShowMessageParams) -> None:
        self.shown.append(params)


def test_sync_handler_exception_is_logged_not_raised() -> None:
    @guarded(list)
    def handler(ls, params):
        raise ValueError("boom")

    ls = FakeServer()
    assert handler(ls, None) == []
    [entry] = ls.logged
    assert entry.type == types.MessageType.Error
    assert "handler failed" in entry.message and "ValueError: boom" in entry.message
    assert ls.shown == []  # no pop-up


def test_async_handler_exception_and_normal_result() -> None:
    @guarded(lambda: "empty")
    async def failing(ls, params):
        raise KeyError("x")

    @guarded(lambda: "empty")
    async def working(ls, params):
        return params * 2

    ls = FakeServer()
    assert asyncio.run(failing(ls, 1)) == "empty"
    assert asyncio.run(working(ls, 21)) == 42
    assert len(ls.logged) == 1 and "KeyError" in ls.logged[0].message


def test_logging_survives_a_dead_client() -> None:
    class Gone(FakeServer):
        def window_log_message(self, params):
            raise BrokenPipeError

    @guarded()
    def handler(ls, params):
        raise RuntimeError

    assert handler(Gone(), None) is None
