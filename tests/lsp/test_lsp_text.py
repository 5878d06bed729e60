"""Offsets ↔ LSP positions in the three position encodings, with CJK text and emoji."""

from __future__ import annotations

from bisect import bisect_right

import pytest
from fusion_switch.lsp.text import UTF8, UTF16, UTF32, LineIndex, apply_change, code_units
from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol.types import Position, Range, TextDocumentContentChangePartial
from lsprotocol.types import TextDocumentContentChangeWholeDocument as Whole
from pygls.workspace.position_codec import PositionCodec

# "中" is 1 UTF-16 unit / 3 UTF-8 bytes; "😀" is 2 UTF-16 units / 4 UTF-8 bytes.
TEXT = '{\n  "注释😀": "on", "B": 1\n}'
# Line 1 = '  "注释😀": "on", "B": 1' starts at offset 2; offset 8 is just after 😀.


@pytest.mark.parametrize(
    ("offset", "encoding", "expected"),
    [
        (0, UTF16, (0, 0)),
        (1, UTF16, (0, 1)),  # at the newline: end of line 0
        (2, UTF16, (1, 0)),
        (5, UTF16, (1, 3)),  # after '  "'
        (6, UTF16, (1, 4)),  # after 注
        (8, UTF16, (1, 7)),  # after 😀: 2 units
        (8, UTF8, (1, 13)),  # '  "' = 3 bytes, 注 = 3, 释 = 3, 😀 = 4
        (8, UTF32, (1, 6)),
        (len(TEXT), UTF16, (2, 1)),
        (10_000, UTF16, (2, 1)),  # clamped
        (-5, UTF16, (0, 0)),
    ],
)
def test_position_of_offset(offset: int, encoding: str, expected: tuple[int, int]) -> None:
    pos = LineIndex(TEXT).position(offset, encoding)
    assert (pos.line, pos.character) == expected


@pytest.mark.parametrize(
    ("position", "encoding", "expected_offset"),
    [
        ((1, 4), UTF16, 6),
        ((1, 5), UTF16, 7),
        ((1, 6), UTF16, 7),  # inside the surrogate pair of 😀: rounds down to its start
        ((1, 7), UTF16, 8),
        ((1, 4), UTF8, 5),  # inside the 3 bytes of 注: rounds down
        ((1, 6), UTF8, 6),
        ((1, 13), UTF8, 8),
        ((1, 6), UTF32, 8),
        ((1, 999), UTF16, 2 + len('  "注释😀": "on", "B": 1')),  # past line end → line end
        ((99, 0), UTF16, len(TEXT)),  # past last line → end of text
    ],
)
def test_offset_of_position(position: tuple[int, int], encoding: str, expected_offset: int) -> None:
    line, character = position
    assert LineIndex(TEXT).offset(Position(line, character), encoding) == expected_offset


@pytest.mark.parametrize(
    ("text", "offset", "expected"),
    [
        ("a\r\nb", 1, (0, 1)),
        ("a\r\nb", 2, (0, 1)),  # between \r and \n: still the end of line 0
        ("a\r\nb", 3, (1, 0)),
        ("a\rb", 2, (1, 0)),  # lone CR ends a line
        ("a\x0cb\u2028c", 4, (0, 4)),  # form feed / LINE SEPARATOR do not end LSP lines
    ],
)
def test_lsp_line_terminators(text: str, offset: int, expected: tuple[int, int]) -> None:
    pos = LineIndex(text).position(offset)
    assert (pos.line, pos.character) == expected


@pytest.mark.parametrize(
    ("text", "encoding", "units"),
    [
        ("abc", UTF16, 3),
        ("中文", UTF16, 2),
        ("中文", UTF8, 6),
        ("😀", UTF16, 2),
        ("😀", UTF8, 4),
        ("😀", UTF32, 1),
        ("\ud800", UTF16, 1),
    ],
)
def test_code_units(text: str, encoding: str, units: int) -> None:
    assert code_units(text, encoding) == units


LINE_TEXT = st.text(alphabet=st.sampled_from(list('ab "{}:,中文😀\t')), max_size=30)


@given(
    lines=st.lists(LINE_TEXT, min_size=1, max_size=6),
    encoding=st.sampled_from([UTF8, UTF16, UTF32]),
)
def test_agrees_with_pygls_codec(lines: list[str], encoding: str) -> None:
    """pygls's PositionCodec is the oracle for plain \\n-separated text."""
    text = "\n".join(lines)
    index = LineIndex(text)
    codec = PositionCodec(encoding)
    pygls_lines = text.splitlines(True) or [""]
    for offset in range(len(text) + 1):
        ours = index.position(offset, encoding)
        line = ours.line
        column = offset - index.starts[line]
        theirs = codec.position_to_client_units(pygls_lines, Position(line, column))
        assert (ours.line, ours.character) == (theirs.line, theirs.character)
        assert index.offset(ours, encoding) == offset


@given(
    text=st.text(alphabet=st.sampled_from(list("a中😀\r\n\x0c")), max_size=40),
    encoding=st.sampled_from([UTF8, UTF16, UTF32]),
)
def test_offsets_round_trip(text: str, encoding: str) -> None:
    index = LineIndex(text)
    for offset in range(len(text) + 1):
        back = index.offset(index.position(offset, encoding), encoding)
        inside_crlf = 0 < offset < len(text) and text[offset - 1 : offset + 1] == "\r\n"
        assert back == (offset - 1 if inside_crlf else offset)


# Long lines are counted from marks every _STEP characters (one JSON line of a whole file):
# lone surrogates included, as an editor may send them, and positions inside a character.
LONG_LINE = st.text(alphabet=st.sampled_from(list("a中😀\ud800\udc00")), min_size=200, max_size=900)


@settings(deadline=None)
@given(
    lines=st.lists(LONG_LINE, min_size=1, max_size=3),
    encoding=st.sampled_from([UTF8, UTF16, UTF32]),
    wanted=st.lists(st.integers(min_value=0, max_value=4000), max_size=20),
)
def test_long_lines_count_as_short_ones(lines: list[str], encoding: str, wanted: list[int]) -> None:
    text = "\r\n".join(lines)
    index = LineIndex(text)
    for line in range(len(lines)):
        start, end = index.starts[line], index.line_end(line)
        before = [0]  # code units before each character of the line, counted one by one
        for char in text[start:end]:
            before.append(before[-1] + code_units(char, encoding))
        for offset in range(start, end + 1):
            assert index.line_character(offset, encoding) == (line, before[offset - start])
        for units in wanted:
            # the last character that starts at or before the unit (the line's end past it)
            expected = bisect_right(before, units) - 1
            assert index.offset(Position(line, units), encoding) == start + expected


@pytest.mark.parametrize(
    ("start", "end", "new", "expected"),
    [
        ((1, 4), (1, 7), "X", '{\n  "注X": "on", "B": 1\n}'),  # replaces 释😀 (UTF-16 3 units)
        ((0, 1), (2, 0), "", "{}"),
        ((2, 1), (2, 1), "\n", TEXT + "\n"),
    ],
)
def test_apply_incremental_change(start, end, new, expected) -> None:
    change = TextDocumentContentChangePartial(
        range=Range(Position(*start), Position(*end)), text=new
    )
    assert apply_change(TEXT, LineIndex(TEXT), change, UTF16) == expected


def test_apply_whole_document_change() -> None:
    assert apply_change(TEXT, LineIndex(TEXT), Whole(text="x"), UTF16) == "x"
