"""The parsed form of `fusion_switch.cfg`: nodes with offsets, members, line-format entries, and
the document the parser (:mod:`.syntax`) returns.

Nodes keep plain int offsets and build `Span` objects only when asked: a 5,000-entry file is
parsed on every keystroke.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from itertools import accumulate
from typing import Literal

from .model import Finding, Span


class Node:
    """A JSON value. `start`/`end` are offsets; `kind` names the JSON type."""

    __slots__ = ("end", "kind", "start")

    def __init__(self, kind: str, start: int, end: int) -> None:
        self.kind = kind
        self.start = start
        self.end = end

    @property
    def span(self) -> Span:
        return Span(self.start, self.end)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.kind}, {self.start}, {self.end})"


class StringNode(Node):
    """A string token. `value` is decoded; `closed` is False when the closing quote is missing."""

    __slots__ = ("closed", "value")

    def __init__(self, start: int, end: int, value: str, closed: bool = True) -> None:
        self.kind = "string"
        self.start = start
        self.end = end
        self.value = value
        self.closed = closed


class ScalarNode(Node):
    """A number, `true`, `false`, `null`, or an invalid bare word (kind "invalid")."""

    __slots__ = ("text",)

    def __init__(self, kind: str, start: int, end: int, text: str) -> None:
        super().__init__(kind, start, end)
        self.text = text


class Member:
    """`"key": value` inside an object. `value` is None when it is missing (broken input)."""

    __slots__ = (
        "colon",
        "comma",
        "end",
        "key",
        "key_end",
        "key_quoted",
        "key_start",
        "value",
    )

    def __init__(self, key: str, key_start: int, key_end: int) -> None:
        self.key = key
        self.key_start = key_start
        self.key_end = key_end
        self.key_quoted = True
        self.value: Node | None = None
        self.colon: int | None = None
        self.comma: int | None = None
        self.end = key_end

    @property
    def start(self) -> int:
        """A member starts at its key."""
        return self.key_start

    @property
    def key_span(self) -> Span:
        return Span(self.key_start, self.key_end)

    @property
    def span(self) -> Span:
        """From the key to the end of the value (not including the comma)."""
        return Span(self.start, self.end)

    @property
    def value_span(self) -> Span | None:
        return None if self.value is None else Span(self.value.start, self.value.end)

    def __repr__(self) -> str:
        return f"Member({self.key!r}, {self.start}, {self.end})"


class ObjectNode(Node):
    __slots__ = ("closed", "commas", "members")

    def __init__(self, start: int) -> None:
        super().__init__("object", start, start + 1)
        self.members: list[Member] = []
        self.commas: list[int] = []
        self.closed = False

    def get(self, key: str) -> Member | None:
        """The member CANN uses for `key`: the last one (nlohmann keeps the last duplicate)."""
        for member in reversed(self.members):
            if member.key == key:
                return member
        return None

    def object(self, key: str) -> ObjectNode | None:
        member = self.get(key)
        value = member.value if member else None
        return value if isinstance(value, ObjectNode) else None


class ArrayNode(Node):
    __slots__ = ("closed", "commas", "items")

    def __init__(self, start: int) -> None:
        super().__init__("array", start, start + 1)
        self.items: list[Node] = []
        self.commas: list[int] = []
        self.closed = False


TOP_LEVEL_KEYS = ("Switch", "Priority", "ExceptionalPassOfO1Level")


def top_level_key(key: str) -> str:
    """The top-level key CANN reads: it trims them, so `" Switch "` is `Switch`."""
    trimmed = key.strip()
    return trimmed if trimmed in TOP_LEVEL_KEYS else key


def top_level_member(root: ObjectNode, key: str) -> Member | None:
    """The top-level member CANN reads as `key`: the last one of exactly that name, else the
    last one that is that name with blanks around (which CANN's check then rejects)."""
    spaced = None
    for member in reversed(root.members):
        if member.key == key:
            return member
        if spaced is None and top_level_key(member.key) == key:
            spaced = member
    return spaced


_CONTAINERS = (ObjectNode, ArrayNode)
_Container = ObjectNode | ArrayNode


@dataclass
class LineEntry:
    """One `Name:value` line of the old format (offsets of the trimmed name and value)."""

    name: str
    name_start: int
    name_end: int
    value: str
    value_start: int
    value_end: int
    line_start: int
    line_end: int  # before the line break
    colon: int

    @property
    def name_span(self) -> Span:
        return Span(self.name_start, self.name_end)

    @property
    def value_span(self) -> Span:
        return Span(self.value_start, self.value_end)

    @property
    def span(self) -> Span:
        return Span(self.name_start, self.value_end)


@dataclass
class CfgDocument:
    """The parsed file. `root` is the top JSON value (None for the line format or no value)."""

    text: str
    format: Literal["json", "lines", "empty"]
    syntax_findings: list[Finding] = field(default_factory=list)
    root: Node | None = None
    entries: list[LineEntry] = field(default_factory=list)

    @property
    def has_syntax_errors(self) -> bool:
        return any(f.severity == "error" for f in self.syntax_findings)

    def containers(self) -> Iterator[ObjectNode | ArrayNode]:
        """Every object and array of the tree, outermost first (iterative: any depth)."""
        stack: list[Node] = [self.root] if self.root is not None else []
        while stack:
            node = stack.pop()
            if isinstance(node, ObjectNode):
                yield node
                stack.extend(
                    m.value for m in reversed(node.members) if isinstance(m.value, _CONTAINERS)
                )
            elif isinstance(node, ArrayNode):
                yield node
                stack.extend(i for i in reversed(node.items) if isinstance(i, _CONTAINERS))

    def members(self) -> Iterator[Member]:
        """Every member of every object, in document order."""
        for node in self.containers():
            if isinstance(node, ObjectNode):
                yield from node.members

    def parent_of(self, member: Member) -> ObjectNode | None:
        """The object holding `member` (the tree has no parent links, so it frees by refcount)."""
        for node in self.containers():
            if isinstance(node, ObjectNode) and any(m is member for m in node.members):
                return node
        return None

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based line and column (code points) of an offset, for messages."""
        return self._line_numbers.line_col(offset)

    @cached_property
    def _line_numbers(self) -> LineNumbers:
        return LineNumbers(self.text)


class LineNumbers:
    """Line and column of offsets for messages (lines end at '\\n'; a '\\r' before it is content).

    The line starts are indexed once, so a message per entry of a large file costs a bisection
    each instead of a count from the start of the text.
    """

    __slots__ = ("starts",)

    def __init__(self, text: str) -> None:
        self.starts = list(accumulate((len(line) + 1 for line in text.split("\n")[:-1]), initial=0))

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based line and column (code points) of `offset`."""
        offset = max(offset, 0)
        line = bisect_right(self.starts, offset) - 1
        return line + 1, offset - self.starts[line] + 1
