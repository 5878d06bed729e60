"""Settings: from `initializationOptions`, `workspace/configuration` (pulled when the client
declares it) and `workspace/didChangeConfiguration`. A change of target or catalogue
re-validates every open configuration at once."""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from ..recipe import annotations
from ..recipe.target import path_of
from ..safety import guarded, log, show
from ..settings import SECTION, SETTINGS, Settings, parse_settings
from . import diagnostics

if TYPE_CHECKING:
    from ..server import FusionSwitchServer

_FLAT_KEYS = {key.split(".", 1)[1].split(".", 1)[0] for key in SETTINGS}


def carries_settings(payload: Any) -> bool:
    """Whether a didChangeConfiguration payload contains our settings (else we pull them)."""
    if not isinstance(payload, dict):
        return False
    return any(
        isinstance(k, str) and (k == SECTION or k.startswith(SECTION + ".") or k in _FLAT_KEYS)
        for k in payload
    )


def apply(ls: FusionSwitchServer, raw: Any, *, force_reload: bool = False) -> None:
    """Parse a settings payload, adopt it, tell the user about problems, re-validate."""
    settings, problems = parse_settings(raw, ls.state.settings)
    adopt(ls, settings, problems, force_reload=force_reload)


def adopt(
    ls: FusionSwitchServer,
    settings: Settings,
    problems: list[str] = (),
    *,
    force_reload: bool = False,
) -> None:
    for problem in problems:
        log(ls, f"fusion-switch: setting {problem}", types.MessageType.Warning)
    settings = _in_workspace(ls, settings)
    outcome = ls.state.apply_settings(settings, force_reload=force_reload)
    for warning in outcome.warnings:
        show(ls, warning, types.MessageType.Warning)
    if outcome.revalidate:
        log(ls, ls.state.describe(), types.MessageType.Info)
        diagnostics.validate_all(ls)
    annotations.send_status(ls)


def _in_workspace(ls: FusionSwitchServer, settings: Settings) -> Settings:
    """Relative ``catalogue.extraFiles`` read against the workspace folder (the first one,
    else the root), as the setting promises, not against the server's working directory (a
    review: that is the folder only where VS Code starts the server there)."""
    if all(os.path.isabs(os.path.expanduser(f)) for f in settings.extra_files):
        return settings
    folders = [path_of(folder.uri) for folder in ls.workspace.folders.values()]
    base = next((f for f in folders if f is not None), None) or ls.workspace.root_path
    if not base:
        return settings
    files = tuple(
        f if os.path.isabs(os.path.expanduser(f)) else os.path.join(base, f)
        for f in settings.extra_files
    )
    return dataclasses.replace(settings, extra_files=files)


async def pull(ls: FusionSwitchServer) -> None:
    """Ask the client for section `fusionSwitch` (only if it declared workspace/configuration)."""
    if not ls.state.client.configuration:
        return
    result = await ls.workspace_configuration_async(
        types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)])
    )
    if result and isinstance(result[0], dict):
        apply(ls, result[0])


def register(server: FusionSwitchServer) -> None:
    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    @guarded()
    async def did_change_configuration(
        ls: FusionSwitchServer, params: types.DidChangeConfigurationParams
    ) -> None:
        if carries_settings(params.settings):
            apply(ls, params.settings)
        else:
            await pull(ls)
