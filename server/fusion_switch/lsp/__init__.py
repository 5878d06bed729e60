"""The language server: the only package that imports pygls/lsprotocol.

Layout: `server.py` (the pygls object and capability negotiation), `state.py` (what the
server knows between messages), `capabilities.py` (what the client supports, what we offer),
`settings.py` (every setting read), `documents.py` + `text.py` (open documents, offsets ↔
positions), `convert.py` (pure dataclasses ↔ protocol types), `safety.py` (no exception escapes
a handler), `features/` (one module per LSP method or small group), `commands.py` (the
`workspace/executeCommand` registry), `tcp.py` (`serve --tcp`: one authenticated session per
connection).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def _starting() -> Iterator[None]:
    """Import and build the server without the cyclic garbage collector, then freeze what
    was built and turn the collector back on.

    Importing lsprotocol creates thousands of classes; the collections this triggers (one of
    them full) rescan them all and free almost nothing: ~80 ms of CPU of every start here.
    Frozen objects are skipped by later collections as well; reference counting frees
    everything else as usual."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def serve_stdio() -> None:
    with _starting():
        from .server import create_server

        server = create_server()
    server.start_io()


def serve_tcp(host: str, port: int, token_file: str | None = None) -> int:
    """One authenticated session per connection (see `tcp.py`); returns the exit status."""
    with _starting():
        from . import tcp

    return tcp.serve_tcp(host, port, token_file)
