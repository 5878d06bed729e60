"""Settings: from `initializationOptions`, `workspace/configuration` (pulled when the client
declares it) and `workspace/didChangeConfiguration`. A change of target or catalogue
re-validates every open configuration at once."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from ..recipe import annotations
from ..safety import guarded, log, show
from ..scopes import path_of
from ..settings import SECTION, SETTINGS, Settings, parse_settings
from ..state import SettingsOutcome
from . import diagnostics

if TYPE_CHECKING:
    from ..server import FusionSwitchServer

# Seconds a workspace/configuration request may take; then the settings known stay in force
# (a client that never answers must not hold a configuration's first check for ever).
ANSWER_PATIENCE = 5.0
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
    """Parse a window settings payload, adopt it, tell the user about problems, re-validate."""
    settings, problems = parse_settings(raw, ls.state.settings)
    adopt(ls, settings, problems, force_reload=force_reload)


def adopt(
    ls: FusionSwitchServer,
    settings: Settings,
    problems: list[str] = (),
    *,
    force_reload: bool = False,
) -> None:
    _problems(ls, problems)
    _after(ls, ls.state.apply_settings(settings, force_reload=force_reload))


def _problems(ls: FusionSwitchServer, problems, where: str = "") -> None:
    for problem in problems:
        log(ls, f"fusion-switch: setting {problem}{where}", types.MessageType.Warning)


def _after(ls: FusionSwitchServer, outcome: SettingsOutcome, folder: str | None = None) -> None:
    """Say what went wrong; check again what the change concerns (every open configuration
    when a catalogue or target changed, else the configurations of a folder that answered)."""
    for warning in outcome.warnings:
        show(ls, warning, types.MessageType.Warning)
    if outcome.revalidate:
        log(ls, ls.state.describe(), types.MessageType.Info)
        diagnostics.validate_all(ls)
    elif folder is not None:  # checks held back while the folder's answer was on the way
        for doc in list(ls.state.documents):
            if ls.state.scopes.folder_of(doc.uri) == folder:
                diagnostics.validate(ls, doc, immediately=True)
    annotations.send_status(ls)


async def _ask(ls: FusionSwitchServer, items: list[types.ConfigurationItem]) -> list | None:
    """The client's answers, or None when it did not answer in time or answered an error
    (the settings known stay in force)."""
    try:
        result = await asyncio.wait_for(
            ls.workspace_configuration_async(types.ConfigurationParams(items=items)),
            ANSWER_PATIENCE,
        )
    except Exception as exc:  # a client's failure must not stop the server
        log(ls, f"fusion-switch: workspace/configuration was not answered: {exc!r}")
        return None
    if not isinstance(result, list | tuple) or len(result) != len(items):
        return None
    return list(result)


def _record(ls: FusionSwitchServer, folder: str, answer: Any) -> None:
    """Keep a folder's answer (null: the window's settings apply), its problems logged; the
    caller brings the scopes up to date."""
    if isinstance(answer, dict):
        _, problems = parse_settings(answer, ls.state.settings)
        _problems(ls, problems, f" (workspace folder {path_of(folder) or folder})")
        ls.state.scopes.answers[folder] = answer
    else:
        ls.state.scopes.answers.pop(folder, None)


def ask_first(ls: FusionSwitchServer, uri: str) -> bool:
    """Ask about the document's folder if it has not been asked about yet, and say so: its
    checks wait for the answer (`Scopes.waiting`; checked with the window's settings, folder
    B showed folder A's target), which checks them."""
    state = ls.state
    folder = state.scopes.folder_of(uri) if state.client.configuration else None
    if folder is None or folder in state.scopes.asked:
        return False
    done = asyncio.get_running_loop().create_future()
    state.scopes.asked[folder] = done
    state.keep(asyncio.ensure_future(guarded()(_ask_folder)(ls, folder, uri, done, True)))
    return True


async def _ask_folder(
    ls: FusionSwitchServer, folder: str, uri: str, done: asyncio.Future, first: bool
) -> None:
    """One scoped question about `folder` (by the configuration `uri` in it); `done` is set
    once it is answered or given up."""
    try:
        answers = await _ask(ls, [types.ConfigurationItem(section=SECTION, scope_uri=uri)])
        outcome = SettingsOutcome()
        if answers is not None:
            _record(ls, folder, answers[0])
            outcome = ls.state.refresh_scopes()
    finally:
        if not done.done():
            done.set_result(None)  # before the checks below, which wait while it is not
    # the first time: the folder's checks were held back meanwhile
    _after(ls, outcome, folder if first else None)


async def folder_settings(ls: FusionSwitchServer, uri: str, *, refresh: bool = False) -> Settings:
    """The settings of the document's workspace folder: asked of the client (an item scoped to
    `uri`) the first time, or again with `refresh` (a command reads them as they are now);
    the window's for a document in no folder or a client that does not answer scoped items."""
    state = ls.state
    folder = state.scopes.folder_of(uri) if state.client.configuration else None
    if folder is None:
        return state.settings_for(uri)
    asked = state.scopes.asked.get(folder)
    if asked is not None and not asked.done():
        await asyncio.shield(asked)
        if not refresh:
            return state.settings_for(uri)
    if asked is None or refresh:
        done = asyncio.get_running_loop().create_future()
        state.scopes.asked[folder] = done
        await _ask_folder(ls, folder, uri, done, asked is None)
    return state.settings_for(uri)


async def pull(ls: FusionSwitchServer, *, window: bool = True) -> None:
    """Ask the client for section `fusionSwitch` (only if it declared workspace/configuration):
    the window's settings (unless `window` is False) and, in the same request, each workspace
    folder's asked before (scoped to one of its open configurations)."""
    state = ls.state
    if not state.client.configuration:
        return
    scoped: dict[str, str] = {}  # folder → a configuration in it
    for doc in state.documents:
        folder = state.scopes.folder_of(doc.uri)
        if folder is not None and folder in state.scopes.asked:
            scoped.setdefault(folder, doc.uri)
    items = [types.ConfigurationItem(section=SECTION)] if window else []
    items += [types.ConfigurationItem(section=SECTION, scope_uri=uri) for uri in scoped.values()]
    answers = await _ask(ls, items) if items else None
    if answers is None:
        return
    if window:
        answer = answers.pop(0)
        if isinstance(answer, dict):
            settings, problems = parse_settings(answer, state.settings)
            _problems(ls, problems)
            state.settings = settings  # adopted below, with the folders' answers
    for folder, answer in zip(scoped, answers, strict=True):
        _record(ls, folder, answer)
    _after(ls, state.refresh_scopes())


def register(server: FusionSwitchServer) -> None:
    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    @guarded()
    async def did_change_configuration(
        ls: FusionSwitchServer, params: types.DidChangeConfigurationParams
    ) -> None:
        """A payload with our settings is the window's; either way the folders are asked
        again (their values may have changed too)."""
        if carries_settings(params.settings):
            apply(ls, params.settings)
            await pull(ls, window=False)
        else:
            await pull(ls)
