"""The pygls server object: state, capability negotiation, error reporting, feature wiring.

Handlers live in `lsp/features/` (one module per LSP method or a small group) and commands
in `lsp/commands.py`; each module's `register(server)` attaches its handlers here.
"""

from __future__ import annotations

import itertools
import logging
from functools import partial
from json.encoder import encode_basestring_ascii as _string
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from .. import __version__
from . import commands, logging_setup
from .capabilities import ClientFeatures, server_capabilities
from .completion_text import JsonPieces
from .safety import log
from .state import ServerState

NAME = "fusion-switch"
_pygls_log = logging.getLogger("pygls.protocol.json_rpc")  # where pygls logs what it sends


class FusionSwitchProtocol(LanguageServerProtocol):
    """pygls's protocol, with the `initialize` answer taken from `capabilities.py` and
    document synchronisation that keeps no second copy of the documents.

    pygls derives capabilities from the registered handlers; we declare them from what the
    client supports instead (pull diagnostics, code-action kinds), in one place.
    """

    _server: FusionSwitchServer

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams):
        result = yield from super().lsp_initialize(params)
        state = self._server.state
        caps = server_capabilities(
            state.client, self.workspace.position_encoding or state.encoding, commands.names()
        )
        self.server_capabilities = caps
        return types.InitializeResult(capabilities=caps, server_info=result.server_info)

    # Document synchronisation without pygls's workspace copy: `lsp.documents` keeps the
    # configurations this server reads, and nothing reads pygls's copy of every open file,
    # which cost ~0.7 ms of each edit of a 5,000-entry cfg (tests/lsp/test_lsp_sync.py).
    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams):
        yield from self._server_handler_only(types.TEXT_DOCUMENT_DID_OPEN, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        yield from self._server_handler_only(types.TEXT_DOCUMENT_DID_CHANGE, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams):
        yield from self._server_handler_only(types.TEXT_DOCUMENT_DID_CLOSE, params)

    def _server_handler_only(self, method: str, params: object):
        """What pygls's built-in handler does after updating its workspace: the server's own
        handler for ``method``, if it registered one."""
        if (handler := self.fm.features.get(method)) is not None:
            yield handler, (params,), None

    # Cancellation. A `workspace/executeCommand` runs as pygls's generator: the request's
    # future, which `$/cancelRequest` cancels, and the command's own task, started under a
    # name of its own, which went on (a review: a cancelled comparison published its results
    # seconds later; a cancelled bisection switched a rule off). The request's cancellation
    # is passed on to the steps it started.
    def _run_generator(self, future, *, gen, result_future) -> None:
        before = len(self._request_futures)
        super()._run_generator(future, gen=gen, result_future=result_future)
        # the step it started, if still running, is the newest entry (a step done at once
        # has left the table already: see _execute_handler)
        added = max(0, len(self._request_futures) - before)
        for _, started in itertools.islice(reversed(self._request_futures.items()), added):
            result_future.add_done_callback(partial(_cancel_if_cancelled, started))

    def _execute_handler(self, msg_id, handler, callback, args=None, kwargs=None) -> None:
        """pygls's, and a finished handler leaves the table of running requests: pygls
        removes only a request's own entry once answered, and kept every notification's and
        every generator step's (61,001 after 60,000 edits: memory, and time for whatever
        walks the table)."""
        super()._execute_handler(msg_id, handler, callback, args, kwargs)
        future = self._request_futures.get(msg_id)
        if future is not None:
            future.add_done_callback(partial(_forget, self._request_futures, msg_id))

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args):
        """pygls's, but it cancels the requests still running from a copy of their table: a
        cancelled future's callback removes it from the table at once, and pygls's loop over
        the table itself failed ("dictionary changed size during iteration", a review), so
        the client never sent `exit` and killed the server instead."""
        if (handler := self.fm.features.get(types.SHUTDOWN)) is not None:
            yield handler, args, None
        current = self.msg_id  # not this request
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current and not future.done():
                future.cancel()
        self._shutdown = True
        return None

    def notify_text(self, method: str, params: str) -> None:
        """Send a notification whose params are JSON text already (see
        `Converter.diagnostics_text`), framed and logged as pygls's `notify` does."""
        body = f'{{"jsonrpc":"{self.VERSION}","method":{_string(method)},"params":{params}}}'
        self._send_bytes([body.encode(self.CHARSET)])

    def _send_response(self, msg_id, result=None, error=None) -> None:
        """pygls's, except that a `JsonPieces` result (a completion list) is sent as the
        JSON it already is, not serialised again."""
        if error is None and isinstance(result, JsonPieces):
            self._result_types.pop(msg_id, None)
            quoted_id = _string(msg_id) if isinstance(msg_id, str) else str(int(msg_id))
            head = f'{{"id":{quoted_id},"result":'.encode()
            tail = f',"jsonrpc":"{self.VERSION}"}}'.encode()
            self._send_bytes([head, *result.pieces, tail])
            return
        super()._send_response(msg_id, result, error)

    def _send_bytes(self, body: list[bytes]) -> None:
        """Frame, log and write one message given as pieces of its JSON bytes, in one write
        and one copy (a completion list can be megabytes)."""
        if self.writer is None:
            _pygls_log.error("Unable to send data, no available transport!")
            return
        if _pygls_log.isEnabledFor(logging.INFO):
            _pygls_log.info("Sending data: %s", b"".join(body).decode(self.CHARSET))
        if self._include_headers:
            header = (
                f"Content-Length: {sum(map(len, body))}\r\n"
                f"Content-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n"
            )
            body = [header.encode(self.CHARSET), *body]
        self.writer.write(b"".join(body))  # stdio and `serve --tcp` write at once


def _forget(table: dict, msg_id, future) -> None:
    if table.get(msg_id) is future:
        del table[msg_id]


def _cancel_if_cancelled(started, request) -> None:
    if request.cancelled():
        started.cancel()


class FusionSwitchServer(LanguageServer):
    def __init__(self, protocol_cls: type[FusionSwitchProtocol] = FusionSwitchProtocol) -> None:
        super().__init__(NAME, __version__, protocol_cls=protocol_cls)
        self.state = ServerState()

    def capture_client(self, params: types.InitializeParams) -> None:
        self.state.client = ClientFeatures.from_capabilities(params.capabilities)
        logging_setup.set_trace(params.trace)
        self.state.encoding = self.workspace.position_encoding or types.PositionEncodingKind.Utf16

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Log internal errors to the output panel; never a crash pop-up."""
        log(
            self,
            f"fusion-switch: internal error ({getattr(source, '__name__', source)}): {error!r}",
            types.MessageType.Error,
        )


def create_server(
    protocol_cls: type[FusionSwitchProtocol] = FusionSwitchProtocol,
) -> FusionSwitchServer:
    """A server with every feature and command (`protocol_cls`: see `tcp.SessionProtocol`)."""
    from .features.registry import register_all

    server = FusionSwitchServer(protocol_cls)
    logging_setup.install(server)
    register_all(server)
    commands.register(server)
    return server
