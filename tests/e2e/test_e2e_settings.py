"""Settings over the protocol: target and catalogue changes re-validate open documents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from e2e_support import Session
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")

UB = """{
  "Switch": {
    "GraphFusion": {"ALL": "off"},
    "UBFusion": {"TbeConvDequantSigmoidMulAddFusionPass": "off"}
  }
}
"""
UB_CODE = "ub-unsupported-on-target"


def notify(session: Session, settings) -> None:
    session.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings=settings)
    )


def codes(diagnostics) -> list[str]:
    return sorted(d.code for d in diagnostics)


async def test_target_change_revalidates_open_documents(session: Session) -> None:
    first = session.open("settings_target/a/fusion_switch.cfg", UB)
    second = session.open("settings_target/b/fusion_switch.cfg", UB)
    assert UB_CODE not in codes(await session.diagnostics(first))
    await session.diagnostics(second)

    marks = {uri: session.mark(uri) for uri in (first, second)}
    notify(session, {"fusionSwitch": {"target": "Atlas 350"}})
    for uri in (first, second):
        found = await session.next_diagnostics(uri, marks[uri])
        assert codes(found).count(UB_CODE) == 2  # the UBFusion key and its entry

    mark = session.mark(first)
    notify(session, {"fusionSwitch": {"target": ""}})
    assert UB_CODE not in codes(await session.next_diagnostics(first, mark))


async def test_soc_version_target_from_flat_dotted_settings(session: Session) -> None:
    uri = session.open("settings_soc/fusion_switch.cfg", UB)
    await session.diagnostics(uri)
    mark = session.mark(uri)
    notify(session, {"fusionSwitch.target": "Ascend950PR_9599"})
    assert UB_CODE in codes(await session.next_diagnostics(uri, mark))
    mark = session.mark(uri)
    notify(session, {"fusionSwitch.target": ""})
    assert UB_CODE not in codes(await session.next_diagnostics(uri, mark))


async def test_settings_pulled_when_notification_is_empty(session: Session) -> None:
    uri = session.open("settings_pull/fusion_switch.cfg", UB)
    await session.diagnostics(uri)
    session.client.set_configuration({"target": "Atlas 350"}, section="fusionSwitch")
    try:
        mark = session.mark(uri)
        notify(session, None)
        if session.result is not None and session.client.capabilities.workspace.configuration:
            assert UB_CODE in codes(await session.next_diagnostics(uri, mark))
            mark = session.mark(uri)
            session.client.set_configuration({"target": ""}, section="fusionSwitch")
            notify(session, None)
            assert UB_CODE not in codes(await session.next_diagnostics(uri, mark))
        else:
            # No workspace/configuration (Neovim 0.7): the server must not ask; settings stay.
            follow_up = session.open("settings_pull/b/fusion_switch.cfg", UB)
            assert UB_CODE not in codes(await session.diagnostics(follow_up))
    finally:
        session.client.set_configuration({}, section="fusionSwitch")


async def test_unknown_target_warns_with_known_names(session: Session) -> None:
    before = len(session.client.messages)
    uri = session.open("settings_unknown/fusion_switch.cfg", UB)
    await session.diagnostics(uri)
    notify(session, {"fusionSwitch": {"target": "Atlas 9000"}})
    await session.barrier()
    notify(session, {"fusionSwitch": {"target": ""}})
    shown = [m for m in session.client.messages[before:] if "Atlas 9000" in m.message]
    assert len(shown) == 1
    assert shown[0].type == types.MessageType.Warning
    assert "Atlas 350" in shown[0].message and "Ascend950PR_9599" in shown[0].message


async def test_extra_catalogue_files(session: Session, tmp_path_factory) -> None:
    folder: Path = tmp_path_factory.mktemp("catalogue")
    good = folder / "extra.json"
    good.write_text(
        json.dumps({"rules": [{"name": "MyCustomFusionPass", "section": "GraphFusion"}]}),
        encoding="utf-8",
    )
    bad = folder / "broken.json"
    bad.write_text('{"rules": [', encoding="utf-8")
    text = '{"Switch": {"GraphFusion": {"MyCustomFusionPass": "off"}}}'
    uri = session.open("settings_extra/fusion_switch.cfg", text)
    assert codes(await session.diagnostics(uri)) == ["unknown-rule"]

    before = len(session.client.messages)
    mark = session.mark(uri)
    notify(session, {"fusionSwitch": {"catalogue": {"extraFiles": [str(bad), str(good)]}}})
    assert codes(await session.next_diagnostics(uri, mark)) == []
    warnings = [m for m in session.client.messages[before:] if str(bad) in m.message]
    assert len(warnings) == 1 and warnings[0].type == types.MessageType.Warning

    # the same bad file again: no second pop-up; reloadCatalogue reports it
    notify(session, {"fusionSwitch": {"catalogue": {"extraFiles": [str(bad), str(good)]}}})
    result = await session.client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="fusionSwitch.reloadCatalogue")
    )
    assert any(str(bad) in e for e in result["errors"])
    assert result["rules"] >= 675

    mark = session.mark(uri)
    notify(session, {"fusionSwitch": {"catalogue": {"extraFiles": []}}})
    assert codes(await session.next_diagnostics(uri, mark)) == ["unknown-rule"]


async def test_relative_extra_catalogue_files_are_read_from_the_workspace_folder(
    session: Session,
) -> None:
    """A review: a relative fusionSwitch.catalogue.extraFiles path was read against the
    server's working directory, which is the workspace folder only when VS Code starts it
    there (not for Neovim started elsewhere, nor other folders of a multi-root workspace)."""
    import shutil

    from e2e_support import ROOT

    folder = ROOT / "settings_relative_extra"
    made_root = not ROOT.exists()  # the sessions' workspace is only named, not made
    folder.mkdir(parents=True, exist_ok=True)
    try:
        (folder / "extra.json").write_text(
            json.dumps({"rules": [{"name": "MyRelativeFusionPass", "section": "GraphFusion"}]}),
            encoding="utf-8",
        )
        uri = session.open(
            "settings_relative_extra/fusion_switch.cfg",
            '{"Switch": {"GraphFusion": {"MyRelativeFusionPass": "off"}}}',
        )
        assert codes(await session.diagnostics(uri)) == ["unknown-rule"]
        mark = session.mark(uri)
        relative = {"extraFiles": ["settings_relative_extra/extra.json"]}
        notify(session, {"fusionSwitch": {"catalogue": relative}})
        assert codes(await session.next_diagnostics(uri, mark)) == []
        mark = session.mark(uri)
        notify(session, {"fusionSwitch": {"catalogue": {"extraFiles": []}}})
        assert codes(await session.next_diagnostics(uri, mark)) == ["unknown-rule"]
    finally:
        shutil.rmtree(ROOT if made_root else folder, ignore_errors=True)
