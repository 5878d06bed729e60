"""A bare LSP client over a real socket, and a `serve --tcp` process to talk to.

Bare on purpose: the tests send what an attacker or a broken client sends (no initialize, a
wrong token, an HTTP request), which a real LSP client library would refuse to do.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

TIMEOUT = 20.0


class LspSocket:
    def __init__(self, port: int, host: str = "127.0.0.1") -> None:
        self.sock = socket.create_connection((host, port), timeout=TIMEOUT)
        self._buffer = b""
        self._next_id = 0

    def close(self) -> None:
        self.sock.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        self.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def request(self, method: str, params: dict | None = None) -> int:
        self._next_id += 1
        self.send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        return self._next_id

    def notify(self, method: str, params: dict | None = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def _fill(self) -> bool:
        try:
            chunk = self.sock.recv(65536)
        except (ConnectionResetError, TimeoutError):
            return False
        self._buffer += chunk
        return bool(chunk)

    def receive(self) -> dict | None:
        """The next message, or None when the server closed the connection."""
        while b"\r\n\r\n" not in self._buffer:
            if not self._fill():
                return None
        head, rest = self._buffer.split(b"\r\n\r\n", 1)
        length = int(re.search(rb"Content-Length: (\d+)", head).group(1))
        while len(rest) < length:
            self._buffer = head + b"\r\n\r\n" + rest
            if not self._fill():
                return None
            head, rest = self._buffer.split(b"\r\n\r\n", 1)
        self._buffer = rest[length:]
        return json.loads(rest[:length])

    def answer(self, request_id: int) -> dict:
        """The response to `request_id` (server requests get an empty answer meanwhile)."""
        while True:
            message = self.receive()
            assert message is not None, f"connection closed before the answer to {request_id}"
            if message.get("id") == request_id and "method" not in message:
                return message
            if "method" in message and "id" in message:  # e.g. workspace/configuration
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})

    def closed_without_answer(self) -> bool:
        """True when the server closes the connection without having sent a single byte."""
        self.sock.settimeout(TIMEOUT)
        data = b""
        while True:
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            data += chunk
        return data == b"" and self._buffer == b""

    def initialize(self, token: str | None, **options) -> dict:
        if token is not None:
            options["token"] = token
        answer = self.answer(
            self.request(
                "initialize",
                {"processId": None, "rootUri": None, "capabilities": {},
                 "initializationOptions": options},
            )
        )  # fmt: skip
        self.notify("initialized", {})
        return answer


class TcpServer:
    """`fusion-switch serve --tcp 0` in a subprocess; knows its port and token file."""

    def __init__(self, runtime: Path, *extra: str, python: str | None = None) -> None:
        env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}
        if python is not None:  # another interpreter: this checkout and the venv's pure packages
            site = next(Path(sys.prefix, "lib").glob("python3*/site-packages"))
            env["PYTHONPATH"] = os.pathsep.join(
                [str(Path(__file__).parents[2] / "server"), str(site)]
            )
        self.proc = subprocess.Popen(
            [python or sys.executable, "-m", "fusion_switch", "serve", "--tcp", "0", *extra],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.stderr: list[str] = []
        self.port = 0
        self.token_path: Path | None = None
        deadline = time.monotonic() + TIMEOUT
        while not self.port and time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            self.stderr.append(line)
            if match := re.search(r"token in (\S+)", line):
                self.token_path = Path(match.group(1))
            if match := re.search(r"listening on (\S+):(\d+)", line):
                self.host, self.port = match.group(1), int(match.group(2))
        assert self.port, "".join(self.stderr)

    @property
    def token(self) -> str:
        assert self.token_path is not None
        return self.token_path.read_text().strip()

    def connect(self) -> LspSocket:
        return LspSocket(self.port)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()
