"""The pygls server object: state, capability negotiation, error reporting, feature wiring,
and how both `serve` and `serve --tcp` take messages in (framing in `framing`, what cannot
be read in `unreadable`).

Handlers live in `lsp/features/` (one module per LSP method or a small group) and commands
in `lsp/commands.py`; each module's `register(server)` attaches its handlers here.

Transport (pygls's own stdio loop read any `Content-Length`, and dropped with a log line
whatever it could not read, a review found):
- framing (`framing.read_body`): only `Content-Length`/`Content-Type` header lines and a body
  of at most `MESSAGE_LIMIT` bytes. Past that the stream cannot be followed (where the next
  message starts is unknown), so the connection ends with a clear error (stdio: the process
  ends, status 1);
- every message is answered or acted on (`FusionSwitchProtocol.handle_body`): a request that
  is not JSON or whose params do not fit the protocol gets an error response with its id; a
  document notification that cannot be applied ends the server's copy of that document (the
  editor is asked to reopen it), never a copy that differs from the editor's; requests after
  `shutdown` get InvalidRequest; `exit` without `shutdown` ends with status 1.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import sys
import threading
from functools import partial
from json.encoder import encode_basestring_ascii as _string
from typing import Any, BinaryIO

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import RPCRequest
from pygls.protocol.language_server import lsp_method

from .. import __version__
from . import commands, logging_setup
from .capabilities import ClientFeatures, server_capabilities
from .completion_text import JsonPieces
from .documents import file_name, is_fusion_switch_config
from .framing import MESSAGE_LIMIT, BlockingReader, FramingError, read_body
from .safety import log, show
from .state import ServerState
from .unreadable import (
    DOCUMENT_NOTIFICATIONS,
    INVALID_REQUEST,
    Unreadable,
    validation_problem,
)

NAME = "fusion-switch"
logger = logging.getLogger("fusion_switch.lsp")
_pygls_log = logging.getLogger("pygls.protocol.json_rpc")  # where pygls logs what it sends


class _AnsweredNow(logging.Filter):
    """pygls logs a message it cannot structure with a traceback, as an error; such a message
    is answered now (`Unreadable`) and said in one line in the client's log: the traceback
    is for debugging only."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.DEBUG and record.msg == "Unable to deserialize message\n%s":
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


_pygls_log.addFilter(_AnsweredNow())


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

    # Reading messages. pygls raised from inside `json.loads` when a message did not fit the
    # protocol's types, and its loop only logged it: a request was never answered, a
    # `didChange` was dropped and the server went on with a copy the editor no longer had.
    def handle_body(self, body: bytes) -> None:
        """One message, as the JSON bytes of its body: parsed, structured and handled; one
        that cannot be read is answered (`Unreadable`), never only logged."""
        try:
            message = json.loads(body, object_hook=self.structure_message)
        except RecursionError:
            message = Unreadable.salvaged(body, "its JSON is nested too deep")
        except UnicodeDecodeError as error:
            message = Unreadable.salvaged(body, f"not UTF-8 (byte {error.start} of the body)")
        except ValueError as error:
            message = Unreadable.salvaged(body, f"not JSON ({error})")
        if not isinstance(message, Unreadable) and not hasattr(message, "jsonrpc"):
            message = Unreadable.of(message, "not a JSON-RPC message", INVALID_REQUEST)
        try:
            self.handle_message(message)
        except Exception as error:  # one bad message must not end the connection
            self._server.report_server_error(error, type(error))

    def structure_message(self, data: dict[str, Any]):
        """pygls's, except that a message whose params do not fit the protocol's types comes
        back as `Unreadable` (pygls raised, losing its id) for `handle_message` to answer."""
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            return Unreadable.of(data, validation_problem(error.__cause__ or error))

    def handle_message(self, message) -> None:
        if isinstance(message, Unreadable):
            self._unreadable(message)
        elif self._shutdown and isinstance(message, RPCRequest) and message.method != types.EXIT:
            # pygls ignored them: the client waited for ever (LSP: InvalidRequest)
            self._send_error(
                message.id,
                INVALID_REQUEST,
                f"{message.method}: the server is shutting down (shutdown was received); "
                "only exit is accepted now",
            )
        else:
            super().handle_message(message)

    def _unreadable(self, message: Unreadable) -> None:
        method, msg_id, why = message.method, message.id, message.problem
        if method == types.EXIT:  # still the client's wish to end the server
            super().handle_message(_Exit())
        elif method is not None and msg_id is not None:  # a request
            self._send_error(msg_id, message.code, f"{method}: {why}")
            log(self._server, f"fusion-switch: answered {method} with an error: {why}")
        elif message.answer:  # the client's answer to a request of ours: it fails
            future = self._request_futures.pop(msg_id, None)
            if future is not None and not future.done():
                future.set_exception(JsonRpcInvalidParams(f"unreadable answer: {why}"))
            log(self._server, f"fusion-switch: an answer of the editor's was unreadable: {why}")
        elif method is None:  # what it is cannot be told: JSON-RPC's answer to that
            self._send_error(msg_id, message.code, f"a message could not be read: {why}")
        elif method in DOCUMENT_NOTIFICATIONS:
            self._stop_following(message, why)
        else:
            log(
                self._server,
                f"fusion-switch: ignored a {method} notification: {why}",
                types.MessageType.Warning,
            )

    def _stop_following(self, message: Unreadable, why: str) -> None:
        """A document notification that cannot be applied: the server's copy of the document
        would differ from the editor's from now on, so it is dropped, as if closed (its
        diagnostics cleared), and the user asked to reopen the file. A change whose document
        cannot be told drops every open one."""
        documents, uri = self._server.state.documents, message.uri
        if uri is not None:
            dropped = [uri] if documents.get(uri) is not None else []
        elif message.method == types.TEXT_DOCUMENT_DID_CHANGE:
            dropped = [doc.uri for doc in documents]
        else:
            dropped = []
        for gone in dropped:
            closing = types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(gone))
            self._handle_notification(types.TEXT_DOCUMENT_DID_CLOSE, closing)
        if message.method != types.TEXT_DOCUMENT_DID_CLOSE and (
            dropped
            or (
                message.method == types.TEXT_DOCUMENT_DID_OPEN
                and uri is not None
                and is_fusion_switch_config(uri, message.language_id)
            )
        ):
            names = ", ".join(file_name(u) for u in dropped or [uri])
            show(
                self._server,
                f"fusion-switch: the editor's {message.method} could not be read ({why}); "
                f"the server stopped checking {names} rather than work on a copy that differs "
                "from the editor's. Close and reopen the file to check it again.",
            )
        else:
            log(self._server, f"fusion-switch: ignored {message.method} of {uri}: {why}")

    def _send_error(self, msg_id, code: int, text: str) -> None:
        self._send_response(msg_id, error=types.ResponseError(code=code, message=text))

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


