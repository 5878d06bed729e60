"""The recipe's edits use the catalogue of the configuration's workspace folder: All Off names
the rules CANN's own configuration keeps on from that folder's extra catalogue, and Apply
Suspects rewrites a line-format file as JSON for a rule that folder's catalogue says GE reads.
A review of the merged editor found both reading the window's catalogue (the folder's extra
rules unknown there: a kept-on rule left unsaid, a `Name:off` line GE never reads)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from fusion_switch.workflow.results import save_results
from lsprotocol import types
from pytest_lsp import ClientServerConfig, client_capabilities
from recipe_stdio import Editor, Session, execute, open_path  # tests/e2e's helpers

KEPT_ON = "MyTeamBKeptOnFusionPass"  # CANN's own configuration switches it on by name
GE_PASS = "MyTeamBGeFusionPass"  # registered with GE: read from a JSON file only
USER = '{\n  "Switch": {\n    "GraphFusion": {\n      "ALL": "on"\n    }\n  }\n}\n'
LINES = "AAMatMulNzToNdFusionPass:off\nALL:on\n"


def _extra_catalogue(folder: Path) -> None:
    rules = [
        {"name": KEPT_ON, "section": "GraphFusion", "description": "team B", "default": "on"},
        {
            "name": GE_PASS,
            "section": "GraphFusion",
            "description": "team B",
            "registration": "REG_FUSION_PASS",
        },
    ]
    (folder / "extra.json").write_text(json.dumps({"catalogue": "teamB", "rules": rules}))


async def _session(root: Path, a: Path, b: Path) -> Session:
    config = ClientServerConfig(server_command=[sys.executable, "-m", "fusion_switch", "serve"])
    client = await config.start()
    client.set_configuration({}, section="fusionSwitch", scope_uri=a.as_uri())
    client.set_configuration(
        {"catalogue": {"extraFiles": ["extra.json"]}}, section="fusionSwitch", scope_uri=b.as_uri()
    )
    result = await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in (a, b)],
        )
    )
    session = Session(client, "visual-studio-code", result)
    session.editor = Editor(session)
    return session


async def _opened(session: Session, path: Path) -> str:
    uri = open_path(session, path)
    # checked once its folder answered: the folder's catalogue is in force from then on
    await asyncio.wait_for(session.published.wait(uri), 30)
    return uri


async def test_all_off_and_apply_suspects_use_the_folder_s_catalogue(tmp_path: Path) -> None:
    a, b = tmp_path / "projA", tmp_path / "projB"
    a.mkdir()
    b.mkdir()
    _extra_catalogue(b)
    for folder in (a, b):
        (folder / "fusion_switch.cfg").write_text(USER)
    line_cfg = b / "lines" / "fusion_switch.cfg"
    line_cfg.parent.mkdir()
    line_cfg.write_text(LINES)
    suspect = {"rule": GE_PASS, "section": "GraphFusion", "verdict": "introduces", "ops": ["x"]}
    save_results(line_cfg, {"verdict": f"proven by replay: {GE_PASS}", "suspects": [suspect]})
    session = await _session(tmp_path, a, b)
    try:
        ub = await _opened(session, b / "fusion_switch.cfg")
        result = await execute(session, "fusionSwitch.allOff", cfgUri=ub)
        assert result["applied"] is True, result
        assert f"GraphFusion:{KEPT_ON}" in result["keptOnByCann"], result
        ua = await _opened(session, a / "fusion_switch.cfg")
        result = await execute(session, "fusionSwitch.allOff", cfgUri=ua)
        assert f"GraphFusion:{KEPT_ON}" not in result["keptOnByCann"], result

        uri = await _opened(session, line_cfg)
        result = await execute(session, "fusionSwitch.applySuspects", cfgUri=uri)
        assert result["applied"] is True, result
        switch = json.loads(session.texts[uri])["Switch"]  # rewritten as JSON for GE
        assert switch["GraphFusion"][GE_PASS] == "off", session.texts[uri]
        assert switch["GraphFusion"]["AAMatMulNzToNdFusionPass"] == "off"
    finally:
        await session.client.shutdown_session()
