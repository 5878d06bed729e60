"""A comparison that takes a while (the CLI honours FUSION_SWITCH_COMPARE_DELAY, seconds per
progress line, for tests): other requests are answered meanwhile, a second run is refused,
cancelling (command or progress token) publishes nothing; and a restarted server shows the
saved results and can still restore."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest
from e2e_support import TIMEOUT
from fusion_switch.workflow.results import load_results
from lsprotocol import types
from pytest_lsp import ClientServerConfig
from workflow_support import (
    BARE,
    INJECTED,
    USER_CFG,
    by_code,
    case_paths,
    compare,
    execute,
    fresh_vscode,
    open_path,
    workflow_fixtures,
    write_cfg,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")
SLOW = ClientServerConfig(
    server_command=[sys.executable, "-m", "fusion_switch", "serve"],
    server_env={**os.environ, "FUSION_SWITCH_COMPARE_DELAY": "1.0"},
)


workflow_client, session = workflow_fixtures(SLOW, ("visual-studio-code", BARE))


async def started(session, count: int) -> None:
    """Until the server has logged starting its `count`-th comparison process."""
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while sum("running " in m.message for m in session.client.log_messages) < count:
        assert asyncio.get_running_loop().time() < deadline, "the comparison did not start"
        await asyncio.sleep(0.01)


def runs(session) -> int:
    return sum("running " in m.message for m in session.client.log_messages)


async def test_requests_are_answered_while_a_comparison_runs(session, case, tmp_path):
    uri = open_path(session, write_cfg(tmp_path))
    await session.diagnostics(uri)
    events: list[str] = []
    before = runs(session)
    task = asyncio.ensure_future(compare(session, uri, case, tmp_path / "o"))
    task.add_done_callback(lambda _: events.append("compare answered"))
    await started(session, before + 1)

    second = await execute(session, "fusionSwitch.compare", cfgUri=uri, **case_paths(case))
    assert "already running" in second["error"]
    events.append("second compare refused")
    completion = await session.client.text_document_completion_async(
        types.CompletionParams(types.TextDocumentIdentifier(uri), types.Position(3, 8))
    )
    assert any(i.label == "SoftmaxFusionPass" for i in completion.items)
    events.append("completion answered")
    hover = await session.client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(3, 10))
    )
    assert hover is not None
    events.append("hover answered")

    summary = await task
    assert events == [
        "second compare refused",
        "completion answered",
        "hover answered",
        "compare answered",
    ]
    assert INJECTED[1] in [s["rule"] for s in summary["suspects"]]
    session.close(uri)


async def test_cancel_command_stops_the_run_and_publishes_nothing(session, case, tmp_path):
    path = write_cfg(tmp_path)
    uri = open_path(session, path)
    await session.diagnostics(uri)
    known = set(session.client.progress_reports)
    mark = session.mark(uri)
    before = runs(session)
    task = asyncio.ensure_future(compare(session, uri, case, tmp_path / "o"))
    await started(session, before + 1)
    assert await execute(session, "fusionSwitch.cancelCompare") == {"cancelled": True}
    assert await task == {"cancelled": True}
    assert load_results(path) is None
    assert not (tmp_path / "o" / "summary.json").exists()
    await session.barrier()
    assert session.mark(uri) == mark  # no new diagnostics
    assert any("cancelled" in m.message for m in session.client.messages)
    new = [t for t in session.client.progress_reports if t not in known]
    if session.bare:
        assert new == []
    else:
        [token] = new
        assert session.client.progress_reports[token][-1].message == "cancelled"
    nothing = await execute(session, "fusionSwitch.cancelCompare")
    assert nothing == {"cancelled": False}
    session.close(uri)


async def test_cancel_from_the_progress_bar(session, case, tmp_path):
    path = write_cfg(tmp_path)
    uri = open_path(session, path)
    known = set(session.client.progress_reports)
    if session.bare:
        # no window.workDoneProgress: no progress bar is created, and the run still completes
        summary = await compare(session, uri, case, tmp_path / "o")
        assert set(session.client.progress_reports) == known
        assert summary["suspects"] and load_results(path) is not None
        session.close(uri)
        return
    task = asyncio.ensure_future(compare(session, uri, case, tmp_path / "o"))
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while not [t for t in session.client.progress_reports if t not in known]:
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.01)
    [token] = [t for t in session.client.progress_reports if t not in known]
    session.client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token))
    assert await task == {"cancelled": True}
    assert load_results(path) is None
    session.close(uri)


def _runs_into(out) -> list:
    """The comparison processes writing into ``out`` (the run's own, by its command line)."""
    import psutil

    found = []
    for process in psutil.process_iter(["cmdline"]):
        if str(out) in (process.info["cmdline"] or []):
            found.append(process)
    return found


async def test_cancel_request_stops_the_run_and_publishes_nothing(session, case, tmp_path):
    """A review: `$/cancelRequest` for the compare command answered "canceled" at once while
    the run went on, and published its suspects and results seconds later (pygls cancels the
    request's outer future, not the command's own task)."""
    path = write_cfg(tmp_path)
    uri = open_path(session, path)
    await session.diagnostics(uri)
    mark = session.mark(uri)
    before = runs(session)
    msg_id = f"cancelled-compare-{id(tmp_path)}"
    params = types.ExecuteCommandParams(
        command="fusionSwitch.compare",
        arguments=[{"cfgUri": uri, "output": str(tmp_path / "o"), **case_paths(case)}],
    )
    answer = session.client.protocol.send_request(
        types.WORKSPACE_EXECUTE_COMMAND, params, msg_id=msg_id
    )
    await started(session, before + 1)
    session.client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
    with pytest.raises(Exception, match="cancel"):  # the request's answer: cancelled
        await asyncio.wait_for(asyncio.wrap_future(answer), TIMEOUT)
    deadline = asyncio.get_running_loop().time() + 3  # the child's SIGTERM grace is 5 s
    while _runs_into(tmp_path / "o"):
        assert asyncio.get_running_loop().time() < deadline, "the run was not stopped"
        await asyncio.sleep(0.05)
    await asyncio.sleep(2.5)  # a run going on would have written and published by now
    assert load_results(path) is None
    assert not (tmp_path / "o" / "summary.json").exists()
    await session.barrier()
    assert session.mark(uri) == mark  # no new diagnostics
    session.close(uri)


async def test_a_restarted_server_shows_saved_results_and_restores(session, case, tmp_path):
    """Results and the all-off backup live next to the file: a new server process sees them."""
    if session.bare:
        pytest.skip("one client is enough for the restart")
    path = write_cfg(tmp_path)
    uri = open_path(session, path)
    await execute(session, "fusionSwitch.allOff", cfgUri=uri)
    all_off = session.texts[uri]
    summary = await compare(session, uri, case, tmp_path / "o")
    assert summary["suspects"]
    session.close(uri)
    path.write_text(all_off, encoding="utf-8")  # the editor saved the file

    client, fresh = await fresh_vscode()
    try:
        uri = open_path(fresh, path)
        diagnostics = await fresh.diagnostics(uri)
        assert [d for d in by_code(diagnostics, "fusion-suspect") if INJECTED[1] in d.message]
        result = await execute(fresh, "fusionSwitch.restore", cfgUri=uri)
        assert result["applied"] is True
        assert fresh.texts[uri] == USER_CFG
        await client.shutdown_session()
    finally:
        await client.stop()


async def test_shutdown_while_a_comparison_runs_answers_and_stops_it(session, case, tmp_path):
    """A review: `shutdown` with a command still running answered InternalError
    ("dictionary changed size during iteration": pygls cancelled the running requests while
    looping over their table), so VS Code never sent `exit` and killed the server."""
    if session.bare:
        pytest.skip("one client is enough")
    client, fresh = await fresh_vscode({**os.environ, "FUSION_SWITCH_COMPARE_DELAY": "1.0"})
    try:
        uri = open_path(fresh, write_cfg(tmp_path))
        await fresh.diagnostics(uri)
        running = asyncio.ensure_future(compare(fresh, uri, case, tmp_path / "o"))
        await started(fresh, 1)
        answer = await asyncio.wait_for(client.shutdown_async(None), TIMEOUT)
        assert answer is None
        with pytest.raises(Exception, match="cancel"):
            await asyncio.wait_for(running, TIMEOUT)
        deadline = asyncio.get_running_loop().time() + 3
        while _runs_into(tmp_path / "o"):
            assert asyncio.get_running_loop().time() < deadline, "the run was not stopped"
            await asyncio.sleep(0.05)
    finally:
        client.exit(None)  # also after a failed shutdown: the server ends either way
        await client.stop()
