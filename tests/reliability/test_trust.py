"""`showReport` opens only a report this server's own comparison wrote (issue 12, trust).

The results that name the report sit next to the configuration, where a cloned repository or
another user of a shared folder can plant one naming any file; the server must refuse it
with a message and never ask the editor to open it.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from fusion_switch.synth.generator import generate_case
from fusion_switch.workflow.results import save_results
from pytest_lsp import ClientServerConfig
from workflow_support import (
    compare,
    execute,
    open_path,
    workflow_fixtures,
    write_cfg,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

STATE = Path(tempfile.mkdtemp(prefix="fusion-switch-state-"))  # the user's private record
atexit.register(shutil.rmtree, STATE, True)  # made at import: collected or not, it goes
SERVER = ClientServerConfig(
    server_command=[sys.executable, "-m", "fusion_switch", "serve"],
    server_env={**os.environ, "XDG_STATE_HOME": str(STATE)},
)


workflow_client, session = workflow_fixtures(SERVER)


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    return generate_case(tmp_path_factory.mktemp("trust") / "case", n_ops=40)


def plant(folder: Path, report: Path) -> Path:
    """A configuration whose stored results name `report` (as a planted file would)."""
    cfg = write_cfg(folder)
    save_results(cfg, {"verdict": "clean", "suspects": [], "report": str(report)})
    return cfg


async def test_our_own_report_opens(session, case, tmp_path):
    uri = open_path(session, write_cfg(tmp_path / "ours"))
    summary = await compare(session, uri, case, tmp_path / "out")
    assert "error" not in summary, summary
    before = len(session.client.shown_documents)
    result = await execute(session, "fusionSwitch.showReport", cfgUri=uri)
    assert result == {"shown": True, "report": str(tmp_path / "out" / "report.html")}
    assert len(session.client.shown_documents) == before + 1
    # changed after our run (another user rewrote it in a shared folder): refused
    report = tmp_path / "out" / "report.html"
    report.write_text(report.read_text() + "<script>alert(1)</script>")
    result = await execute(session, "fusionSwitch.showReport", cfgUri=uri)
    assert "not opening" in result["error"]
    assert len(session.client.shown_documents) == before + 1


@pytest.mark.parametrize("kind", ["html", "symlink-to-ours", "executable"])
async def test_a_planted_report_is_refused(session, case, tmp_path, kind):
    if kind == "symlink-to-ours":
        uri = open_path(session, write_cfg(tmp_path / "ours"))
        await compare(session, uri, case, tmp_path / "out")
        planted = tmp_path / "link.html"
        planted.symlink_to(tmp_path / "out" / "report.html")
    else:
        planted = tmp_path / ("evil.html" if kind == "html" else "evil.desktop")
        planted.write_text("<script>alert(1)</script>" if kind == "html" else "[Desktop Entry]")
        planted.chmod(0o755)
    uri = open_path(session, plant(tmp_path / "repo", planted))
    before = len(session.client.shown_documents)
    result = await execute(session, "fusionSwitch.showReport", cfgUri=uri)
    assert f"not opening {planted}" in result["error"]
    assert len(session.client.shown_documents) == before
    assert any(f"not opening {planted}" in m.message for m in session.client.messages[-3:])
