"""Multi-root workspaces: each workspace folder's configuration is checked, fixed and compared
with that folder's settings (`workspace/configuration` with the configuration's URI as
`scopeUri`), not with one set of settings for the whole window. A review found folder B
checked with folder A's target (and a quick fix deleting B's UBFusion section), compare on B
run with A's paths and its results saved onto B, and B's relative extra catalogue read from A.
Driven over stdio with pytest-lsp, as VS Code answers: the folder's values for a scoped item.
Clients that ignore the scope (Helix, Neovim) or do not pull settings keep working."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

UB = """{
  "Switch": {
    "GraphFusion": {
      "ALL": "on"
    },
    "UBFusion": {
      "ALL": "on"
    }
  }
}
"""
CUSTOM = """{
  "Switch": {
    "GraphFusion": {
      "MyTeamBCustomFusionPass": "off"
    }
  }
}
"""
UB_CODE = "ub-unsupported-on-target"
TIMEOUT = 20.0


class Folders:
    """Two workspace folders A and B, each with a fusion_switch.cfg."""

    def __init__(self, root: Path, text: str) -> None:
        self.a, self.b = root / "projA", root / "projB"
        for folder in (self.a, self.b):
            folder.mkdir(parents=True)
            (folder / "fusion_switch.cfg").write_text(text)

    def cfg(self, folder: Path) -> str:
        return (folder / "fusion_switch.cfg").as_uri()


async def _start(folders: Folders, *, caps: str = "visual-studio-code", init=None):
    config = ClientServerConfig(server_command=[sys.executable, "-m", "fusion_switch", "serve"])
    client = await config.start()
    asked: list[list[tuple[str | None, str | None]]] = []
    features = client.protocol.fm.features
    answer = features[types.WORKSPACE_CONFIGURATION]

    def recording(params: types.ConfigurationParams):
        asked.append([(item.section, item.scope_uri) for item in params.items])
        return answer(params)

    features[types.WORKSPACE_CONFIGURATION] = recording
    published: dict[str, list[types.PublishDiagnosticsParams]] = {}
    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = lambda p: published.setdefault(
        p.uri, []
    ).append(p)
    client.asked, client.published = asked, published
    await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities(caps),
            root_uri=folders.a.as_uri(),
            workspace_folders=[
                types.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in (folders.a, folders.b)
            ],
            initialization_options=init,
        )
    )
    return client


def _open(client: LanguageClient, uri: str, text: str, version: int = 1) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="fusion-switch", version=version, text=text
            )
        )
    )


async def _latest(client: LanguageClient, uri: str, after: int = 0) -> list[types.Diagnostic]:
    """The diagnostics of the first publication for `uri` past index `after`."""
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while len(client.published.get(uri, [])) <= after:
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"no diagnostics for {uri}")
        await asyncio.sleep(0.01)
    return list(client.published[uri][after].diagnostics)


async def _settle(client: LanguageClient) -> None:
    """A request round trip, then a moment for publications sent after it."""
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="fusionSwitch.cancelCompare")
    )
    await asyncio.sleep(0.3)


def _codes(diagnostics) -> list[str]:
    return sorted(str(d.code) for d in diagnostics)


def _notify(client: LanguageClient, settings) -> None:
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=settings))


async def _execute(client: LanguageClient, command: str, argument: dict):
    return await asyncio.wait_for(
        client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=command, arguments=[argument])
        ),
        120,
    )


async def test_each_folder_is_checked_with_its_own_target(tmp_path: Path) -> None:
    folders = Folders(tmp_path, UB)
    client = await _start(folders, init={"fusionSwitch": {"target": "Ascend910B"}})
    try:
        client.set_configuration(
            {"target": "Atlas 350"}, section="fusionSwitch", scope_uri=folders.a.as_uri()
        )
        client.set_configuration(
            {"target": "Ascend910B"}, section="fusionSwitch", scope_uri=folders.b.as_uri()
        )
        ua, ub = folders.cfg(folders.a), folders.cfg(folders.b)
        _open(client, ua, UB)
        _open(client, ub, UB)
        assert UB_CODE in _codes(await _latest(client, ua))
        assert UB_CODE not in _codes(await _latest(client, ub))
        # each document was asked about by its own URI
        scopes = {scope for items in client.asked for section, scope in items}
        assert {ua, ub} <= scopes, client.asked

        # what the extension used to do when A's editor became active: push A's settings for
        # the whole window; B keeps its folder's target
        _notify(client, {"fusionSwitch": {"target": "Atlas 350"}})
        await _settle(client)
        assert UB_CODE not in _codes(client.published[ub][-1].diagnostics)
        assert UB_CODE in _codes(client.published[ua][-1].diagnostics)

        pulled = await client.text_document_diagnostic_async(
            types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(ub))
        )
        assert UB_CODE not in _codes(pulled.items)
        whole = types.Range(types.Position(0, 0), types.Position(10, 0))
        actions = await client.text_document_code_action_async(
            types.CodeActionParams(
                types.TextDocumentIdentifier(ub),
                whole,
                types.CodeActionContext(diagnostics=list(client.published[ub][-1].diagnostics)),
            )
        )
        assert not any("UBFusion" in a.title for a in actions or []), actions

        # a change of B's folder value, announced without a payload: B is checked again
        client.set_configuration(
            {"target": "Atlas 350"}, section="fusionSwitch", scope_uri=folders.b.as_uri()
        )
        mark = len(client.published[ub])
        _notify(client, None)
        assert UB_CODE in _codes(await _latest(client, ub, mark))
    finally:
        await client.shutdown_session()


async def test_relative_extra_files_are_read_from_their_folder(tmp_path: Path) -> None:
    folders = Folders(tmp_path, CUSTOM)
    (folders.b / "cann").mkdir()
    extra = {"catalogue": "teamB", "rules": [{"name": "MyTeamBCustomFusionPass"}]}
    extra["rules"][0].update(section="GraphFusion", description="custom")
    (folders.b / "cann" / "extra.json").write_text(json.dumps(extra))
    client = await _start(folders)
    try:
        client.set_configuration({}, section="fusionSwitch", scope_uri=folders.a.as_uri())
        client.set_configuration(
            {"catalogue": {"extraFiles": ["cann/extra.json"]}},
            section="fusionSwitch",
            scope_uri=folders.b.as_uri(),
        )
        ua, ub = folders.cfg(folders.a), folders.cfg(folders.b)
        _open(client, ub, CUSTOM)
        _open(client, ua, CUSTOM)
        assert "unknown-rule" not in _codes(await _latest(client, ub))
        assert "unknown-rule" in _codes(await _latest(client, ua))
        shown = [m.message for m in client.log_messages + client.messages]
        assert not any("was not loaded" in m for m in shown), shown
    finally:
        await client.shutdown_session()


async def test_compare_takes_the_folder_of_the_configuration(tmp_path: Path) -> None:
    folders = Folders(tmp_path, CUSTOM)
    a_paths = {
        "onDump": str(tmp_path / "a_on"),
        "offDump": str(tmp_path / "a_off"),
        "onGraph": str(tmp_path / "a_on.json"),
        "offGraph": str(tmp_path / "a_off.json"),
    }
    empty = dict.fromkeys(a_paths, "")
    # the window's (unscoped) values are A's: what the extension pushed with A active
    client = await _start(folders, init={"fusionSwitch": {"compare": a_paths}})
    try:
        client.set_configuration(
            {"compare": a_paths}, section="fusionSwitch", scope_uri=folders.a.as_uri()
        )
        client.set_configuration(
            {"compare": empty}, section="fusionSwitch", scope_uri=folders.b.as_uri()
        )
        ub = folders.cfg(folders.b)
        _open(client, ub, CUSTOM)
        await _latest(client, ub)
        result = await _execute(client, "fusionSwitch.compare", {"cfgUri": ub})
        assert "needs onDump, offDump, onGraph, offGraph" in result["error"], result
        assert str(folders.b) in result["error"]

        # set at the time of the command, with no notification: read then
        b_paths = {k: v.replace("a_", "b_") for k, v in a_paths.items()}
        client.set_configuration(
            {"compare": b_paths}, section="fusionSwitch", scope_uri=folders.b.as_uri()
        )
        result = await _execute(client, "fusionSwitch.compare", {"cfgUri": ub})
        assert str(tmp_path / "b_on") in result["error"], result
        assert "a_on" not in result["error"]
    finally:
        await client.shutdown_session()


@pytest.mark.parametrize("caps", ["neovim@v0.7.0", "emacs"])
async def test_clients_without_scoped_answers_keep_the_window_settings(
    tmp_path: Path, caps: str
) -> None:
    """Neovim 0.7 does not pull; Helix, Neovim and eglot answer a scoped item from their one
    set of settings (or with null, where the section is not set): those are in force."""
    folders = Folders(tmp_path, UB)
    client = await _start(folders, caps=caps, init={"fusionSwitch": {"target": "Atlas 350"}})
    try:
        ua, ub = folders.cfg(folders.a), folders.cfg(folders.b)
        _open(client, ub, UB)
        assert UB_CODE in _codes(await _latest(client, ub))
        mark = len(client.published[ub])
        _notify(client, {"fusionSwitch": {"target": ""}})
        assert UB_CODE not in _codes(await _latest(client, ub, mark))
        if caps == "emacs":  # pulls: an unscoped answer for every scope
            client.set_configuration({"target": "Ascend950PR_9599"}, section="fusionSwitch")
            mark = len(client.published[ub])
            _notify(client, None)
            assert UB_CODE in _codes(await _latest(client, ub, mark))
            _open(client, ua, UB)
            assert UB_CODE in _codes(await _latest(client, ua))
    finally:
        await client.shutdown_session()