class _Exit:
    """An `exit` notification (its params could not be read, which it has no use for)."""

    jsonrpc = LanguageServerProtocol.VERSION
    method = types.EXIT
    params = None


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
        self.state.scopes.workspace = self._workspace_folders

    def _workspace_folders(self) -> tuple[list[str], str | None]:
        """The workspace folders' URIs and the root path, as the client declared them (and
        changed them since); none before `initialize`."""
        try:
            workspace = self.workspace
        except RuntimeError:
            return [], None
        return [folder.uri for folder in workspace.folders.values()], workspace.root_path

    def capture_client(self, params: types.InitializeParams) -> None:
        self.state.client = ClientFeatures.from_capabilities(params.capabilities)
        logging_setup.set_trace(params.trace)
        self.state.encoding = self.workspace.position_encoding or types.PositionEncodingKind.Utf16

    def start_stdio(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> int:
        """pygls's `start_io`, reading with `read_body` (bounded) and `handle_body` (every
        message answered). Returns the exit status: `exit`'s (1 without `shutdown` first, as
        LSP asks; pygls's loop lost it), 1 when the stream cannot be followed, else 0."""
        self._stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        reader = BlockingReader(stdin or sys.stdin.buffer, self.thread_pool)
        try:
            return asyncio.run(self._serve(reader))
        except SystemExit as stop:  # `exit`, handled in a callback of the loop
            return _status(stop)
        except BrokenPipeError:
            logger.error("fusion-switch: the editor closed the connection; the server stops")
            return 0
        except KeyboardInterrupt:  # as pygls's start_io
            return 0
        finally:
            self.shutdown()

    async def _serve(self, reader: BlockingReader) -> int:
        try:
            while not self._stop_event.is_set():
                try:
                    body = await read_body(reader, MESSAGE_LIMIT)
                except FramingError as error:
                    self._stream_lost(error)
                    return 1
                if body is None:  # the editor closed stdin
                    return 0
                try:
                    self.protocol.handle_body(body)
                except SystemExit as stop:  # `exit` (pygls's handler calls sys.exit)
                    return _status(stop)
            return 0
        finally:
            # the handlers still running are cancelled now, and pygls's done-callbacks
            # would log each CancelledError with a traceback
            asyncio.get_running_loop().set_exception_handler(quiet_when_cancelled)

    def _stream_lost(self, error: FramingError) -> None:
        """The messages cannot be followed any more (no skipping to the next one: where it
        starts is unknown), so the server ends, saying why where the user sees it."""
        message = (
            f"fusion-switch: the editor's messages cannot be read any more: {error}. Where "
            "the next one starts cannot be known, so the language server stops; restart it."
        )
        logger.error("%s", message)
        show(self, message, types.MessageType.Error)

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Log internal errors to the output panel; never a crash pop-up."""
        log(
            self,
            f"fusion-switch: internal error ({getattr(source, '__name__', source)}): {error!r}",
            types.MessageType.Error,
        )


def quiet_when_cancelled(loop: asyncio.AbstractEventLoop, context: dict) -> None:
    """An event loop's exception handler that says nothing of a cancelled task's end."""
    if not isinstance(context.get("exception"), asyncio.CancelledError):
        loop.default_exception_handler(context)


def _status(stop: SystemExit) -> int:
    code = stop.code
    return code if isinstance(code, int) else 0 if code is None else 1


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
