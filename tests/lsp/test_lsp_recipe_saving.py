"""The recipe's edits (allOff, applySuspects, restore) change the editor's buffer through
`workspace/applyEdit`, which an editor does not save. The server said "All fusion is off …
build and dump the fusion-off model" while the file CANN reads was unchanged, and recorded a
history version for text never saved: the terminal's `restore` then listed the change and
said the file was "already as version 1 had it" (a review of the editor).

Now a change made in the buffer is said to be there and to need saving, unless the file on disk
holds it when the edit is answered (our VS Code extension saves a file that had no unsaved
changes before the command); its version stays pending, unlisted by the terminal, until the
file on disk changes (saved); the editor, which holds the text, sees it at once."""

from __future__ import annotations

import json

import pytest
from fusion_switch.workflow.history import History
from recipe_stdio import execute, fs, open_path, proven_cfg, recipe_fixtures, write_cfg

pytestmark = pytest.mark.asyncio(loop_scope="module")
recipe_client, session = recipe_fixtures()
USER = (
    '{\n  "Switch": {\n    "GraphFusion": {\n      "ConvBatchnormFusionPass": "on"\n    },\n'
    '    "UBFusion": {\n      "ALL": "on"\n    }\n  }\n}\n'
)
RULE = "ConvBatchnormFusionPass"


@pytest.fixture
def saving(session):
    session.save_edits = True
    yield
    session.save_edits = False


def _said(session) -> str:
    return session.client.messages[-1].message


async def test_an_unsaved_all_off_is_said_to_be_in_the_editor_only(session, tmp_path):
    path = write_cfg(tmp_path, USER)
    uri = open_path(session, path)
    result = await execute(session, "fusionSwitch.allOff", cfgUri=uri)
    assert result["applied"] is True and result["saved"] is False, result
    said = _said(session)
    assert "not yet on disk" in said and "save it before you build" in said, said
    assert path.read_text() == USER  # the editor did not save

    # the terminal sees the file as it is: no change was made to it
    listing = fs("restore", path, "--list")
    assert "no history yet" in listing.stdout, listing.stdout
    done = fs("restore", path, "--yes")
    assert done.returncode == 1 and "already as version" not in done.stdout, done
    assert History(path).versions() == []
    # the editor holds the change: its restore brings the user's text back
    assert History(path).latest(holding=session.texts[uri].encode()).kind == "all-off"

    path.write_bytes(session.texts[uri].encode())  # the user saves
    listing = fs("restore", path, "--list")
    assert "all fusion off" in listing.stdout, listing.stdout
    done = fs("restore", path, "--yes")
    assert done.returncode == 0 and path.read_text() == USER, done
    session.close(uri)


async def test_a_saved_edit_is_said_saved_and_listed_at_once(session, saving, tmp_path):
    path = proven_cfg(tmp_path, USER, RULE)
    uri = open_path(session, path)
    result = await execute(session, "fusionSwitch.allOff", cfgUri=uri)
    assert result["saved"] is True, result
    said = _said(session)
    assert "(saved)" in said and "not yet on disk" not in said, said
    assert json.loads(path.read_text())["Switch"]["GraphFusion"] == {"ALL": "off"}
    index = json.loads((History(path).index_path).read_text())
    assert [v.get("pending", False) for v in index["versions"]] == [False]

    applied = await execute(session, "fusionSwitch.applySuspects", cfgUri=uri)
    assert applied["saved"] is True and applied["restoredFromAllOff"] is True, applied
    assert "Saved" in _said(session), _said(session)
    assert json.loads(path.read_text())["Switch"]["GraphFusion"][RULE] == "off"
    session.close(uri)


async def test_an_unsaved_apply_suspects_and_restore_say_so(session, tmp_path):
    path = proven_cfg(tmp_path, USER, RULE)
    uri = open_path(session, path)
    applied = await execute(session, "fusionSwitch.applySuspects", cfgUri=uri)
    assert applied["saved"] is False, applied
    assert "save fusion_switch.cfg before you build" in _said(session), _said(session)
    restored = await execute(session, "fusionSwitch.restore", cfgUri=uri)
    assert restored["applied"] is True, restored
    assert session.texts[uri] == USER
    session.close(uri)
