"""`workspace/executeCommand`: every command the server offers, in menu order.

Importing this module fills the registry (:mod:`.command_registry`): the catalogue command here,
the recipe's commands from their modules under ``recipe/``.
"""

from __future__ import annotations

import importlib

from . import command_registry
from .command_registry import command, names, register

__all__ = ["RELOAD_CATALOGUE", "names", "register"]

RELOAD_CATALOGUE = "fusionSwitch.reloadCatalogue"


@command(RELOAD_CATALOGUE)
async def reload_catalogue(ls, *args):  # unannotated: pygls resolves command annotations
    """Re-read the built-in and extra catalogues and re-validate every open configuration;
    answers with the catalogue and target of `cfgUri`'s folder (else the window's)."""
    from .features import configuration

    configuration.adopt(ls, ls.state.settings, force_reload=True)
    state = ls.state
    first = args[0] if args else None
    uri = first.get("cfgUri") if isinstance(first, dict) else None
    uri = uri if isinstance(uri, str) else None
    catalogue, target = state.catalogue_for(uri), state.target_for(uri)
    return {
        "rules": len(catalogue),
        "origins": list(catalogue.origins),
        "errors": [str(e) for e in state.catalogue_errors_for(uri)],
        "target": target.label if target else None,
    }


# The recipe's commands, in menu order, and the module under recipe/ that defines each. The
# modules are imported on the first call of one of their commands, not at start-up (the first
# diagnostics do not need them); importing one replaces its placeholders in the registry with
# the real handlers (tests/lsp/test_lsp_commands.py checks this table against the modules).
RECIPE = {
    "fusionSwitch.bisect": "bisecting",
    "fusionSwitch.cancelBisect": "bisecting",
    "fusionSwitch.compare": "comparing",
    "fusionSwitch.cancelCompare": "comparing",
    "fusionSwitch.showReport": "comparing",
    "fusionSwitch.allOff": "editing",
    "fusionSwitch.restore": "editing",
    "fusionSwitch.applySuspects": "editing",
}


def _on_first_use(name: str, module: str):
    async def placeholder(ls, *args):  # unannotated, like the recipe's handlers
        importlib.import_module(f"{__package__}.recipe.{module}")
        real = command_registry.handler(name)
        if real is placeholder:
            raise RuntimeError(f"recipe/{module}.py does not define {name}")
        return await real(ls, *args)

    return placeholder


for _name, _module in RECIPE.items():
    if command_registry.handler(_name) is None:
        command(_name)(_on_first_use(_name, _module))
