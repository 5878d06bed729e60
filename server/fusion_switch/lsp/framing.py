"""LSP framing, bounded: both transports (stdio and ``serve --tcp``) read a message with
:func:`read_body`. Only ``Content-Length``/``Content-Type`` header lines and a body of at most
``MESSAGE_LIMIT`` bytes are read; past that the stream cannot be followed (where the next
message starts is unknown), so :class:`FramingError` ends the connection, saying why. pygls's
own stdin reader took any length: ``Content-Length: 999999999999999`` was a MemoryError and a
crash (a review)."""

from __future__ import annotations

import asyncio
import re
from typing import Any, BinaryIO

# A message may carry a large document (a 10 MB paste), but not unbounded.
MESSAGE_LIMIT = 256 << 20
HEADER_LINE_LIMIT = 1024
_CONTENT_LENGTH = re.compile(rb"Content-Length: *(\d{1,20})\r\n", re.IGNORECASE)
_CONTENT_TYPE = re.compile(rb"Content-Type: *[!-~ ]{1,200}\r\n", re.IGNORECASE)


class FramingError(Exception):
    """Bytes that are not LSP framing, or a body over the limit: where the next message
    starts cannot be known, so the connection cannot go on (the message says why)."""


async def read_body(reader: Any, limit: int) -> bytes | None:
    """One LSP message's body; None when the peer has gone (the stream ended, even within a
    message). ``reader`` has asyncio.StreamReader's `readuntil` and `readexactly`."""
    length = None
    for _ in range(8):  # a real client sends one or two header lines
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.LimitOverrunError:
            raise FramingError(f"a header line over {HEADER_LINE_LIMIT} bytes") from None
        except (asyncio.IncompleteReadError, ConnectionError):
            return None
        if len(line) > HEADER_LINE_LIMIT:
            raise FramingError(f"a header line over {HEADER_LINE_LIMIT} bytes")
        if line == b"\r\n":
            break
        match = _CONTENT_LENGTH.fullmatch(line)
        if match is not None and length is None:
            length = int(match.group(1))
        elif _CONTENT_TYPE.fullmatch(line) is None:  # "POST / HTTP/1.1", "Host: ...": not ours
            raise FramingError(f"not LSP framing: a header line {line[:80]!r}")
    else:
        raise FramingError("not LSP framing: no end of the header after 8 lines")
    if length is None:
        raise FramingError("not LSP framing: a header without Content-Length")
    if length > limit:
        raise FramingError(
            f"a message of {length} bytes was announced, more than the {limit >> 20} MiB "
            "a message may have"
        )
    try:
        return await reader.readexactly(length)
    except (asyncio.IncompleteReadError, ConnectionError):
        return None


class BlockingReader:
    """`read_body`'s reader over a blocking binary stream (stdin), each read in a worker
    thread so that the event loop goes on, and only when the loop asks for a message (as
    pygls's stdin reader: after `exit` no thread is left waiting on stdin)."""

    def __init__(self, stream: BinaryIO, executor) -> None:
        self._stream = stream
        self._executor = executor

    async def readuntil(self, separator: bytes) -> bytes:
        loop = asyncio.get_running_loop()
        line = await loop.run_in_executor(
            self._executor, self._stream.readline, HEADER_LINE_LIMIT + 1
        )
        if not line.endswith(separator) and len(line) <= HEADER_LINE_LIMIT:
            raise asyncio.IncompleteReadError(line, None)  # the stream ended
        return line

    async def readexactly(self, n: int) -> bytes:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, _read_exactly, self._stream, n)


def _read_exactly(stream: BinaryIO, n: int) -> bytes:
    """``n`` bytes, read a MiB at a time (a body announced larger than it is holds no more
    memory than it brings)."""
    chunks: list[bytes] = []
    left = n
    while left > 0:
        chunk = stream.read(min(left, 1 << 20))
        if not chunk:
            raise asyncio.IncompleteReadError(b"".join(chunks), n)
        chunks.append(chunk)
        left -= len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)
