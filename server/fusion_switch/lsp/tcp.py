"""`serve --tcp`: one authenticated session per connection, nothing shared between them.

pygls's own TCP mode binds one server object to whichever client connected last, executes
anything that contains a `Content-Length` header (an HTTP POST included) and stops the process
when a client leaves. Here each accepted connection gets:

- strict framing (`framing.read_body`, which stdio reads with too): only
  `Content-Length`/`Content-Type` header lines, a bounded body; anything else (an HTTP request
  line, a header we do not know) closes the connection unanswered;
- authentication: the first message must be `initialize` carrying the token in
  `initializationOptions.token` (compared in constant time), or the connection is closed
  without an answer; the token is removed before the options reach the settings;
- its own `FusionSwitchServer` (own documents, settings, compare job), ended when the client
  disconnects or sends `exit`; the listener and the other sessions go on.

The token comes from `--token-file`, or is generated and written 0600 under the user's runtime
directory (`$XDG_RUNTIME_DIR`, else a private temporary directory); its path goes to stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import json
import logging
import os
import secrets
import signal
import socket
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.protocol.language_server import lsp_method

from .framing import HEADER_LINE_LIMIT, MESSAGE_LIMIT, FramingError, read_body
from .server import (
    FusionSwitchProtocol,
    FusionSwitchServer,
    create_server,
    quiet_when_cancelled,
)

logger = logging.getLogger("fusion_switch.lsp.tcp")

# Before authentication a peer may make us hold at most this much (an initialize is ~10 kB);
# after it, `MESSAGE_LIMIT` (a message may carry a large document, but not unbounded).
FIRST_MESSAGE_LIMIT = 1 << 20
FIRST_MESSAGE_TIMEOUT = 30.0


class TcpSetupError(Exception):
    """A `serve --tcp` configuration we refuse before binding (the message says why)."""


# ----------------------------------------------------------------------------- token


def is_loopback(host: str) -> bool:
    """Whether every address `host` resolves to is a loopback address."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0]).is_loopback for i in infos)


def read_token_file(path: Path) -> str:
    """The token in a user-given file, which only its owner may read."""
    try:
        info = path.stat()
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        raise TcpSetupError(f"--token-file {path}: cannot read: {error}") from None
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise TcpSetupError(
            f"--token-file {path}: readable by other users (mode {stat.filemode(info.st_mode)}); "
            f"run: chmod 600 {path}"
        )
    if len(text) < 16:
        raise TcpSetupError(f"--token-file {path}: the token must be at least 16 characters")
    return text


def runtime_dir() -> tuple[Path, bool]:
    """`$XDG_RUNTIME_DIR` when it is a private directory of ours, else a new private temp dir;
    and whether it is new (removed with the token when the server ends)."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg:
        try:
            info = os.stat(xdg)
            if (
                stat.S_ISDIR(info.st_mode)
                and info.st_uid == os.getuid()
                and not info.st_mode & (stat.S_IRWXG | stat.S_IRWXO)
            ):
                return Path(xdg), False
        except OSError:
            pass
    return Path(tempfile.mkdtemp(prefix="fusion-switch-")), True  # created 0700


def write_new_token(directory: Path) -> tuple[str, Path]:
    """A random token in a new 0600 file (created exclusively, never through a symlink)."""
    token = secrets.token_urlsafe(32)
    path = directory / f"fusion-switch-{os.getpid()}.token"
    path.unlink(missing_ok=True)  # a stale file of an earlier process with our pid
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
    return token, path


# ----------------------------------------------------------------------------- framing


async def read_message(reader: asyncio.StreamReader, limit: int) -> bytes | None:
    """One LSP message body, or None when the peer is gone or the bytes are not LSP framing
    (logged: the connection is closed unanswered)."""
    try:
        return await read_body(reader, limit)
    except FramingError as error:
        logger.warning("fusion-switch: closing a connection: %s", error)
        return None


def authenticated_initialize(body: bytes, token: str) -> dict | None:
    """The `initialize` request in `body` with the token removed, if the token is right."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or message.get("method") != types.INITIALIZE:
        return None
    params = message.get("params")
    options = params.get("initializationOptions") if isinstance(params, dict) else None
    offered = options.get("token") if isinstance(options, dict) else None
    if not isinstance(offered, str) or not hmac.compare_digest(
        offered.encode("utf-8", "surrogatepass"), token.encode("utf-8")
    ):
        return None
    del options["token"]
    return message


# ----------------------------------------------------------------------------- sessions


class _SessionWriter:
    """pygls's writer interface over one connection; `close` ends that session only."""

    def __init__(self, writer: asyncio.StreamWriter, on_close: Callable[[], None]) -> None:
        self._writer = writer
        self._on_close = on_close

    def write(self, data: bytes) -> None:
        if not self._writer.is_closing():
            self._writer.write(data)

    def close(self) -> None:
        self._on_close()


class SessionProtocol(FusionSwitchProtocol):
    """`exit` ends this connection's session, not the process serving the others."""

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args) -> Any:
        if (user_handler := self.fm.features.get(types.EXIT)) is not None:
            yield user_handler, args, None
        if self.writer is not None:
            self.writer.close()


