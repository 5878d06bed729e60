"""The editor's compare names a training step, a rank and an iteration (arguments `step`,
`rank`, `iteration`, settings `fusionSwitch.compare.step` / `.rank` / `.iteration`). A review
found the editor told to "pass --rank R", which it could not. When the dumps hold several, the
answer lists the values on both sides (`choose`, for VS Code's quick pick) and the message says
which setting or argument to give; `--rank all` is refused with the way to run it. Over stdio
with pytest-lsp."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from fusion_switch.synth.generator import generate_case
from lsprotocol import types
from pytest_lsp import ClientServerConfig, client_capabilities

CFG = '{\n  "Switch": {\n    "GraphFusion": {\n      "ALL": "on"\n    }\n  }\n}\n'


def _arguments(roots: dict, case) -> dict:
    """The compare command's dump and graph arguments."""
    return {
        "onDump": str(roots["on"]),
        "offDump": str(roots["off"]),
        "onGraph": str(case.on_graph),
        "offGraph": str(case.off_graph),
    }


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> dict:
    """A generated case whose dump trees hold ranks 0 and 1 (rank 1 a copy of rank 0), and on
    rank 1 iterations 0 and 1 on both sides."""
    case = generate_case(tmp_path_factory.mktemp("ranks") / "case", n_ops=40)
    roots = {}
    for side, leaf in (("on", case.on_dump), ("off", case.off_dump)):
        rank0 = leaf.parents[2]
        rank1 = rank0.parent / "1"
        shutil.copytree(rank0, rank1)
        again = rank1 / leaf.relative_to(rank0)
        shutil.copytree(again, again.parent / "1")
        roots[side] = rank0.parents[1]
    return _arguments(roots, case)


def _time_folder_under(base: Path, folders: tuple[str, ...]) -> dict:
    """A generated case whose dump trees hold its time folder under each of ``folders`` (hard
    links), on both sides."""
    case = generate_case(base / "case", n_ops=40)
    roots = {}
    for side, leaf in (("on", case.on_dump), ("off", case.off_dump)):
        time = leaf.parents[3]
        for folder in folders:
            shutil.copytree(time, base / side / folder / time.name, copy_function=os.link)
        roots[side] = base / side
    return _arguments(roots, case)


@pytest.fixture(scope="module")
def servers(tmp_path_factory) -> dict:
    """A generated case dumped on two servers, each with a device 0: ranks `node0/0` and
    `node1/0` (each a copy of the case's time folder under `node0/`, `node1/`)."""
    return _time_folder_under(tmp_path_factory.mktemp("servers"), ("node0", "node1"))


@pytest.fixture(scope="module")
def steps(tmp_path_factory) -> dict:
    """A generated case laid out as MindSpore's Ascend O2 dump, `{step}/{time}/{device}/...`,
    with steps 0 and 1 on both sides (each a copy of the case's time folder)."""
    return _time_folder_under(tmp_path_factory.mktemp("steps"), ("0", "1"))


async def _session(tmp_path: Path, settings: dict | None = None, picks: bool = False):
    config = ClientServerConfig(server_command=[sys.executable, "-m", "fusion_switch", "serve"])
    client = await config.start()
    capabilities = client_capabilities("visual-studio-code")
    if picks:  # what our extension declares: it offers the values itself
        capabilities.experimental = {"fusionSwitch": {"compareChoices": True}}
    await client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities,
            root_uri=tmp_path.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=tmp_path.as_uri(), name="ws")],
            initialization_options={"fusionSwitch": settings or {}},
        )
    )
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_text(CFG)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=cfg.as_uri(), language_id="fusion-switch", version=1, text=CFG
            )
        )
    )
    return client, cfg.as_uri()


async def _compare(client, argument: dict):
    return await asyncio.wait_for(
        client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="fusionSwitch.compare", arguments=[argument])
        ),
        300,
    )


