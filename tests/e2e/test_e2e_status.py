"""The `fusionSwitch/status` notification (target and catalogue in force, for a status bar).

Sent only to a client that asks for it with `capabilities.experimental.fusionSwitch =
{"statusNotification": "fusionSwitch/status"}` (our VS Code extension): once when the server
is initialized, and again after each settings change. A client without that entry (any other
editor) never receives it.
"""

from __future__ import annotations

import asyncio

import pytest
import pytest_lsp
from e2e_support import SERVER, TIMEOUT, Session, start
from fusion_switch.catalogue import builtin_catalogue
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

pytestmark = pytest.mark.asyncio(loop_scope="module")

STATUS = "fusionSwitch/status"
BUILT_IN = ", ".join(builtin_catalogue().origins)


def vscode_capabilities(announce: bool) -> types.ClientCapabilities:
    caps = client_capabilities("visual-studio-code")
    if announce:
        experimental = dict(caps.experimental or {})
        experimental["fusionSwitch"] = {"statusNotification": STATUS}
        caps.experimental = experimental
    return caps


@pytest_lsp.fixture(config=SERVER, scope="module", params=[True, False], ids=["ext", "plain"])
async def lsp(request, lsp_client: LanguageClient):
    statuses: list[dict] = []

    @lsp_client.feature(STATUS)
    def record(params) -> None:
        statuses.append(_plain(params))

    pulls = _count_configuration_pulls(lsp_client)
    session = await start(
        lsp_client,
        "visual-studio-code",
        capabilities=vscode_capabilities(request.param),
        initialization_options={"target": "Atlas 350"},
    )
    session.announced = request.param
    session.statuses = statuses
    session.pulls = pulls
    lsp_client.session = session
    yield
    await lsp_client.shutdown_session()


@pytest.fixture(scope="module")
def session(lsp: LanguageClient) -> Session:
    return lsp.session


def _plain(params) -> dict:
    """The notification's params as a dict, whatever object the client library built."""
    if isinstance(params, dict):
        return params
    if hasattr(params, "_asdict"):
        return dict(params._asdict())
    return dict(vars(params))


def _count_configuration_pulls(client: LanguageClient) -> list[int]:
    """Count the workspace/configuration requests the client answers: the server pulls the
    settings at the end of its start, just before it may send the first status."""
    pulls = [0]
    features = client.protocol.fm.features
    answer = features[types.WORKSPACE_CONFIGURATION]  # stored bound to the client

    def counted(params: types.ConfigurationParams):
        pulls[0] += 1
        return answer(params)

    features[types.WORKSPACE_CONFIGURATION] = counted
    return pulls


async def _statuses(session: Session, count: int) -> list[dict]:
    """The statuses received once the server has finished starting (it pulled the settings)
    and, for a client that asked for them, once there are `count` of them."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while session.pulls[0] < 1 or (session.announced and len(session.statuses) < count):
        if loop.time() > deadline:
            raise AssertionError(f"{len(session.statuses)} statuses, expected {count}")
        await asyncio.sleep(0.005)
    await session.barrier()
    await session.barrier()
    return list(session.statuses)


async def test_status_is_sent_once_after_initialized(session: Session) -> None:
    statuses = await _statuses(session, 1)
    if not session.announced:
        assert statuses == []
        return
    [status] = statuses
    assert "Atlas 350" in status["target"]
    assert status["catalogue"] == BUILT_IN


async def test_status_follows_a_target_change(session: Session) -> None:
    before = len(await _statuses(session, 1))
    session.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"fusionSwitch": {"target": "Ascend910B1"}})
    )
    statuses = await _statuses(session, before + 1)
    if not session.announced:
        assert statuses == []
        return
    assert len(statuses) == before + 1
    assert "Ascend910B1" in statuses[-1]["target"] and "Atlas 350" not in statuses[-1]["target"]
    assert statuses[-1]["catalogue"] == BUILT_IN
