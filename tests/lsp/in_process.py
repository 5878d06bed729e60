"""A server driven in process through pygls's own message dispatch: the built-in handlers run
exactly as they do over stdio, and each message the server writes is kept, parsed."""

from __future__ import annotations

import json
from collections.abc import Callable

from fusion_switch.lsp.server import FusionSwitchServer, create_server


class Writer:
    """The server's output without headers (pygls's default for a writer it is given): one
    JSON message per write."""

    def __init__(self) -> None:
        self.messages: list[dict] = []

    def write(self, data: bytes) -> None:
        self.messages.append(json.loads(data))

    def close(self) -> None:
        pass


def connected() -> tuple[FusionSwitchServer, Writer, Callable[..., None]]:
    """A new server, what it writes, and ``send(method, params, msg_id=None)``."""
    server = create_server()
    protocol = server.protocol
    writer = Writer()
    protocol.set_writer(writer, include_headers=False)

    def send(method: str, params: dict | None, msg_id: int | str | None = None) -> None:
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        if msg_id is not None:
            message["id"] = msg_id
        protocol.handle_message(protocol.structure_message(message))

    return server, writer, send


def reply(server: FusionSwitchServer, msg_id: int | str, result: object) -> None:
    """The client's answer to a request of the server's (``window/workDoneProgress/create``)."""
    message = {"jsonrpc": "2.0", "id": msg_id, "result": result}
    server.protocol.handle_message(server.protocol.structure_message(message))
