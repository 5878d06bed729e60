"""`fusion-switch serve` over stdio, driven byte by byte by a bare client (as a broken or
hostile client would write, which a real LSP client library refuses to send).

What a review found, each answered here:
- an extra catalogue that is not a regular file (a FIFO, /dev/zero, /dev/stdin) or that is
  huge hung `initialize` or grew the server's memory until the kernel killed it; the command
  line's `--catalogue` read it the same way;
- a `Content-Length` of 999999999999999 crashed the server with MemoryError;
- a request pygls could not structure (a negative position, a character of 2^40, a body that
  is not UTF-8, JSON nested 100,000 deep) was never answered, and a `didChange` rejected that
  way was dropped, the server's copy of the document silently diverging from the editor's;
- requests after `shutdown` were ignored, and `exit` without `shutdown` exited with status 0.

Each wait has a generous guard against a server that never answers (the behaviour under
test): nothing here measures time.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

GUARD = 60.0  # seconds before a wait counts as "never answered"
MEMORY_LIMIT = 4 << 30  # address space of a server that might read /dev/zero to the end
URI = "file:///transport/fusion_switch.cfg"
ON = '{"Switch": {"GraphFusion": {"ALL": "on"}}}'
LAUNCH = (
    "import resource, sys; "
    "limit = int(sys.argv[1]); "
    "limit and resource.setrlimit(resource.RLIMIT_AS, (limit, limit)); "
    "from fusion_switch.cli import main; sys.exit(main(['serve']))"
)


class StdioServer:
    """A server process and a thread reading what it writes; server requests get null."""

    def __init__(self, folder: Path, memory_limit: int = 0) -> None:
        self.stderr_path = folder / "server.stderr"
        with open(self.stderr_path, "wb") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, "-c", LAUNCH, str(memory_limit)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd=folder,
            )
        self.messages: list[dict] = []
        self.closed = False
        self._changed = threading.Condition()
        self._next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        try:
            while True:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    byte = stream.read(1)
                    if not byte:
                        return
                    head += byte
                length = int(re.search(rb"Content-Length: (\d+)", head).group(1))
                message = json.loads(stream.read(length))
                with self._changed:
                    self.messages.append(message)
                    self._changed.notify_all()
                if "id" in message and "method" in message:
                    self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
        except (OSError, ValueError):
            return
        finally:
            with self._changed:
                self.closed = True
                self._changed.notify_all()

    # ---------------------------------------------------------------- writing
    def send_raw(self, data: bytes) -> None:
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def send_body(self, body: bytes) -> None:
        self.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def send(self, message: dict) -> None:
        with contextlib.suppress(OSError):  # the server is gone: the test's waits say so
            self.send_body(json.dumps(message).encode())

    def request(self, method: str, params: object = None) -> int:
        self._next_id += 1
        self.send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        return self._next_id

    def notify(self, method: str, params: object = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    # ---------------------------------------------------------------- reading
    def wait_for(self, found, what: str) -> dict:
        """The first message `found(message)` accepts, waiting for it if needed."""
        with self._changed:
            seen = 0
            while True:
                for message in self.messages[seen:]:
                    if found(message):
                        return message
                seen = len(self.messages)
                if self.closed:
                    raise AssertionError(f"the server closed its output before {what}")
                if not self._changed.wait(GUARD):
                    raise AssertionError(f"no {what} (the server never sent it)")

    def answer(self, msg_id) -> dict:
        return self.wait_for(
            lambda m: "method" not in m and m.get("id") == msg_id, f"answer to {msg_id!r}"
        )

    def call(self, method: str, params: object = None) -> dict:
        return self.answer(self.request(method, params))

    def shown(self) -> list[str]:
        """Every window/showMessage text so far."""
        with self._changed:
            return [
                m["params"]["message"]
                for m in self.messages
                if m.get("method") == "window/showMessage"
            ]

    def exit_status(self) -> int:
        try:
            return self.process.wait(GUARD)
        except subprocess.TimeoutExpired:
            raise AssertionError("the server did not end") from None

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    # ---------------------------------------------------------------- LSP
    def initialize(self, options: object = None) -> dict:
        answer = self.call(
            "initialize",
            {
                "processId": None,
                "rootUri": None,
                "capabilities": {"window": {"showMessage": {}}},
                "initializationOptions": options,
            },
        )
        self.notify("initialized", {})
        return answer

    def open(self, text: str, uri: str = URI, version: int = 1) -> None:
        self.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "json", "version": version, "text": text}},
        )

    def hover(self, line: int = 0, character: int = 3, uri: str = URI) -> dict:
        position = {"line": line, "character": character}
        return self.call("textDocument/hover", {"textDocument": {"uri": uri}, "position": position})

    def formatting(self, uri: str = URI) -> dict:
        options = {"tabSize": 2, "insertSpaces": True}
        return self.call(
            "textDocument/formatting", {"textDocument": {"uri": uri}, "options": options}
        )

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):
                stream.close()


@pytest.fixture
def start(tmp_path):
    """`start(memory_limit=0)` starts a server; every one started is stopped afterwards."""
    started: list[StdioServer] = []

    def run(memory_limit: int = 0) -> StdioServer:
        folder = tmp_path / f"server{len(started)}"
        folder.mkdir()
        started.append(StdioServer(folder, memory_limit))
        return started[-1]

    yield run
    for server in started:
        server.stop()


def _apply(text: str, edits: list[dict]) -> str:
    """LSP text edits on a one-line-per-line text (ASCII: UTF-16 units are characters)."""
    lines = text.split("\n")

    def offset(position: dict) -> int:
        return sum(len(line) + 1 for line in lines[: position["line"]]) + position["character"]

    spans = sorted(
        ((offset(e["range"]["start"]), offset(e["range"]["end"]), e["newText"]) for e in edits),
        reverse=True,
    )
    for begin, end, new in spans:
        text = text[:begin] + new + text[end:]
    return text


# ----------------------------------------------------------------------------- catalogue files


@pytest.fixture
def fifo(tmp_path) -> Path:
    path = tmp_path / "catalogue.fifo"
    os.mkfifo(path)
    return path


@pytest.fixture
def huge_file(tmp_path) -> Path:
    """A 33 MiB file (sparse: it takes no disk), over the size a catalogue may have."""
    path = tmp_path / "huge_catalogue.json"
    with open(path, "wb") as handle:
        handle.truncate(33 << 20)
    return path


def _refused(shown: list[str], path: str, why: str) -> bool:
    return any(path in message and why in message for message in shown)


def test_initialize_refuses_extra_files_that_are_not_regular_files(start, fifo):
    server = start(memory_limit=MEMORY_LIMIT)
    answer = server.initialize({"catalogue.extraFiles": [str(fifo), "/dev/zero"]})
    assert "capabilities" in answer["result"]
    server.open(ON)
    assert server.hover()["result"] is not None  # the built-in catalogue is in use
    shown = server.shown()
    assert _refused(shown, str(fifo), "not a regular file"), shown
    assert _refused(shown, "/dev/zero", "not a regular file"), shown


def test_a_settings_change_refuses_stdin_and_oversized_files(start, huge_file):
    server = start(memory_limit=MEMORY_LIMIT)
    server.initialize()
    server.open(ON)
    server.hover()
    files = [str(huge_file), "/dev/stdin"]
    server.notify(
        "workspace/didChangeConfiguration",
        {"settings": {"fusionSwitch": {"catalogue": {"extraFiles": files}}}},
    )
    assert server.hover()["result"] is not None  # the protocol stream was not read as a file
    shown = server.shown()
    assert _refused(shown, "/dev/stdin", "not a regular file"), shown
    assert _refused(shown, str(huge_file), "more than"), shown
    assert server.process.poll() is None


def test_a_catalogue_named_through_a_symlink_still_loads(start, tmp_path):
    catalogue = tmp_path / "real.json"
    rule = {"name": "TransportTestOnlyPass", "section": "GraphFusion"}
    catalogue.write_text(json.dumps({"rules": [rule]}), encoding="utf-8")
    link = tmp_path / "link.json"
    link.symlink_to(catalogue)
    server = start()
    server.initialize({"catalogue": {"extraFiles": [str(link)]}})
    server.open('{"Switch": {"GraphFusion": {"TransportTestOnlyPass": "off"}}}')
    published = server.wait_for(
        lambda m: m.get("method") == "textDocument/publishDiagnostics", "diagnostics"
    )
    assert [d["code"] for d in published["params"]["diagnostics"]] == []
    assert server.shown() == []


def test_the_command_line_refuses_the_same_files(tmp_path, fifo, huge_file):
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_text(ON + "\n", encoding="utf-8")
    command = [sys.executable, "-m", "fusion_switch", "check", str(cfg)]
    for path, why in ((fifo, "not a regular file"), (huge_file, "more than")):
        try:
            done = subprocess.run(
                [*command, "--catalogue", str(path)],
                capture_output=True,
                text=True,
                timeout=GUARD,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            raise AssertionError(f"check --catalogue {path} never ended") from None
        assert str(path) in done.stderr and why in done.stderr, done.stderr


# ----------------------------------------------------------------------------- framing


def test_an_oversized_message_ends_the_server_with_a_clear_error(start):
    server = start()
    server.initialize()
    server.send_raw(b"Content-Length: 999999999999999\r\n\r\n{}")
    assert server.exit_status() == 1
    said = server.wait_for(
        lambda m: m.get("method") == "window/showMessage" and m["params"]["type"] == 1,
        "error shown to the user",
    )["params"]["message"]
    assert "999999999999999" in said and "restart" in said.lower()
    assert "Traceback" not in server.stderr()
    assert "999999999999999" in server.stderr()


def test_a_header_that_is_not_lsp_framing_ends_the_server_with_a_clear_error(start):
    server = start()
    server.initialize()
    server.send_raw(b"POST / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert server.exit_status() == 1
    assert "Traceback" not in server.stderr()
    assert any("framing" in message for message in server.shown())


# ----------------------------------------------------------------------------- invalid messages


def _hover_body(position: str, uri: str = URI) -> bytes:
    """A hover request, id 71; a "\\xff" in `uri` becomes that byte, which is not UTF-8."""
    return (
        (
            '{"jsonrpc": "2.0", "id": 71, "method": "textDocument/hover", "params": '
            f'{{"textDocument": {{"uri": "{uri}"}}, "position": {position}}}}}'
        )
        .encode()
        .replace(b"\\xff", b"\xff")
    )


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (_hover_body('{"line": -1, "character": -1}'), -32602),
        (_hover_body('{"line": 0, "character": 1099511627776}'), -32602),
        (_hover_body('{"line": 0}'), -32602),
        (_hover_body('{"line": 0, "character": 0}', uri="file:///a\\xff.cfg"), -32700),
        (_hover_body("[" * 100_000 + "]" * 100_000), -32700),
    ],
    ids=["negative", "2^40", "missing", "not-utf-8", "deep"],
)
def test_a_request_that_cannot_be_read_is_answered_with_an_error(start, body, code):
    server = start()
    server.initialize()
    server.open(ON)
    server.send_body(body)
    error = server.answer(71)["error"]
    assert error["code"] == code
    assert "textDocument/hover" in error["message"]
    assert server.hover()["result"] is not None  # and the server goes on


def test_a_body_without_a_readable_id_gets_a_parse_error_with_a_null_id(start):
    server = start()
    server.initialize()
    server.send_body(b'{"jsonrpc": "2.0", "method": ')
    error = server.wait_for(lambda m: "error" in m and m.get("id") is None, "parse error")
    assert error["error"]["code"] == -32700
    server.open(ON)
    assert server.hover()["result"] is not None


OFF = '{"Switch": {"GraphFusion": {"ALL": "off"}}}'


def _change_body(version: str, text: str, extra: str = "") -> bytes:
    """A didChange replacing the whole text; a "\\xff" in `text` becomes that byte."""
    return (
        (
            '{"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {'
            f'"textDocument": {{"uri": "{URI}", "version": {version}}},'
            f' "contentChanges": [{{"text": {json.dumps(text)}}}]{extra}}}}}'
        )
        .encode()
        .replace(b"\\\\xff", b"\xff")
    )


@pytest.mark.parametrize(
    "body",
    [
        _change_body(str(2**31), OFF),
        _change_body("2", OFF.replace("off", "o\\xff")),
        _change_body("2", OFF, ', "x": ' + "[" * 100_000 + "]" * 100_000),
        # the document named only after 100 kB: which one changed cannot be told
        (
            '{"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {'
            f'"contentChanges": [{{"text": {json.dumps(OFF + " " * 100_000)}}}], '
            f'"textDocument": {{"uri": "{URI}", "version": 2}}, "x": '
            + "[" * 100_000
            + "]" * 100_000
            + "}}"
        ).encode(),
    ],
    ids=["version-2^31", "not-utf-8", "deep", "named-late"],
)
def test_a_change_that_cannot_be_applied_stops_following_the_document(start, body):
    server = start()
    server.initialize()
    server.open(ON)
    server.hover()
    server.send_body(body)  # the editor now holds OFF (or about), the server cannot know it
    formatted = server.formatting()
    assert not formatted.get("result"), "edits computed on a copy the editor no longer has"
    warning = server.wait_for(
        lambda m: m.get("method") == "window/showMessage" and "fusion_switch.cfg" in json.dumps(m),
        "warning about the document",
    )
    assert "reopen" in warning["params"]["message"].lower()
    # reopened, it is followed again, from the editor's text
    server.notify("textDocument/didClose", {"textDocument": {"uri": URI}})
    server.open(OFF, version=3)
    edits = server.formatting()["result"]
    assert json.loads(_apply(OFF, edits)) == json.loads(OFF)
    assert server.process.poll() is None


# ----------------------------------------------------------------------------- lifecycle


def test_requests_after_shutdown_are_invalid_and_exit_then_succeeds(start):
    server = start()
    server.initialize()
    server.open(ON)
    assert server.call("shutdown")["result"] is None
    error = server.hover()["error"]
    assert error["code"] == -32600
    assert "shut" in error["message"]
    server.notify("exit")
    assert server.exit_status() == 0


def test_exit_without_shutdown_exits_with_status_1(start):
    server = start()
    server.initialize()
    server.notify("exit")
    assert server.exit_status() == 1
    assert "Traceback" not in server.stderr()
