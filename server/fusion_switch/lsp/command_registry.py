"""The registry of `workspace/executeCommand` handlers: `command(name)` adds one, `names()` feeds
`executeCommandProvider`, `register` attaches them all to the server, guarded like every other
handler (a failure is logged and answered with an error summary)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from .safety import guarded

if TYPE_CHECKING:
    from .server import FusionSwitchServer

# Command handlers take `(ls, *arguments)`. Leave `ls` unannotated: pygls structures command
# arguments from the handler's type hints, and the server class is not importable here.
Handler = Callable[..., Awaitable[Any]]
_REGISTRY: dict[str, Handler] = {}


def command(name: str) -> Callable[[Handler], Handler]:
    def add(fn: Handler) -> Handler:
        _REGISTRY[name] = fn
        return fn

    return add


def handler(name: str) -> Handler | None:
    return _REGISTRY.get(name)


def names() -> list[str]:
    return list(_REGISTRY)


def register(server: FusionSwitchServer) -> None:
    for name, fn in _REGISTRY.items():

        def failed(name: str = name) -> dict:
            return {"error": f"{name} failed; see the fusion-switch output for details"}

        server.command(name)(guarded(failed)(fn))
