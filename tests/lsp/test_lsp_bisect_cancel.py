"""`$/cancelRequest` for fusionSwitch.bisect ends its progress bar, even when it comes while
the bisection's process is being started (a review: the bar began and never ended). Driven
in process through pygls's own dispatch, with the start slowed to hit that moment."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import fusion_switch.workflow.bisect_job as bisect_job
from in_process import connected, reply

FAKE_JOB = Path(__file__).resolve().parents[1] / "cli" / "fake_job.py"
TEXT = '{\n  "Switch": {\n    "GraphFusion": {\n      "KeepMe": "on"\n    }\n  }\n}\n'


async def _until(predicate, seconds: float = 5.0) -> None:
    for _ in range(int(seconds / 0.01)):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("not within the time")


async def test_a_cancel_while_the_bisection_starts_ends_its_bar(tmp_path, monkeypatch):
    real = asyncio.create_subprocess_exec
    started = asyncio.Event()

    async def slow_start(*args, **kwargs):
        started.set()
        await asyncio.sleep(0.5)
        return await real(*args, **kwargs)

    monkeypatch.setattr(bisect_job.asyncio, "create_subprocess_exec", slow_start)
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_text(TEXT)
    server, writer, send = connected()
    capabilities = {"window": {"workDoneProgress": True}}
    send("initialize", {"capabilities": capabilities, "processId": None, "rootUri": None}, 1)
    await asyncio.sleep(0.05)
    uri = cfg.as_uri()
    document = {"uri": uri, "languageId": "json", "version": 1, "text": TEXT}
    send("textDocument/didOpen", {"textDocument": document})
    await asyncio.sleep(0.1)
    job = f"{sys.executable} {FAKE_JOB} {{cfg}}"
    arguments = {"cfgUri": uri, "job": ["sh", "-c", job], "rules": ["GraphFusion:R01"]}
    command = {"command": "fusionSwitch.bisect", "arguments": [arguments]}
    send("workspace/executeCommand", command, 5)

    def create_requests() -> list[dict]:
        return [m for m in writer.messages if m.get("method") == "window/workDoneProgress/create"]

    await _until(create_requests)
    reply(server, create_requests()[0]["id"], None)
    await asyncio.wait_for(started.wait(), 5)
    send("$/cancelRequest", {"id": 5})

    def kinds() -> list[str]:
        return [
            m["params"]["value"]["kind"] for m in writer.messages if m.get("method") == "$/progress"
        ]

    await _until(lambda: "end" in kinds())
    assert kinds()[0] == "begin" and kinds()[-1] == "end"
    await asyncio.sleep(0.7)  # the slowed start is over: nothing ran
    assert cfg.read_text() == TEXT