def _end_session(server: FusionSwitchServer) -> None:
    """Stop what the session started: its comparison (child process) and background tasks."""
    state = server.state
    job = state.compare_job
    if job is not None:
        try:
            job.cancel()
        except Exception:
            logger.warning("could not cancel a comparison", exc_info=True)
    for task in [*state.validations.values(), *state.background]:
        task.cancel()


async def _session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, token: str) -> None:
    peer = writer.get_extra_info("peername")
    server: FusionSwitchServer | None = None
    try:
        try:
            body = await asyncio.wait_for(
                read_message(reader, FIRST_MESSAGE_LIMIT), FIRST_MESSAGE_TIMEOUT
            )
        except TimeoutError:
            body = None
        first = authenticated_initialize(body, token) if body is not None else None
        if first is None:
            logger.warning("fusion-switch: closed a connection from %s: not authenticated", peer)
            return
        ended = asyncio.Event()
        server = create_server(protocol_cls=SessionProtocol)
        protocol = server.protocol
        protocol.set_writer(_SessionWriter(writer, ended.set))
        protocol.handle_body(json.dumps(first).encode())
        while not ended.is_set():
            reading = asyncio.ensure_future(read_message(reader, MESSAGE_LIMIT))
            stop = asyncio.ensure_future(ended.wait())
            await asyncio.wait({reading, stop}, return_when=asyncio.FIRST_COMPLETED)
            stop.cancel()
            if not reading.done():
                reading.cancel()
                break
            body = reading.result()
            if body is None:
                break
            protocol.handle_body(body)  # answers what it cannot read, raises nothing
    finally:
        if server is not None:
            _end_session(server)
        writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await writer.wait_closed()


async def _listen(host: str, port: int, token: str) -> None:
    """Serve until SIGTERM (or Ctrl-C), then end the open sessions as their clients would
    (a review: SIGTERM with a session open printed asyncio's traceback of its cancelled task)."""
    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    sessions: dict[asyncio.Task, asyncio.StreamWriter] = {}

    async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        sessions[task] = writer
        try:
            await _session(reader, writer, token)
        except asyncio.CancelledError:  # the server stops: the session ends, said nowhere
            pass
        finally:
            sessions.pop(task, None)

    listener = await asyncio.start_server(connected, host, port, limit=HEADER_LINE_LIMIT * 4)
    for sock in listener.sockets:
        address = sock.getsockname()
        print(f"fusion-switch: listening on {address[0]}:{address[1]}", file=sys.stderr, flush=True)
    async with listener:  # leaving it waits for the connections (Python 3.12.1 on)
        try:
            await stopping.wait()
        finally:  # so they end first (a review: it hung on 3.12 and 3.13 with one open)
            # the sessions' handlers, cancelled now, end in pygls's and asyncio's
            # done-callbacks, which would log each CancelledError with a traceback
            asyncio.get_running_loop().set_exception_handler(quiet_when_cancelled)
            listener.close()
            for task in list(sessions):
                task.cancel()
            if sessions:
                await asyncio.wait(list(sessions), timeout=SESSION_END_TIMEOUT)
            # a client that reads nothing keeps its session flushing for ever (and, from
            # 3.12.1, the listener's close waiting on it: a review): its connection is cut
            for writer in list(sessions.values()):
                writer.transport.abort()
            if sessions:
                await asyncio.wait(list(sessions), timeout=SESSION_END_TIMEOUT)


SESSION_END_TIMEOUT = 2.0  # seconds the open sessions have to end when the server stops


def serve_tcp(host: str, port: int, token_file: str | None) -> int:
    """Check the set-up, then serve until interrupted. Returns the exit status."""
    if token_file is None and not is_loopback(host):
        return _setup_failed(
            f"--host {host} is not a loopback address: other machines could connect. "
            "Give --token-file FILE (a secret only you can read) to serve beyond this machine."
        )
    made: Path | None = None  # the private folder made for a generated token
    token_path: Path | None = None
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        if token_file is not None:
            token = read_token_file(Path(token_file))
        else:
            try:
                folder, new = runtime_dir()
                made = folder if new else None
                token, token_path = write_new_token(folder)
            except OSError as error:
                raise TcpSetupError(
                    f"cannot write a token file in {error.filename}: {error.strerror or error}; "
                    "give --token-file FILE, or set XDG_RUNTIME_DIR to a private folder of yours"
                ) from None
            print(
                f"fusion-switch: token in {token_path} (send it as initializationOptions.token)",
                file=sys.stderr,
                flush=True,
            )
        asyncio.run(_listen(host, port, token))
    except TcpSetupError as error:
        return _setup_failed(str(error))
    except OSError as error:
        message = f"fusion-switch serve: error: cannot listen on {host}:{port}: {error}"
        print(message, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        if token_path is not None:
            token_path.unlink(missing_ok=True)
        if made is not None:
            with contextlib.suppress(OSError):  # not empty: something else is in it now
                made.rmdir()
    return 0


def _setup_failed(why: str) -> int:
    print(f"fusion-switch serve: error: {why}", file=sys.stderr)
    return 2


def _interrupt(signum: int, frame: Any) -> None:
    """SIGTERM ends the listener like Ctrl-C does (the generated token file is removed)."""
    raise KeyboardInterrupt
