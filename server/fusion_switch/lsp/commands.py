"""`workspace/executeCommand`: the single registry of commands the server offers.

Each entry maps a command id to an async handler `(ls, *arguments) -> result`; `register`
attaches them to the server and `names()` feeds `executeCommandProvider`. Handlers are
guarded like every other handler: a failure is logged and answered with an error summary.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from .safety import guarded

if TYPE_CHECKING:
    from .server import FusionSwitchServer

# Command handlers take `(ls, *arguments)`. Leave `ls` unannotated: pygls structures command
# arguments from the handler's type hints, and the server class is not importable here.
RELOAD_CATALOGUE = "fusionSwitch.reloadCatalogue"

Handler = Callable[..., Awaitable[Any]]
_REGISTRY: dict[str, Handler] = {}


def command(name: str) -> Callable[[Handler], Handler]:
    def add(fn: Handler) -> Handler:
        _REGISTRY[name] = fn
        return fn

    return add


def names() -> list[str]:
    return list(_REGISTRY)


@command(RELOAD_CATALOGUE)
async def reload_catalogue(ls, *_):  # unannotated: pygls resolves command annotations
    """Re-read the built-in and extra catalogues and re-validate every open configuration."""
    from .features import configuration

    configuration.adopt(ls, ls.state.settings, force_reload=True)
    state = ls.state
    return {
        "rules": len(state.catalogue),
        "origins": list(state.catalogue.origins),
        "errors": [str(e) for e in state.catalogue_errors],
        "target": state.target.label if state.target else None,
    }


def register(server: FusionSwitchServer) -> None:
    for name, fn in _REGISTRY.items():

        def failed(name: str = name) -> dict:
            return {"error": f"{name} failed; see the fusion-switch output for details"}

        server.command(name)(guarded(failed)(fn))


# The recipe's commands register themselves in `_REGISTRY` when imported (order = menu order).
from .recipe import comparing, editing  # noqa: E402, F401
