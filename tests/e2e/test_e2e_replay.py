"""Replay verdicts in the editor (issue 11), over the protocol: a `fusion-suspect` warning only
for the rule the replay proves, the innocent pass of the same fused op left alone, an
unverifiable rule as information with its reason, hover proof, and `applySuspects` turning off
only proven rules unless `includeUnverified` is given.

The case: the Relu tail of a fused Conv+BatchNorm+Relu is dropped by its UB pass (the graph
pass that folded the BatchNorm, ConvBatchnormFusionPass, is innocent; the row heuristic named
both), and the GLU gate of an earlier block is inverted inside a custom op no kernel covers.
"""

from __future__ import annotations

import json

import pytest
from e2e_support import SERVER
from fusion_switch import cfg
from fusion_switch.synth.generator import generate_case
from lsprotocol import types
from workflow_support import (
    USER_CFG,
    by_code,
    compare,
    execute,
    open_path,
    text_at,
    workflow_fixtures,
    write_cfg,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")
PROVEN = ("UBFusion", "TbeCommonRules0FusionPass")
INNOCENT = "ConvBatchnormFusionPass"
UNVERIFIED = ("UBFusion", "TbeEltwiseFusionPass")


workflow_client, session = workflow_fixtures(SERVER)


@pytest.fixture(scope="module")
def replay_case(tmp_path_factory):
    return generate_case(
        tmp_path_factory.mktemp("replay") / "case",
        n_ops=70,
        faults=["inverted_gate@0", "dropped_relu@1"],
        custom_ops=True,
        graph_text=False,
    )


async def test_only_proven_rules_are_suspects_and_unverified_ones_are_information(
    session, replay_case, tmp_path
):
    path = write_cfg(tmp_path)
    uri = open_path(session, path)
    await session.diagnostics(uri)
    mark = session.mark(uri)
    summary = await compare(session, uri, replay_case, tmp_path / "out")
    assert "error" not in summary, summary
    assert [s["rule"] for s in summary["suspects"]] == [PROVEN[1]]

    diagnostics = await session.next_diagnostics(uri, mark)
    suspects = by_code(diagnostics, "fusion-suspect")
    assert [d.message.split(" ")[0] for d in suspects] == [PROVEN[1]]
    assert suspects[0].severity == types.DiagnosticSeverity.Warning
    assert not [d for d in diagnostics if INNOCENT in d.message and d.code == "fusion-suspect"]
    [info] = by_code(diagnostics, "fusion-unverified")
    assert info.severity == types.DiagnosticSeverity.Information
    assert info.message.startswith(f"{UNVERIFIED[1]} (UBFusion)")
    assert "the replay could not verify" in info.message and "heuristic" in info.message

    hover = await session.client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), suspects[0].range.start)
    )
    assert hover is not None

    lenses = await session.client.text_document_code_lens_async(
        types.CodeLensParams(types.TextDocumentIdentifier(uri))
    )
    titles = [lens.command.title for lens in lenses]
    assert f"heuristic (not proven) · Turn {UNVERIFIED[1]} off anyway" in titles

    # by default only the proven rule is switched off
    result = await execute(session, "fusionSwitch.applySuspects", cfgUri=uri)
    assert result["changes"] == [{"section": PROVEN[0], "rule": PROVEN[1], "value": "off"}]
    expected = cfg.apply_edits(USER_CFG, cfg.set_switches(cfg.parse(USER_CFG), [(*PROVEN, "off")]))
    assert session.texts[uri] == expected
    assert '"ConvBatchnormFusionPass": "on"' in session.texts[uri]

    # the unproven one only when asked for, labelled as such in the lens above
    result = await execute(
        session, "fusionSwitch.applySuspects", cfgUri=uri, includeUnverified=True
    )
    assert {"section": UNVERIFIED[0], "rule": UNVERIFIED[1], "value": "off"} in result["changes"]
    assert f'"{UNVERIFIED[1]}": "off"' in session.texts[uri]
    assert '"ConvBatchnormFusionPass": "on"' in session.texts[uri]
    assert text_at(session.texts[uri], suspects[0].range) is not None
    session.close(uri)


def compare_setting(session, key: str, value) -> None:
    """Change one fusionSwitch.compare setting as an editor does."""
    session.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"fusionSwitch": {"compare": {key: value}}})
    )


async def test_the_memory_budget_setting_bounds_the_editors_comparison(
    session, replay_case, tmp_path
):
    """fusionSwitch.compare.memoryBudget reaches the comparison the editor runs: too small
    for the replay beside the comparison, it runs after it (summary.json says so), with the
    same verdict; cleared, the replay runs beside it again."""
    path = write_cfg(tmp_path)
    uri = open_path(session, path)
    await session.diagnostics(uri)

    def budget(value: str) -> None:
        compare_setting(session, "memoryBudget", value)

    budget("100M")
    try:
        bounded = await compare(session, uri, replay_case, tmp_path / "bounded")
    finally:
        budget("")
    free = await compare(session, uri, replay_case, tmp_path / "free")
    assert "error" not in bounded and "error" not in free, (bounded, free)
    notes = {
        name: json.loads((tmp_path / name / "summary.json").read_text())["inputs"]["notes"]
        for name in ("bounded", "free")
    }
    after = [n for n in notes["bounded"] if n.startswith("replay: run after")]
    assert len(after) == 1 and "--memory-budget (100 MiB)" in after[0]
    assert not [n for n in notes["free"] if n.startswith("replay: run after")]
    assert [s["rule"] for s in bounded["suspects"]] == [s["rule"] for s in free["suspects"]]
    assert bounded["suspects"]
    session.close(uri)


async def test_the_workers_setting_sets_the_editors_comparison_processes(
    session, replay_case, tmp_path
):
    """fusionSwitch.compare.workers reaches the comparison the editor runs as `--workers N`
    (the command is in the server's log), with the same verdict; 0 gives every core again."""
    path = write_cfg(tmp_path)
    uri = open_path(session, path)
    await session.diagnostics(uri)

    def workers(value: int) -> None:
        compare_setting(session, "workers", value)

    def last_command() -> str:
        return [m.message for m in session.client.log_messages if "running " in m.message][-1]

    workers(1)
    try:
        one = await compare(session, uri, replay_case, tmp_path / "one")
        command_one = last_command()
    finally:
        workers(0)
    every = await compare(session, uri, replay_case, tmp_path / "every")
    command_every = last_command()
    assert "error" not in one and "error" not in every, (one, every)
    assert command_one.endswith(" --workers 1"), command_one
    assert "--workers" not in command_every, command_every
    assert [s["rule"] for s in one["suspects"]] == [s["rule"] for s in every["suspects"]]
    assert one["suspects"]
    session.close(uri)