async def test_several_ranks_then_iterations_are_offered_by_name(tmp_path, ranks) -> None:
    client, uri = await _session(tmp_path)
    try:
        result = await _compare(client, {"cfgUri": uri, **ranks})
        assert result["choose"] == {"rank": ["0", "1"]}, result
        assert "fusionSwitch.compare.rank" in result["error"], result
        assert '"rank"' in result["error"]
        shown = [m.message for m in client.messages]
        assert any("fusionSwitch.compare.rank" in m for m in shown), shown

        result = await _compare(client, {"cfgUri": uri, **ranks, "rank": 1})
        assert result["choose"] == {"iteration": ["0", "1"]}, result
        assert "fusionSwitch.compare.iteration" in result["error"]

        result = await _compare(client, {"cfgUri": uri, **ranks, "rank": "1", "iteration": "1"})
        assert "verdict" in result, result
    finally:
        await client.shutdown_session()


async def test_the_settings_name_them_and_rank_all_is_refused(tmp_path, ranks) -> None:
    settings = {"compare": {**ranks, "rank": "0"}}
    client, uri = await _session(tmp_path, settings, picks=True)
    try:
        result = await _compare(client, {"cfgUri": uri})
        assert "verdict" in result, result

        result = await _compare(client, {"cfgUri": uri, "rank": "all"})
        assert "--rank all" in result["error"] and "fusion-switch compare" in result["error"]
        assert "choose" not in result
        result = await _compare(client, {"cfgUri": uri, "rank": "first"})
        assert "a rank is a device id such as 0" in result["error"], result
        assert "node0/0" in result["error"] and "'first'" in result["error"], result

        # a client that offers the values itself is not shown the message as well
        before = len(client.messages)
        result = await _compare(client, {"cfgUri": uri, "rank": 1})  # over the setting
        assert result["choose"] == {"iteration": ["0", "1"]}, result
        said = [m.message for m in client.messages[before:]]
        assert not any("fusionSwitch.compare.iteration" in m for m in said), said
    finally:
        await client.shutdown_session()


def _compared(out: Path) -> dict:
    """The dump folders and graphs the comparison into ``out`` used (its summary.json)."""
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))["inputs"]


async def test_the_ranks_offered_are_the_ranks_taken(tmp_path, servers) -> None:
    """A reread: the pick offered `node0/0` and `node1/0` (two servers' device 0, as `--rank`
    names them), and the editor refused the one picked: "rank must be a device id"."""
    client, uri = await _session(tmp_path, picks=True)
    try:
        result = await _compare(client, {"cfgUri": uri, **servers})
        assert result["choose"] == {"rank": ["node0/0", "node1/0"]}, result

        out = tmp_path / "out"
        picked = {"cfgUri": uri, **servers, "rank": "node0/0", "output": str(out)}
        result = await _compare(client, picked)
        assert "verdict" in result, result
        inputs = _compared(out)
        assert "/node0/" in inputs["on_dump"] and "/node0/" in inputs["off_dump"], inputs
    finally:
        await client.shutdown_session()


async def test_several_steps_are_offered_and_one_is_compared(tmp_path, steps) -> None:
    """`compare` refuses a tree of several training steps and says "pass --step S", which an
    editor user could not: the steps dumped on both sides are offered (argument `step`,
    setting `fusionSwitch.compare.step`), and the one picked is compared."""
    client, uri = await _session(tmp_path)
    try:
        result = await _compare(client, {"cfgUri": uri, **steps})
        assert result["choose"] == {"step": ["0", "1"]}, result
        assert "fusionSwitch.compare.step" in result["error"] and '"step"' in result["error"]

        out = tmp_path / "out"
        result = await _compare(client, {"cfgUri": uri, **steps, "step": "1", "output": str(out)})
        assert "verdict" in result, result
        inputs = _compared(out)
        assert "/1/" in inputs["on_dump"] and "/1/" in inputs["off_dump"], inputs
    finally:
        await client.shutdown_session()

    settings = {"compare": {**steps, "step": "0", "output": str(tmp_path / "set")}}
    client, uri = await _session(tmp_path, settings, picks=True)
    try:
        result = await _compare(client, {"cfgUri": uri})
        assert "verdict" in result, result
        inputs = _compared(tmp_path / "set")
        assert "/0/" in inputs["on_dump"], inputs
    finally:
        await client.shutdown_session()
