"""The user's CANN install over the protocol: a CANN folder in fusionSwitch.catalogue.extraFiles
makes the rules of its fusion_config.json known, and hover names their source."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from e2e_support import Session
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")

REAL = Path(__file__).resolve().parents[1] / "data" / "real"
STUB = REAL / "cann_config" / "CANN_910b_stub-fusion_config.json"
CANN_ONLY = "MoeDistributeDispatchV2FusionPass"
TEXT = json.dumps({"Switch": {"GraphFusion": {CANN_ONLY: "off"}}}, indent=2) + "\n"


async def test_cann_install_in_settings_makes_its_rules_known(session: Session, tmp_path) -> None:
    folder = tmp_path / "cann" / "opp" / "built-in" / "fusion_pass" / "config"
    folder.mkdir(parents=True)
    shutil.copyfile(STUB, folder / "fusion_config.json")
    (tmp_path / "cann" / "version.cfg").write_text("Version=8.1.RC1\n")
    uri = session.open("cann_rules/fusion_switch.cfg", TEXT)
    assert "unknown-rule" in [d.code for d in await session.diagnostics(uri)]

    mark = session.mark(uri)
    session.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"fusionSwitch": {"catalogue": {"extraFiles": [str(tmp_path / "cann")]}}}
        )
    )
    assert "unknown-rule" not in [d.code for d in await session.next_diagnostics(uri, mark)]
    hover = await session.client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(3, 10))
    )
    assert hover is not None
    text = hover.contents.value if hasattr(hover.contents, "value") else str(hover.contents)
    assert "CANN 8.1.RC1" in text and str(folder / "fusion_config.json") in text

    mark = session.mark(uri)
    no_cann = {"fusionSwitch": {"catalogue": {"extraFiles": []}}}
    session.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings=no_cann)
    )
    assert "unknown-rule" in [d.code for d in await session.next_diagnostics(uri, mark)]
