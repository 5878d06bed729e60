"""`workspace/executeCommand`: every command the server offers, in menu order.

Importing this module fills the registry (:mod:`.command_registry`): the catalogue command here,
the recipe's commands from their modules under ``recipe/``.
"""

from __future__ import annotations

from .command_registry import command, names, register

__all__ = ["RELOAD_CATALOGUE", "names", "register"]

RELOAD_CATALOGUE = "fusionSwitch.reloadCatalogue"


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


# The recipe's commands register themselves when imported; after the line above, so that the
# menu lists the catalogue command first.
from .recipe import bisecting, comparing, editing  # noqa: E402, F401
