"""Where a cursor is: in which object (by key path), on a key, on a value, or between entries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..catalogue import SECTIONS
from .tree import (
    ArrayNode,
    CfgDocument,
    LineEntry,
    Member,
    Node,
    ObjectNode,
    StringNode,
    top_level_key,
)


@dataclass
class Cursor:
    role: Literal["key", "value", "item", "none"]
    path: tuple[str, ...] = ()  # keys from the root to `container`
    container: Node | None = None
    member: Member | None = None  # the member under the cursor (key or value role)
    node: Node | None = None  # the value/item token under the cursor, if any


def switch_section(path: tuple[str, ...]) -> str | None:
    """The section when `path` leads to a rule map `Switch.<GraphFusion|UBFusion>`, else None."""
    if len(path) == 2 and path[0] == "Switch" and path[1] in SECTIONS:
        return path[1]
    return None


def locate(doc: CfgDocument, offset: int) -> Cursor:
    """What the cursor at `offset` is on; `path` holds the keys CANN reads (top level trimmed)."""
    node = doc.root
    path: tuple[str, ...] = ()
    text = doc.text
    if node is None or offset <= node.start:
        return Cursor("none")
    while True:
        closed = getattr(node, "closed", True)
        if offset > node.end or (closed and offset >= node.end):
            return Cursor("none", path)
        if isinstance(node, ArrayNode):
            for item in node.items:
                if item.start <= offset <= item.end:
                    if isinstance(item, ObjectNode | ArrayNode) and item.start < offset:
                        return Cursor("none", path, node)  # no completion inside nested arrays
                    return Cursor("item", path, node, node=item)
            return Cursor("item", path, node)
        if not isinstance(node, ObjectNode):
            return Cursor("none", path)
        members = node.members
        i = _bisect_members(members, offset)
        member = members[i] if i >= 0 else None
        if member is not None:
            if offset < member.key_end or (
                offset == member.key_end and (not member.key_quoted or _unterminated(text, member))
            ):
                if offset >= member.key_start:
                    return Cursor("key", path, node, member)
            elif member.colon is not None and offset > member.colon:
                value = member.value
                if value is None:
                    return Cursor("value", path, node, member)
                if offset < value.start:
                    if "\n" in text[offset : value.start]:  # `"A": |` then the next entry
                        return Cursor("value", path, node, member)
                    return Cursor("value", path, node, member, value)
                if isinstance(value, ObjectNode | ArrayNode):
                    inside = offset > value.start and (
                        offset < value.end or (not value.closed and offset <= value.end)
                    )
                    if inside:
                        node = value
                        path = (*path, member.key if path else top_level_key(member.key))
                        continue
                    if offset <= value.start:
                        return Cursor("value", path, node, member, value)
                elif offset < value.end or (offset == value.end and not _closed_string(value)):
                    return Cursor("value", path, node, member, value)
            elif (member.colon is None or offset <= member.colon) and "\n" not in text[
                member.key_end : offset
            ]:
                return Cursor("none", path, node, member)  # after a key, before its colon
            if (
                member.value is not None
                and offset >= member.end
                and (member.comma is None or offset <= member.comma)
                and "\n" not in text[member.end : offset]
            ):
                return Cursor("none", path, node, member)  # right after a value
        return Cursor("key", path, node)  # a new key between entries


def _bisect_members(members: list[Member], offset: int) -> int:
    lo, hi = 0, len(members)
    while lo < hi:
        mid = (lo + hi) // 2
        if members[mid].start <= offset:
            lo = mid + 1
        else:
            hi = mid
    return lo - 1


def _closed_string(node: Node) -> bool:
    return isinstance(node, StringNode) and node.closed


def _unterminated(text: str, member: Member) -> bool:
    return member.key_end - member.key_start < 2 or text[member.key_end - 1] != '"'


def line_at(doc: CfgDocument, offset: int) -> tuple[int, int]:
    """Start and end (before the line break) of the line holding `offset`."""
    text = doc.text
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    end = len(text) if end < 0 else end
    if end > start and text[end - 1] == "\r":
        end -= 1
    return start, end


def entry_on_line(doc: CfgDocument, offset: int) -> LineEntry | None:
    start, _ = line_at(doc, offset)
    for e in doc.entries:
        if e.line_start == start:
            return e
    return None
