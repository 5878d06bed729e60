"""The editor's comparison child killed with SIGKILL (issue 12, "Processes"), over stdio.

The server must answer the compare command within seconds with an error, leave no worker
behind, and accept the next comparison.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time

import psutil
import pytest
from e2e_support import SERVER
from fusion_switch.synth.generator import generate_case
from pytest_lsp import ClientServerConfig
from workflow_support import compare, open_path, workflow_fixtures, write_cfg

pytestmark = pytest.mark.asyncio(loop_scope="module")
GRACE = 5.0


# Each progress report of the compare child waits 0.2 s: the comparison is still running when
# it is killed (600 ops compare in about a second now, so an undelayed child could finish
# before the kill and the test would find no process to kill).
SLOWED = ClientServerConfig(
    server_command=SERVER.server_command,
    server_env={**os.environ, "FUSION_SWITCH_COMPARE_DELAY": "0.2"},
)


workflow_client, session = workflow_fixtures(SLOWED)


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    return generate_case(tmp_path_factory.mktemp("editor-kill") / "case", n_ops=600)


def compare_children() -> list[psutil.Process]:
    """Processes below this test process that run `fusion_switch compare` (and their workers)."""
    found = []
    for proc in psutil.Process(os.getpid()).children(recursive=True):
        try:
            if "compare" in proc.cmdline():
                found.append(proc)
        except psutil.Error:
            pass
    return found


async def test_compare_child_killed_with_sigkill(session, case, tmp_path):
    uri = open_path(session, write_cfg(tmp_path))
    running = asyncio.ensure_future(compare(session, uri, case, tmp_path / "out"))
    deadline = time.monotonic() + 30
    children: list[psutil.Process] = []
    while not children and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        children = compare_children()
    assert children, "the compare child did not start"
    await asyncio.sleep(1.0)  # let it start its workers
    workers = [w for c in children for w in c.children(recursive=True)]
    children[0].send_signal(signal.SIGKILL)
    result = await asyncio.wait_for(running, 15)
    assert "error" in result, result
    alive = [p for p in [*children, *workers] if p.is_running()]
    deadline = time.monotonic() + GRACE
    while alive and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
        alive = [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not alive, [(p.pid, p.cmdline()) for p in alive]
    # the next comparison is accepted and finishes
    again = await compare(session, uri, case, tmp_path / "out2")
    assert "error" not in again, again
    assert again["verdict"]
