"""initialize (client capabilities, initializationOptions), initialized (pull settings)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from lsprotocol import types

from ..recipe import annotations
from ..safety import guarded, log
from ..state import WARM_UP_DELAY
from . import configuration

if TYPE_CHECKING:
    from ..server import FusionSwitchServer


@guarded()
def _preload(ls: FusionSwitchServer) -> None:
    ls.state.preload()


def register(server: FusionSwitchServer) -> None:
    @server.feature(types.INITIALIZE)
    @guarded()
    def initialize(ls: FusionSwitchServer, params: types.InitializeParams) -> None:
        ls.capture_client(params)
        configuration.apply(ls, params.initialization_options or {})
        # runs once this handler's answer is sent, before the next message is read
        asyncio.get_running_loop().call_soon(_preload, ls)

    @server.feature(types.INITIALIZED)
    @guarded()
    async def initialized(ls: FusionSwitchServer, params: types.InitializedParams) -> None:
        log(ls, ls.state.describe(), types.MessageType.Info)
        await configuration.pull(ls)
        ls.state.initialized = True
        annotations.send_status(ls)
        await asyncio.sleep(WARM_UP_DELAY)
        await asyncio.to_thread(ls.state.warm_up)

    @server.feature(types.SHUTDOWN)
    @guarded()
    def shutdown(ls: FusionSwitchServer, params: None) -> None:
        """A running comparison or bisection dies with the server (its child process is
        stopped; a bisection puts the configuration back and stops the user's job: a review
        found it and the job running on after the server)."""
        for job in (ls.state.compare_job, ls.state.bisect_job):
            if job is not None:
                job.cancel()
