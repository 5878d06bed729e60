"""Offsets (Python `str` indexes, what the pure layer speaks) ↔ LSP positions.

Lines end at `\\n`, `\\r\\n` or `\\r`, exactly as the LSP specification says (Python's
`str.splitlines`, which pygls's `TextDocument` uses, also splits at form feeds, `\\x1c`,
`\\u2028`... and would put diagnostics on the wrong line for such text). `character` counts
code units of the negotiated position encoding: UTF-16 (the default), UTF-8 or UTF-32, the
same three pygls's `PositionCodec` supports (the tests check both agree). Conversions are
O(log lines + min(line length, _STEP)): a long non-ASCII line is counted once per encoding in
steps of `_STEP` characters, so a 10 MB document with many findings stays cheap, and so does
a whole file on one line (one JSON line of 5,000 rules took 0.4 s for its symbols).
"""

from __future__ import annotations

from bisect import bisect_right

from lsprotocol import types

from ..cfg.lines import line_starts

UTF8 = types.PositionEncodingKind.Utf8
UTF16 = types.PositionEncodingKind.Utf16
UTF32 = types.PositionEncodingKind.Utf32


def code_units(text: str, encoding: str) -> int:
    """Length of `text` in code units of `encoding` (lone surrogates count as one unit)."""
    if encoding == UTF32 or text.isascii():
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


_STEP = 256  # characters between two of a long line's counted marks


def _unit_width(char: str, encoding: str) -> int:
    cp = ord(char)
    if encoding == UTF8:
        return 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4
    if encoding == UTF32:
        return 1
    return 2 if cp > 0xFFFF else 1


class LineIndex:
    """Where each line of one text starts; built once per text version."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.ascii = text.isascii()  # then characters are code units in every encoding
        self.starts = line_starts(text, self.ascii)
        # (line, encoding) -> code units from the line's start to each _STEP-th character
        self._marks: dict[tuple[int, str], list[int]] = {}

    @property
    def line_count(self) -> int:
        return len(self.starts)

    def line_end(self, line: int) -> int:
        """Offset just before the line's terminator (or the end of the text)."""
        if line + 1 < len(self.starts):
            end = self.starts[line + 1] - 1
            if self.text[end] == "\n" and end > 0 and self.text[end - 1] == "\r":
                end -= 1
            return max(end, self.starts[line])
        return len(self.text)

    def line_character(self, offset: int, encoding: str = UTF16) -> tuple[int, int]:
        """(line, character) of a code-point offset; offsets outside the text are clamped."""
        offset = min(max(offset, 0), len(self.text))
        starts = self.starts
        line = bisect_right(starts, offset) - 1
        start = starts[line]
        # An offset inside a CRLF pair belongs to the end of its line (only an offset on the
        # line's last character can be inside one).
        if line + 1 < len(starts) and offset >= starts[line + 1] - 1:
            offset = min(offset, self.line_end(line))
        if self.ascii or encoding == UTF32:
            return line, offset - start
        if offset - start <= _STEP:
            return line, code_units(self.text[start:offset], encoding)
        step = (offset - start) // _STEP
        marks = self._line_marks(line, encoding)
        return line, marks[step] + code_units(self.text[start + step * _STEP : offset], encoding)

    def _line_marks(self, line: int, encoding: str) -> list[int]:
        """Code units from the line's start to its character 0, _STEP, 2 * _STEP... (a lone
        surrogate is one unit wherever the text is cut, so the counts add up)."""
        marks = self._marks.get((line, encoding))
        if marks is None:
            start, end = self.starts[line], self.line_end(line)
            marks = [0]
            for at in range(start, end, _STEP):
                marks.append(marks[-1] + code_units(self.text[at : min(at + _STEP, end)], encoding))
            self._marks[line, encoding] = marks
        return marks

    def position(self, offset: int, encoding: str = UTF16) -> types.Position:
        line, character = self.line_character(offset, encoding)
        return types.Position(line=line, character=character)

    def range(self, start: int, end: int, encoding: str = UTF16) -> types.Range:
        return types.Range(start=self.position(start, encoding), end=self.position(end, encoding))

    def range_text(self, start: int, end: int, encoding: str = UTF16) -> str:
        """`range` as the JSON text the protocol sends (for messages built as text)."""
        line, character = self.line_character(start, encoding)
        end_line, end_character = self.line_character(end, encoding)
        return (
            f'{{"start":{{"line":{line},"character":{character}}},'
            f'"end":{{"line":{end_line},"character":{end_character}}}}}'
        )

    def offset(self, position: types.Position, encoding: str = UTF16) -> int:
        """The code-point offset of a position. A line past the end gives the end of the text,
        a character past the end of its line gives the end of that line; a position inside a
        surrogate pair (UTF-16) or a multi-byte character (UTF-8) rounds down to its start."""
        if position.line < 0:
            return 0
        if position.line >= len(self.starts):
            return len(self.text)
        start = self.starts[position.line]
        end = self.line_end(position.line)
        wanted = max(position.character, 0)
        if encoding == UTF32 or self.ascii or self.text[start : min(end, start + wanted)].isascii():
            return start + min(wanted, end - start)
        units = 0
        if end - start > _STEP:  # from the last mark at or before the wanted unit
            marks = self._line_marks(position.line, encoding)
            step = bisect_right(marks, wanted) - 1
            start, units = start + step * _STEP, marks[step]
        for i, char in enumerate(self.text[start:end]):
            width = _unit_width(char, encoding)
            if units + width > wanted:
                return start + i
            units += width
        return end


def apply_change(text: str, index: LineIndex, change: object, encoding: str) -> str:
    """Apply one `textDocument/didChange` content change (range or whole document)."""
    rng = getattr(change, "range", None)
    new_text = change.text  # type: ignore[attr-defined]
    if rng is None:
        return new_text
    start = index.offset(rng.start, encoding)
    end = index.offset(rng.end, encoding)
    if end < start:
        start, end = end, start
    return text[:start] + new_text + text[end:]
