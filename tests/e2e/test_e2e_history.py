"""One edit history for the editor and the terminal: a change made by `fusion-switch` is
restored by fusionSwitch.restore and the reverse, byte for byte; `apply` in a terminal ends the
recipe the editor started."""

from __future__ import annotations

import json

import pytest
from e2e_support import SERVER
from fusion_switch.workflow.history import History
from workflow_support import (
    USER_CFG,
    execute,
    fs,
    open_path,
    workflow_fixtures,
    write_cfg,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")
# the user's own layout: CRLF, odd spacing, that all-off and restore must not normalise
ORIGINAL = USER_CFG.replace('"on"', '"on"  ').replace("\n", "\r\n")
RULE = "AAMatMulNzToNdFusionPass"


workflow_client, session = workflow_fixtures(SERVER, ("visual-studio-code", "neovim@v0.7.0"))


async def test_terminal_all_off_is_restored_by_the_editor(session, tmp_path):
    path = write_cfg(tmp_path, ORIGINAL)
    assert fs("off", path, "--all").returncode == 0
    uri = open_path(session, path)  # the editor opens the all-off file
    result = await execute(session, "fusionSwitch.restore", cfgUri=uri)
    assert result["applied"] is True, result
    assert session.texts[uri].encode() == ORIGINAL.encode()
    history = History(path)
    assert [(v.who, v.kind) for v in history.versions()] == [("cli", "all-off")]  # not saved
    path.write_bytes(session.texts[uri].encode())  # the editor saves
    assert [(v.who, v.kind) for v in history.versions()] == [
        ("cli", "all-off"),
        ("editor", "restore"),
    ]
    session.close(uri)


async def test_editor_all_off_is_restored_by_the_terminal(session, tmp_path):
    path = write_cfg(tmp_path, ORIGINAL)
    uri = open_path(session, path)
    assert (await execute(session, "fusionSwitch.allOff", cfgUri=uri))["applied"] is True
    path.write_bytes(session.texts[uri].encode())  # the editor saves
    listing = fs("restore", path, "--list")
    assert "editor" in listing.stdout and "all fusion off" in listing.stdout
    done = fs("restore", path, "--yes")
    assert done.returncode == 0, done.stderr
    assert path.read_bytes() == ORIGINAL.encode()
    session.close(uri)


async def test_editor_all_off_then_terminal_apply_ends_the_recipe(session, tmp_path):
    path = write_cfg(tmp_path, ORIGINAL)
    uri = open_path(session, path)
    await execute(session, "fusionSwitch.allOff", cfgUri=uri)
    path.write_bytes(session.texts[uri].encode())
    results = tmp_path / "out"
    results.mkdir()
    (results / "summary.json").write_text(
        json.dumps({"rules": [{"rule": RULE, "section": "GraphFusion", "verdict": "introduces"}]})
    )
    done = fs("apply", results, path, "--yes")
    assert done.returncode == 0, done.stderr
    switch = json.loads(path.read_bytes())["Switch"]
    assert switch["GraphFusion"][RULE] == "off"
    assert switch["UBFusion"] == {"ALL": "on"}  # the user's configuration, not the all-off one
    # and the editor's restore goes back to the user's own configuration, from before all off
    # (the apply's version, the all-off file, is there to choose)
    session.close(uri)
    uri = open_path(session, path)
    result = await execute(session, "fusionSwitch.restore", cfgUri=uri)
    assert result["applied"] is True and result["version"] == 1, result
    assert session.texts[uri].encode() == ORIGINAL.encode()
    result = await execute(session, "fusionSwitch.restore", cfgUri=uri, version=2)
    all_off = json.loads(session.texts[uri])["Switch"]
    assert all_off == {"GraphFusion": {"ALL": "off"}, "UBFusion": {"ALL": "off"}}
    session.close(uri)


async def test_editor_refuses_a_planted_version(session, tmp_path):
    path = write_cfg(tmp_path, ORIGINAL)
    assert fs("off", path, "--all").returncode == 0
    history = History(path)
    (history.folder / "v0001.before").write_text('{"Switch": {"GraphFusion": {"X": "on"}}}')
    uri = open_path(session, path)
    before = session.texts[uri]
    result = await execute(session, "fusionSwitch.restore", cfgUri=uri)
    assert "does not match the digest" in result["error"]
    assert session.texts[uri] == before
    session.close(uri)


# A file saved with a byte-order mark: VS Code and Neovim hold its text without the mark and
# save it back with it; the terminal commands keep it. Both record the file's bytes.
BOM = b"\xef\xbb\xbf"


def _bom_cfg(tmp_path):
    path = write_cfg(tmp_path, ORIGINAL)
    path.write_bytes(BOM + path.read_bytes())
    return path


def _open_without_bom(session, path) -> str:
    # as an editor holds it: the mark is the file's, not the text's
    return open_path(session, path, path.read_bytes().removeprefix(BOM).decode("utf-8"))


async def test_a_bom_file_set_all_off_by_the_editor_comes_back_byte_for_byte_in_the_terminal(
    session, tmp_path
):
    path = _bom_cfg(tmp_path)
    original = path.read_bytes()
    uri = _open_without_bom(session, path)
    assert (await execute(session, "fusionSwitch.allOff", cfgUri=uri))["applied"] is True
    path.write_bytes(BOM + session.texts[uri].encode())  # the editor saves, mark kept
    done = fs("restore", path, "--yes")
    assert done.returncode == 0, done.stderr
    assert path.read_bytes() == original  # the mark too (it was dropped from the version)
    session.close(uri)


async def test_a_bom_file_set_all_off_in_the_terminal_ends_on_the_users_own_configuration(
    session, tmp_path
):
    from fusion_switch.workflow.results import save_results

    path = _bom_cfg(tmp_path)
    assert fs("off", path, "--all").returncode == 0
    suspect = {"rule": RULE, "section": "GraphFusion", "verdict": "introduces", "ops": ["x"]}
    save_results(path, {"verdict": f"proven by replay: {RULE}", "suspects": [suspect]})
    uri = _open_without_bom(session, path)
    result = await execute(session, "fusionSwitch.applySuspects", cfgUri=uri)
    assert result.get("restoredFromAllOff") is True, result
    switch = json.loads(session.texts[uri])["Switch"]
    assert switch["GraphFusion"][RULE] == "off"
    assert switch["UBFusion"] == {"ALL": "on"}  # not left beside "ALL": "off"
    session.close(uri)
