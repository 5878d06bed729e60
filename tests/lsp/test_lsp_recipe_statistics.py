"""fusionSwitch.compare on statistics dumps, in the folder a tensor comparison used before (the
default output folder is reused from run to run). The child writes `stats_summary.json` there
and exits 0 or 1; the editor read the folder's `summary.json`, the *previous* run's, and showed
its verdict and its fusion-suspect warnings as new (a review of the editor). The editor now
takes what the child itself reports, and shows a statistics comparison as what it is: a first
divergence, no rule blamed, and no earlier verdict left standing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fusion_switch.synth.generator import generate_case
from fusion_switch.workflow.results import load_results
from recipe_stdio import case_paths, execute, open_path, recipe_fixtures, write_cfg

pytestmark = pytest.mark.asyncio(loop_scope="module")
recipe_client, session = recipe_fixtures()
STATS = Path(__file__).resolve().parents[1] / "data" / "real" / "stats_dumps" / "msinsight-mnist"
CFG = '{\n  "Switch": {\n    "GraphFusion": {\n      "ALL": "on"\n    }\n  }\n}\n'


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    return generate_case(tmp_path_factory.mktemp("case") / "case", n_ops=40)


def _stats_tree(root, source):
    """One graph and iteration of the real statistics dumps, with their execution order."""
    leaf = root / "rank_0" / "mnist" / "0" / "0"
    leaf.mkdir(parents=True)
    shutil.copyfile(
        source / "rank_0" / "mnist" / "0" / "0" / "statistic.csv", leaf / "statistic.csv"
    )
    shutil.copytree(source / "rank_0" / "execution_order", root / "rank_0" / "execution_order")
    return root


def _graphs(case) -> dict[str, str]:
    return {"onGraph": str(case.on_graph), "offGraph": str(case.off_graph)}


def _suspects(diagnostics) -> list:
    return [d for d in diagnostics if d.code == "fusion-suspect"]


async def test_a_statistics_run_after_a_tensor_run_never_shows_the_old_verdict(
    session, case, tmp_path
):
    path = write_cfg(tmp_path, CFG)
    uri = open_path(session, path)
    first = await execute(
        session,
        "fusionSwitch.compare",
        cfgUri=uri,
        **case_paths(case),
    )
    assert first["suspects"], first  # the tensor run blames the injected rule
    out = path.parent / ".fusion-switch" / "fusion_switch.cfg.compare"
    old_summary = (out / "summary.json").read_bytes()
    mark = session.mark(uri)

    second = await execute(
        session,
        "fusionSwitch.compare",
        cfgUri=uri,
        onDump=str(_stats_tree(tmp_path / "st_on", STATS / "dump_data0")),
        offDump=str(_stats_tree(tmp_path / "st_off", STATS / "dump_data1")),
        **_graphs(case),
    )
    assert (out / "stats_summary.json").is_file()
    assert (out / "summary.json").read_bytes() == old_summary  # the old run's, left alone
    assert "error" not in second, second
    assert second["kind"] == "statistics", second
    assert second["suspects"] == [], second
    assert second["verdict"] != first["verdict"]
    assert "first divergence" in second["verdict"], second
    assert second["firstDivergence"]["op"] == "Default_GeLU-op0", second
    said = session.client.messages[-1].message
    assert "statistics" in said and "tensor" in said, said
    assert first["suspects"][0]["rule"] not in said, said
    assert _suspects(await session.next_diagnostics(uri, mark)) == []  # the old ones are gone
    assert load_results(path) is None  # nor shown again after a restart
    status = session.statuses[-1]
    assert not [f for f in status.get("files") or [] if uri in str(f)], status
    session.close(uri)


async def test_the_summary_the_child_reports_is_read_never_an_older_file(session, case, tmp_path):
    """The output folder holds a summary.json from some earlier run, with a verdict of its
    own: a run that writes its own summary is shown, never the planted one."""
    path = write_cfg(tmp_path, CFG)
    uri = open_path(session, path)
    out = tmp_path / "out"
    _stats_tree(tmp_path / "st_on", STATS / "dump_data0")
    _stats_tree(tmp_path / "st_off", STATS / "dump_data1")
    out.mkdir()
    mark = session.mark(uri)
    planted = {
        "verdict": "proven by replay: PlantedFusionPass",
        "suspects": [
            {"rule": "PlantedFusionPass", "section": "GraphFusion", "verdict": "introduces"}
        ],
    }
    (out / "summary.json").write_text(json.dumps(planted))
    answer = await execute(
        session,
        "fusionSwitch.compare",
        cfgUri=uri,
        output=str(out),
        onDump=str(tmp_path / "st_on"),
        offDump=str(tmp_path / "st_off"),
        **_graphs(case),
    )
    assert "PlantedFusionPass" not in json.dumps(answer), answer
    assert not any("PlantedFusionPass" in m.message for m in session.client.messages)
    assert _suspects(await session.next_diagnostics(uri, mark)) == []
    session.close(uri)
