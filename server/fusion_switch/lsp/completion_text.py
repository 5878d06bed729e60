"""A CompletionList as the JSON bytes lsprotocol would send, built without protocol objects.

5,000 items through attrs objects, cattrs and `json.dumps` cost ten times the completion
itself, and every copy of a 3 MB answer costs milliseconds (fresh pages). So the items of a
shared choice list (`cfg.completion.SharedChoices`) are written once per client kind, as bytes
split around the one part that changes per answer, the range; an answer is a list of pieces
that the protocol joins once, with its envelope and header, into the bytes it writes.
"""

from __future__ import annotations

from json.encoder import encode_basestring_ascii as _string
from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from ..cfg.completion import Choice, Completions, SharedChoices

_KIND = {
    "property": types.CompletionItemKind.Property.value,
    "value": types.CompletionItemKind.Value.value,
    "keyword": types.CompletionItemKind.Keyword.value,
    "snippet": types.CompletionItemKind.Snippet.value,
}
_TEXT_KIND = types.CompletionItemKind.Text.value
_OPEN = b'{"isIncomplete":false,"items":['
_CLOSE = b"]}"


class JsonPieces:
    """A handler's result already written as JSON: the concatenation of `pieces` (ASCII
    bytes). The protocol sends it as it is (`FusionSwitchProtocol._send_response`)."""

    __slots__ = ("pieces",)

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces

    def __str__(self) -> str:
        return b"".join(self.pieces).decode("ascii")


def _item(choice: Choice, markdown: bool, snippets: bool) -> tuple[bytes, bytes]:
    """The item `Converter.completion_item` makes, as lsprotocol serialises it (same keys in
    the same order, None omitted, ASCII only), split around its text edit's range."""
    label, new_text, kind, detail, documentation, sort_text, filter_text, is_snippet = choice
    head = f'{{"label":{_string(label)},"kind":{_KIND.get(kind, _TEXT_KIND)}'
    if detail:
        head += f',"detail":{_string(detail)}'
    if documentation:
        value = _string(documentation)
        if markdown:
            head += f',"documentation":{{"kind":"markdown","value":{value}}}'
        else:
            head += f',"documentation":{value}'
    if sort_text is not None:
        head += f',"sortText":{_string(sort_text)}'
    if filter_text is not None:
        head += f',"filterText":{_string(filter_text)}'
    head += f',"insertTextFormat":{2 if is_snippet and snippets else 1},"textEdit":{{"range":'
    return head.encode("ascii"), f',"newText":{_string(new_text)}}}}}'.encode("ascii")


class _Rendered:
    """A shared choice list's items for one client kind, as the pieces between their ranges:
    `glue[0]` is item 0's text before its range, `glue[i]` (0 < i < n) item i - 1's text after
    its range + `b","` + item i's text before it, `glue[n]` the last item's text after it. So
    all items are `range.join(glue)`, and each part is in memory once (3 MB for 5,001 rules)."""

    __slots__ = ("glue", "position")

    def __init__(self, choices: list[Choice], flags: tuple[bool, bool]) -> None:
        glue = [b""]
        for choice in choices:
            head, tail = _item(choice, *flags)
            glue[-1] += (b"," if len(glue) > 1 else b"") + head
            glue.append(tail)
        self.glue = glue if choices else []
        self.position = {c.label: i for i, c in enumerate(choices)}

    def head(self, i: int) -> bytes:
        """Item i's text before its range (an item starts with `{"label":`, which cannot occur
        inside a JSON string, where every quote is escaped)."""
        piece = self.glue[i]
        return piece if i == 0 else piece[piece.index(_ITEM_START) + 1 :]

    def tail(self, i: int) -> bytes:
        piece = self.glue[i + 1]
        return piece if i + 1 == len(self.glue) - 1 else piece[: piece.index(_ITEM_START)]


_ITEM_START = b',{"label":'


def _with_range(segments: list[bytes], where: bytes) -> list[bytes]:
    """`segments` with `where` between each two (`where.join`, without the copy)."""
    out = [where] * (2 * len(segments) - 1)
    out[::2] = segments
    return out


def _shared(
    choices: SharedChoices, skip: frozenset[str] | set[str], where: bytes, flags: tuple[bool, bool]
) -> list[bytes]:
    """The pieces of the items of `choices` whose label is not in `skip`, comma-separated."""
    rendered = choices.rendered.get(flags)
    if rendered is None:
        rendered = choices.rendered[flags] = _Rendered(choices, flags)
    n = len(rendered.position)
    gone = sorted({rendered.position[x] for x in skip if x in rendered.position}) if skip else []
    if not gone:
        return _with_range(rendered.glue, where) if n else []
    if len(gone) * 2 > n:  # few left: item by item
        kept = sorted(set(range(n)).difference(gone))
        items = [rendered.head(i) + where + rendered.tail(i) for i in kept]
        return [b",".join(items)] if items else []
    # runs of consecutive kept items; new glue only at each gap
    glue = rendered.glue
    segments: list[bytes] = []
    start = 0
    for stop in [*gone, n]:
        if stop > start:  # items start..stop-1
            if segments:
                segments[-1] += b"," + rendered.head(start)
            else:
                segments.append(rendered.head(start))
            segments += glue[start + 1 : stop]
            segments.append(rendered.tail(stop - 1))
        start = stop + 1
    return _with_range(segments, where)


def completion_list(
    completions: Completions, where: str, markdown: bool, snippets: bool
) -> JsonPieces:
    """`CompletionList(is_incomplete=False, items=[...])` for `completions`, every item
    replacing the range whose JSON text is `where`."""
    flags = (markdown, snippets)
    at = where.encode("ascii")
    items: list[list[bytes]] = [
        [h + at + t] for h, t in (_item(c, *flags) for c in completions.fixed)
    ]
    if completions.shared:
        shared = _shared(completions.shared, completions.skip, at, flags)
        if shared:
            items.append(shared)
    items += [[h + at + t] for h, t in (_item(c, *flags) for c in completions.after)]
    pieces = [_OPEN]
    for i, part in enumerate(items):
        if i:
            pieces.append(b",")
        pieces += part
    pieces.append(_CLOSE)
    return JsonPieces(pieces)
