"""fusionSwitch.bisect over the protocol while the user types: text typed into the buffer while
the bisection ran (not saved) is recorded in the history, restorable, before the result
replaces it; a buffer that merely reloaded a trial's file from disk is replaced as before."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import pytest
from e2e_support import SERVER
from fusion_switch.workflow.history import History
from lsprotocol import types
from workflow_support import execute, open_path, workflow_fixtures, write_cfg

from tests.bisect_jobs import FAKE_JOB, GATE_JOB

pytestmark = pytest.mark.asyncio(loop_scope="module")
USER = '{\n  "Switch": {\n    "GraphFusion": {\n      "KeepMe": "on"\n    }\n  }\n}\n'
RULES = [f"GraphFusion:R{i:02d}" for i in range(16)]
TYPED = USER.replace('"KeepMe": "on"', '"KeepMe": "on",\n      "MyNotes_TypedWhileWaiting": "on"')


workflow_client, session = workflow_fixtures(SERVER, ("visual-studio-code",))


class Gate:
    def __init__(self, folder: Path) -> None:
        script = folder / "gate.py"
        script.write_text(GATE_JOB)
        self.waiting, self.go = folder / "waiting", folder / "go"
        self.job = (
            f"GATE_RUNS={folder / 'runs'} GATE_AT=4 GATE_WAITING={self.waiting} "
            f"GATE_GO={self.go} FAKE_GUILTY=R03 {sys.executable} {script} {FAKE_JOB} {{cfg}}"
        )

    async def held(self) -> None:
        deadline = time.monotonic() + 60
        while not self.waiting.exists():
            assert time.monotonic() < deadline, "the gated trial never started"
            await asyncio.sleep(0.02)

    def release(self) -> None:
        self.go.write_text("go")


def type_text(session, uri: str, text: str) -> None:
    session.change(uri, [types.TextDocumentContentChangeWholeDocument(text=text)], text)


def versions(path: Path) -> list[bytes | None]:
    history = History(path)
    return [history.content(v) for v in history.versions()]


async def test_typing_during_a_bisection_is_recorded_before_the_result_replaces_it(
    session, tmp_path
):
    """A review: the bisection's result replaced the text typed into the buffer while it ran,
    and no version of the history held that text."""
    path = write_cfg(tmp_path, USER)
    uri = open_path(session, path)
    gate = Gate(tmp_path)
    running = asyncio.ensure_future(
        execute(session, "fusionSwitch.bisect", cfgUri=uri, job=["sh", "-c", gate.job], rules=RULES)
    )
    try:
        await gate.held()
        type_text(session, uri, TYPED)  # typed, not saved
        await session.barrier()
    finally:
        gate.release()
    result = await running
    assert [g["rule"] for g in result["guilty"]] == ["R03"], result
    text = session.texts[uri]
    assert json.loads(text)["Switch"]["GraphFusion"] == {"KeepMe": "on", "R03": "off"}
    assert TYPED.encode() in versions(path)  # the typed text is restorable
    restored = await execute(session, "fusionSwitch.restore", cfgUri=uri)
    assert restored["applied"] is True, restored
    assert session.texts[uri] == TYPED
    session.close(uri)


async def test_a_buffer_that_reloaded_a_trial_file_is_not_recorded(session, tmp_path):
    """An editor reloads an unmodified buffer when the file changes on disk (each trial): that
    text is the bisection's own, not the user's, and recording it would make 'restore' bring
    back a trial's configuration instead of the user's."""
    path = write_cfg(tmp_path, USER)
    uri = open_path(session, path)
    gate = Gate(tmp_path)
    running = asyncio.ensure_future(
        execute(session, "fusionSwitch.bisect", cfgUri=uri, job=["sh", "-c", gate.job], rules=RULES)
    )
    try:
        await gate.held()
        trial = path.read_text()
        assert trial != USER
        type_text(session, uri, trial)  # reloaded from disk
        await session.barrier()
    finally:
        gate.release()
    result = await running
    assert [g["rule"] for g in result["guilty"]] == ["R03"], result
    assert trial.encode() not in versions(path)
    latest = History(path).latest()
    assert (latest.who, latest.kind) == ("bisect", "bisect")
    restored = await execute(session, "fusionSwitch.restore", cfgUri=uri)
    assert restored["applied"] is True, restored
    assert session.texts[uri] == USER
    session.close(uri)
