"""Restore after the recipe's end (a review of the editor): 'All Off', then 'Turn Suspected
Rules Off', which switches the rules off in the user's configuration from before all off. Its
version holds the all-off file, so Restore brought back the all-off text, and the user's own
configuration was out of reach from the palette, Neovim, Emacs and Helix, which pass no version.
Now Restore's default after such an apply is the user's configuration from before 'all off'
(it says which version), and `list: true` returns the versions for a client to choose from."""

from __future__ import annotations

import pytest
from recipe_stdio import execute, fs, open_path, proven_cfg, recipe_fixtures

pytestmark = pytest.mark.asyncio(loop_scope="module")
recipe_client, session = recipe_fixtures()
USER = (
    '{\n  "Switch": {\n    "GraphFusion": {\n      "AvgPoolFusionPass": "off"\n    },\n'
    '    "UBFusion": {\n      "ALL": "on"\n    }\n  }\n}\n'
)
RULE = "ConvBatchnormFusionPass"


async def _recipe(session, tmp_path):
    """All off, saved; results proving RULE; its suspects applied, saved: (path, uri)."""
    path = proven_cfg(tmp_path, USER, RULE)
    uri = open_path(session, path)
    assert (await execute(session, "fusionSwitch.allOff", cfgUri=uri))["applied"] is True
    path.write_bytes(session.texts[uri].encode())
    applied = await execute(session, "fusionSwitch.applySuspects", cfgUri=uri)
    assert applied["restoredFromAllOff"] is True, applied
    path.write_bytes(session.texts[uri].encode())
    return path, uri


async def test_restore_after_the_recipe_s_end_brings_back_the_user_s_own(session, tmp_path):
    _, uri = await _recipe(session, tmp_path)
    result = await execute(session, "fusionSwitch.restore", cfgUri=uri)
    assert result["applied"] is True and result["version"] == 1, result
    assert session.texts[uri] == USER
    said = session.client.messages[-1].message
    assert "version 1" in said and "all off" in said, said
    again = await execute(session, "fusionSwitch.restore", cfgUri=uri)
    assert "nothing to restore" in again["error"] and session.texts[uri] == USER
    session.close(uri)


async def test_the_versions_are_listed_for_a_client_to_choose(session, tmp_path):
    _, uri = await _recipe(session, tmp_path)
    listed = await execute(session, "fusionSwitch.restore", cfgUri=uri, list=True)
    versions = listed["versions"]
    assert [v["version"] for v in versions] == [2, 1], listed  # newest first
    assert listed["default"] == 1
    assert [v["default"] for v in versions] == [False, True]
    assert versions[1]["label"] == "all fusion off" and "apply suspects" in versions[0]["label"]
    assert all(v["who"] == "editor" and v["when"] for v in versions)
    assert session.texts[uri] != USER  # listing changes nothing
    chosen = await execute(session, "fusionSwitch.restore", cfgUri=uri, version=2)
    assert chosen["applied"] is True and '"ALL": "off"' in session.texts[uri], chosen
    session.close(uri)


async def test_the_terminal_s_restore_agrees(session, tmp_path):
    path, uri = await _recipe(session, tmp_path)
    done = fs("restore", path, "--yes")
    assert done.returncode == 0, done.stderr
    assert path.read_text() == USER
    assert "change 1" in done.stdout and "your own configuration" in done.stdout, done.stdout
    session.close(uri)
