"""The language server: the only package that imports pygls/lsprotocol.

Layout: `server.py` (the pygls object and capability negotiation), `state.py` (what the
server knows between messages), `capabilities.py` (what the client supports, what we offer),
`settings.py` (every setting read), `documents.py` + `text.py` (open documents, offsets ↔
positions), `convert.py` (pure dataclasses ↔ protocol types), `safety.py` (no exception escapes
a handler), `features/` (one module per LSP method or small group), `commands.py` (the
`workspace/executeCommand` registry), `tcp.py` (`serve --tcp`: one authenticated session per
connection). Both transports read messages with `framing.read_body` (bounded) and
`FusionSwitchProtocol.handle_body` (every message answered or acted on).
"""

from __future__ import annotations

from ..readers.collector import collector_paused

# Start-up (importing lsprotocol and pygls, building the server) runs with the collector
# paused, then freezes what it built: lsprotocol creates thousands of classes, and the ~135
# collections they triggered (one full) rescanned them all and freed almost nothing, ~80 ms
# of CPU of every start here. Later collections skip the frozen objects as well.


def serve_stdio() -> None:
    """The server on stdin/stdout until `exit` or the end of stdin; SystemExit(1) for `exit`
    without `shutdown` (LSP) and for a stream that cannot be read (`server.start_stdio`)."""
    with collector_paused():
        from .server import create_server

        server = create_server()
    status = server.start_stdio()
    if status:
        raise SystemExit(status)


def serve_tcp(host: str, port: int, token_file: str | None = None) -> int:
    """One authenticated session per connection (see `tcp.py`); returns the exit status."""
    with collector_paused():
        from . import tcp

    return tcp.serve_tcp(host, port, token_file)
