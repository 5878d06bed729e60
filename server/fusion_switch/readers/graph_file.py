"""What every graph reader shares: the error type and the first look at a file.

Kept apart from :mod:`.graph` and :mod:`.graph_text` so that both import it and neither imports
the other back (the JSON reader dispatches to the text reader; the text reader needs only this).
"""

from __future__ import annotations

import os


class GraphError(Exception):
    """A graph file that cannot be read; ``str()`` names the file (and line/column if known)."""

    def __init__(
        self, path: str | os.PathLike | None, message: str, line: int = 0, column: int = 0
    ):
        self.path = str(path) if path is not None else "<graph>"
        self.message = message
        self.line = line
        self.column = column
        where = f"{self.path}:{line}:{column}" if line else self.path
        super().__init__(f"{where}: {message}")


_HEAD_BYTES = 4096
_TEXT_CONTROLS = frozenset(b"\t\n\r\f\v\x1b")


def read_graph_head(path: str | os.PathLike) -> bytes:
    """The first bytes of a graph file, after checking it is a non-empty text file.

    Raises :class:`GraphError` for an unreadable, empty or binary file (a dump file or an
    ``.om`` model passed as a graph is the usual mistake), so both readers fail with the
    same clear message instead of a parse error at line 1."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(_HEAD_BYTES)
    except OSError as error:
        raise GraphError(path, f"cannot read: {error.strerror or error}") from None
    if not head.strip(b"\xef\xbb\xbf \t\r\n") and len(head) < _HEAD_BYTES:
        raise GraphError(
            path,
            "empty file; is this an atc/GE graph file? Expected the graph JSON from "
            "atc --mode=5 or a ge_proto_*.txt",
        )
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise GraphError(path, "UTF-16 text; save the graph as UTF-8")
    controls = sum(1 for byte in head if byte < 0x20 and byte not in _TEXT_CONTROLS)
    if b"\x00" in head or controls * 10 > len(head):
        raise GraphError(path, "binary file, not a graph (did you pass a dump file as -f/-cf?)")
    return head
