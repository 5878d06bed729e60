"""A comparison belongs to the configuration it was run for (a review of the editor): comparing
model A's cfg annotated every open cfg of the folder, kept the results beside each of them,
and `applySuspects` on model B's cfg switched A's guilty rule off in B; the status bar showed
A's count on B. Results are now attached, kept and applied for the compared cfg only; the
saved results name it, and any other file is refused with a message that says whose they are."""

from __future__ import annotations

import json
import shutil

import pytest
from fusion_switch.synth.generator import generate_case
from fusion_switch.workflow.results import load_results, save_results
from fusion_switch.workflow.state_dir import state_file
from recipe_stdio import case_paths, execute, open_path, recipe_fixtures, write_cfg

pytestmark = pytest.mark.asyncio(loop_scope="module")
recipe_client, session = recipe_fixtures()
CFG = '{\n  "Switch": {\n    "GraphFusion": {\n      "ALL": "on"\n    }\n  }\n}\n'
RULE = "ConvBatchnormFusionPass"  # generate_case's injected fault


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    return generate_case(tmp_path_factory.mktemp("case") / "case", n_ops=40)


def _files(status: dict) -> dict[str, dict]:
    """The status's per-file counts, by URI."""
    out = {}
    for entry in status.get("files") or []:
        entry = entry if isinstance(entry, dict) else dict(entry._asdict())
        out[entry["uri"]] = {k: v for k, v in entry.items() if k != "uri"}
    return out


def _suspects(diagnostics) -> list:
    return [d for d in diagnostics if d.code == "fusion-suspect"]


async def test_one_cfg_s_comparison_is_never_another_s(session, case, tmp_path):
    a = write_cfg(tmp_path, CFG)
    b = tmp_path / "fusion_switch_b.cfg"  # the same folder: the same workspace folder
    b.write_text(CFG)
    ua, ub = open_path(session, a), open_path(session, b)
    await session.diagnostics(ua)
    await session.diagnostics(ub)
    mark_a, mark_b = session.mark(ua), session.mark(ub)
    answer = await execute(
        session,
        "fusionSwitch.compare",
        cfgUri=ua,
        **case_paths(case),
    )
    assert [s["rule"] for s in answer["suspects"]] == [RULE], answer
    assert _suspects(await session.next_diagnostics(ua, mark_a))
    assert _suspects(await session.next_diagnostics(ub, mark_b)) == []
    assert not state_file(b, "last-compare.json").exists()
    assert load_results(b) is None
    assert load_results(a)["suspects"][0]["rule"] == RULE
    saved = json.loads(state_file(a, "last-compare.json").read_text())
    assert saved["cfg"] == str(a) and saved["cfgUri"] == ua

    refused = await execute(session, "fusionSwitch.applySuspects", cfgUri=ub)
    assert "error" in refused, refused
    assert "fusion_switch.cfg" in refused["error"] and "fusion_switch_b.cfg" in refused["error"]
    assert session.texts[ub] == CFG and b.read_text() == CFG

    files = _files(session.statuses[-1])
    assert files.get(ua) == {"suspects": 1, "proven": 1}, session.statuses[-1]
    assert ub not in files, session.statuses[-1]
    for uri in (ua, ub):
        session.close(uri)


async def test_results_copied_beside_another_cfg_are_not_its_own(session, tmp_path):
    """A folder copied with its `.fusion-switch/` (model A's results) for model C: C's cfg is
    not the cfg they were made for, so they are neither shown nor applied there."""
    a = write_cfg(tmp_path / "modelA", CFG)
    suspect = {"rule": RULE, "section": "GraphFusion", "verdict": "introduces", "ops": ["x"]}
    save_results(a, {"verdict": f"proven by replay: {RULE}", "suspects": [suspect]})
    shutil.copytree(tmp_path / "modelA", tmp_path / "modelC")
    c = tmp_path / "modelC" / "fusion_switch.cfg"
    assert load_results(c) is None
    uc = open_path(session, c)
    assert _suspects(await session.diagnostics(uc)) == []
    refused = await execute(session, "fusionSwitch.applySuspects", cfgUri=uc)
    assert "error" in refused and session.texts[uc] == CFG, refused
    session.close(uc)


async def test_the_status_counts_the_opened_cfg_s_own_results(session, tmp_path):
    a = write_cfg(tmp_path / "modelA", CFG)
    suspect = {"rule": RULE, "section": "GraphFusion", "verdict": "heuristic", "ops": ["x"]}
    save_results(a, {"verdict": f"heuristic: {RULE}", "suspects": [suspect]})
    d = write_cfg(tmp_path / "modelD", CFG)
    known = len(session.statuses)
    ua, ud = open_path(session, a), open_path(session, d)
    await session.diagnostics(ua)
    await session.diagnostics(ud)
    await session.barrier()
    assert len(session.statuses) > known  # sent for the opened cfg with results
    files = _files(session.statuses[-1])
    assert files.get(ua) == {"suspects": 1, "proven": 0}, session.statuses[-1]
    assert ud not in files
    assert "suspects" not in session.statuses[-1]  # no count of no file in particular
    for uri in (ua, ud):
        session.close(uri)
