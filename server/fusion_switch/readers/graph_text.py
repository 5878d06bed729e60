"""Protobuf text format of ``ge.proto.ModelDef`` (``ge_proto_*_Build.txt``): reader and writer.

The reader produces the same dict shape as ``atc``'s JSON (formats.md 2.3): maps as lists of
``{"key", "value"}`` (an empty AttrDef becomes ``None``), repeated fields as lists even when
they occur once, enums as their names, 64-bit integers as ints. It reads the file line by line
(TextFormat never splits a token across lines), so the text itself is never held in memory.
Errors are :class:`~.graph.GraphError` with the file, line and column.

The writer, :func:`write_graph_text`, turns such a dict back into text the way GE prints it
(fields in field-number order, two-space indentation, C-escaped strings), so tests and the
case generator can produce ``ge_proto`` files without GE.
"""

from __future__ import annotations

import codecs
import math
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from .graph_file import GraphError, read_graph_head

# ----------------------------------------------------------------------------- schema
# kind: s (string), y (bytes), i (integer), f (float), b (bool), e (enum), m (message)
# A field is (kind, repeated, message type). Message types not listed are handled
# generically: a field seen twice becomes a list, values keep the type their token has.
_S, _Y, _I, _F, _B, _E = ((kind, False, "") for kind in "syifbe")
_RS, _RY, _RI, _RF, _RB = ((kind, True, "") for kind in "syifb")


def _m(name: str, repeated: bool = False) -> tuple[str, bool, str]:
    return ("m", repeated, name)


_MAP = _m("AttrEntry", True)
SCHEMA: dict[str, dict[str, tuple[str, bool, str]]] = {
    "ModelDef": {
        "name": _S,
        "version": _I,
        "custom_version": _S,
        "graph": _m("GraphDef", True),
        "attr": _MAP,
        "attr_groups": _m("Any"),
    },
    "GraphDef": {
        "name": _S,
        "input": _RS,
        "output": _RS,
        "op": _m("OpDef", True),
        "attr": _MAP,
        "attr_groups": _m("Any"),
    },
    "OpDef": {
        "name": _S,
        "type": _S,
        "input": _RS,
        "attr": _MAP,
        "attr_groups": _m("Any"),
        "has_out_attr": _B,
        "id": _I,
        "stream_id": _I,
        "input_name": _RS,
        "src_name": _RS,
        "src_index": _RI,
        "dst_name": _RS,
        "dst_index": _RI,
        "input_i": _RI,
        "output_i": _RI,
        "workspace": _RI,
        "workspace_bytes": _RI,
        "is_input_const": _RB,
        "input_desc": _m("TensorDescriptor", True),
        "output_desc": _m("TensorDescriptor", True),
        "subgraph_name": _RS,
    },
    "TensorDescriptor": {
        "name": _S,
        "dtype": _E,
        "shape": _m("ShapeDef"),
        "layout": _S,
        "attr": _MAP,
        "attr_groups": _m("Any"),
        "has_out_attr": _B,
        "size": _I,
        "weight_size": _I,
        "reuse_input": _B,
        "output_tensor": _B,
        "device_type": _S,
        "input_tensor": _B,
        "real_dim_cnt": _I,
        "reuse_input_index": _I,
        "data_offset": _I,
        "cmps_size": _I,
        "cmps_tab": _Y,
        "cmps_tab_offset": _I,
    },
    "ShapeDef": {"dim": _RI},
    "AttrEntry": {"key": _S, "value": _m("AttrDef")},
    "AttrDef": {
        "list": _m("ListValue"),
        "s": _Y,
        "i": _I,
        "f": _F,
        "b": _B,
        "bt": _Y,
        "func": _m("NamedAttrs"),
        "td": _m("TensorDescriptor"),
        "t": _m("TensorDef"),
        "g": _m("GraphDef"),
        "list_list_int": _m("ListListInt"),
        "dt": _I,
        "list_list_float": _m("ListListFloat"),
    },
    "ListValue": {
        "s": _RY,
        "i": _RI,
        "f": _RF,
        "b": _RB,
        "bt": _RY,
        "td": _m("TensorDescriptor", True),
        "t": _m("TensorDef", True),
        "g": _m("GraphDef", True),
        "na": _m("NamedAttrs", True),
        "dt": _RI,
        "val_type": _E,
    },
    "NamedAttrs": {"name": _S, "attr": _MAP},
    "TensorDef": {"desc": _m("TensorDescriptor"), "data": _Y},
    "ListListInt": {"list_list_i": _m("ListInt", True)},
    "ListInt": {"list_i": _RI},
    "ListListFloat": {"list_list_f": _m("ListFloat", True)},
    "ListFloat": {"list_f": _RF},
}

# ----------------------------------------------------------------------------- tokens

_TOKEN = re.compile(
    r"""
    (?P<ws>[ \t\r\n\f\v]+|\#[^\n]*)
  | (?P<str>"(?:[^"\\\n]++|\\.)*+"|'(?:[^'\\\n]++|\\.)*+')
  | (?P<num>[-+]?(?:0[xX][0-9a-fA-F]+|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?[fF]?)
        (?![A-Za-z0-9_]))
  | (?P<ident>-?[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>[{}\[\]<>:,;])
    """,
    re.VERBOSE,
)
# Nesting deeper than this is no graph GE writes (a subgraph inside an attribute adds about five
# levels); deeper input is refused rather than walked recursively later.
MAX_DEPTH = 200
# An int64 has at most 20 digits; a longer number is refused without converting it.
MAX_NUMBER_LENGTH = 64
_ESCAPE = re.compile(
    r"\\(?:([0-7]{1,3})|[xX]([0-9a-fA-F]{1,2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|(.)|$)",
    re.DOTALL,
)
_SIMPLE_ESCAPES = {
    "n": 0x0A,
    "t": 0x09,
    "r": 0x0D,
    "a": 0x07,
    "b": 0x08,
    "f": 0x0C,
    "v": 0x0B,
    "\\": 0x5C,
    "'": 0x27,
    '"': 0x22,
    "?": 0x3F,
}

# An escape this matches (in a piece between escaped backslashes) is one that Python's bytes
# literal decoder, codecs.escape_decode, reads otherwise than TextFormat or warns about: \? \x
# \u \U, an unknown escape, a lone final backslash, an octal value above \377. A string without
# any is decoded by it at C speed, to the same bytes (a weight constant in a Build graph is
# hundreds of thousands of \ooo escapes: 1.2 s for a 3.5 MB real graph, most of it here).
_BEYOND_PYTHON_ESCAPES = re.compile(r"\\(?:[^0-7ntrabfv\\'\"]|[4-7][0-7][0-7]|$)", re.DOTALL)

_SIMPLE_PAIRS = [("\\" + key, chr(value)) for key, value in _SIMPLE_ESCAPES.items() if key != "\\"]


class _Token(NamedTuple):
    kind: str  # str, num, ident, punct
    text: str
    line: int
    column: int


def _unexpected(char: str) -> str:
    """Say what a character no token starts with is (the file is read with surrogateescape,
    so a byte that is not UTF-8 arrives as a lone surrogate)."""
    if char in "\"'":
        return f"string never closed: no matching {char} on this line"
    if "\udc80" <= char <= "\udcff":
        return (
            f"unexpected byte 0x{ord(char) - 0xDC00:02X}: not UTF-8 text (save the graph as UTF-8)"
        )
    if char < " " or "\x7f" <= char < "\xa0":
        return f"unexpected control character {char!r} (binary data? a graph is a text file)"
    return f"unexpected character {char!r}"


def _line_tokens(line: str, number: int, path: str) -> list[_Token]:
    tokens = []
    pos = 0
    while pos < len(line):
        match = _TOKEN.match(line, pos)
        if match is None:
            raise GraphError(path, _unexpected(line[pos]), number, pos + 1)
        kind = match.lastgroup or ""
        if kind != "ws":
            tokens.append(_Token(kind, match.group(), number, pos + 1))
        pos = match.end()
    return tokens


def unescape(literal: str) -> bytes:
    """The bytes of a quoted TextFormat string literal (C escapes, octal, hex, \\u).

    Linear in the literal's length: plain runs are encoded in one piece, escapes one by one."""
    body = literal[1:-1]
    if "\\" not in body:
        return body.encode("utf-8", "surrogateescape")
    simple = _unescape_simple(body)
    if simple is not None:
        return simple.encode("utf-8", "surrogateescape")
    search = _BEYOND_PYTHON_ESCAPES.search  # per piece: there every backslash starts an escape
    if not any(search(piece) for piece in body.split("\\\\")):  # \ooo bytes: constants
        return codecs.escape_decode(body.encode("utf-8", "surrogateescape"))[0]
    return _unescape_general(body)


def _unescape_general(body: str) -> bytes:
    """Every escape TextFormat knows, one by one (the definition the fast paths must match)."""
    out = bytearray()
    pos = 0
    for match in _ESCAPE.finditer(body):
        out += body[pos : match.start()].encode("utf-8", "surrogateescape")
        pos = match.end()
        octal, hexa, short, long, other = match.groups()
        if octal is not None:
            out.append(int(octal, 8) & 0xFF)
        elif hexa is not None:
            out.append(int(hexa, 16))
        elif short is not None or long is not None:
            out += chr(int(short or long, 16)).encode("utf-8", "surrogatepass")
        elif other is None:
            raise ValueError("string ends with a lone backslash")
        elif other in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[other])
        elif other in "xX":
            raise ValueError("\\x without hex digits")
        elif other in "uU":
            raise ValueError(f"\\{other} needs {4 if other == 'u' else 8} hex digits")
        else:
            raise ValueError(f"unknown escape \\{other}")
    out += body[pos:].encode("utf-8", "surrogateescape")
    return bytes(out)


def _unescape_simple(body: str) -> str | None:
    """`body` decoded at C speed when it holds only one-character escapes (\\" \\n ...), else
    None. Escaped backslashes split it first, so every backslash left starts its own pair."""
    pieces = body.split("\\\\")
    for index, piece in enumerate(pieces):
        if "\\" in piece:
            for pair, char in _SIMPLE_PAIRS:
                piece = piece.replace(pair, char)
            if "\\" in piece:
                return None  # octal, hex, \\u or a bad escape: the general path
            pieces[index] = piece
    return "\\".join(pieces)


# ----------------------------------------------------------------------------- reader


_KIND_NAMES = {"s": "string", "y": "string", "i": "number", "f": "number", "b": "bool", "e": "enum"}


def _scalar_value(path: str, tokens: list[_Token], kind: str | None, name: str) -> Any:
    """Value of one scalar: a run of adjacent string literals, or one number/identifier."""
    token = tokens[0]
    if token.kind == "str":
        if kind in ("i", "f", "b", "e"):
            raise _fail(path, token, f"{name!r} expects a {_KIND_NAMES[kind]}, found a string")
        try:
            data = b"".join(unescape(part.text) for part in tokens)
        except ValueError as error:
            raise _fail(path, token, f"bad string for {name!r}: {error}") from None
        return data.decode("utf-8", "surrogateescape")
    if token.kind == "num":
        text = token.text
        if len(text) > MAX_NUMBER_LENGTH:
            raise _fail(
                path,
                token,
                f"number with {len(text)} digits for {name!r}: too long for a graph value",
            )
        hexadecimal = text.lower().lstrip("+-").startswith("0x")
        is_float = kind == "f" or (not hexadecimal and any(c in text for c in ".eEfF"))
        try:
            if is_float:
                return float(text.rstrip("fF"))
            if re.fullmatch(r"[-+]?0[0-7]+", text):
                return int(text, 8)
            return int(text, 0)
        except ValueError:
            raise _fail(path, token, f"bad number {text!r} for {name!r}") from None
    if token.kind == "ident":
        lowered = token.text.lower()
        if kind == "b" or (kind is None and lowered in ("true", "false")):
            if lowered in ("true", "t"):
                return True
            if lowered in ("false", "f"):
                return False
            raise _fail(path, token, f"{name!r} expects true or false, found {token.text!r}")
        if lowered in ("inf", "-inf", "infinity", "-infinity", "nan", "-nan"):
            return float(lowered.replace("infinity", "inf"))
        if kind in ("s", "y", "i", "f"):
            raise _fail(
                path, token, f"{name!r} expects a {_KIND_NAMES[kind]}, found {token.text!r}"
            )
        return token.text
    raise _fail(path, token, f"expected a value for {name!r}, found {token.text!r}")


def _fail(path: str, token: _Token, message: str) -> GraphError:
    return GraphError(path, message, token.line, token.column)


def _field_spec(message: str, name: str) -> tuple[str, bool, str] | None:
    return SCHEMA.get(message, {}).get(name)


def _store(target: dict[str, Any], spec: tuple[str, bool, str] | None, name: str, value: Any):
    if spec is not None and spec[1]:
        target.setdefault(name, []).append(value)
    elif spec is None and name in target:
        existing = target[name]
        if isinstance(existing, list) and getattr(existing, "_repeated", False):
            existing.append(value)
        else:
            target[name] = _RepeatedList([existing, value])
    else:
        target[name] = value


class _RepeatedList(list):
    """A list made by repetition of a field of unknown type (so a third value appends)."""

    _repeated = True


def _finish_message(message_type: str, body: dict[str, Any]) -> Any:
    if message_type == "AttrEntry":
        value = body.get("value")
        body["value"] = value if value else None
        body.setdefault("key", "")
    return body


# parser states
_IDLE, _AFTER_NAME, _AFTER_COLON, _IN_LIST, _IN_STRINGS = range(5)
_BARE = re.compile(r"[-+]?[A-Za-z0-9_.]+")


class _Frame(NamedTuple):
    body: dict[str, Any]
    message_type: str
    closer: str | None
    opened: _Token | None
    name: str  # the field this message is the value of (in the parent)
    spec: tuple[str, bool, str] | None
    list_items: list | None  # set when the message is an element of a `[...]` list


class _Parser:
    """Push parser: lines go in; simple GE-style lines take a fast path, others are tokenised.

    The fast path is used only between fields (state ``_IDLE``), so multi-line constructs and
    unusual spacing still go through the general token machine.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.stack: list[_Frame] = []
        self.body: dict[str, Any] = {}
        self.type = "ModelDef"
        self.closer: str | None = None
        self.opened: _Token | None = None
        self.state = _IDLE
        self.name = ""
        self.spec: tuple[str, bool, str] | None = None
        self.name_token: _Token | None = None
        self.strings: list[_Token] = []
        self.strings_return = _IDLE
        self.list_items: list | None = None
        self.last: _Token | None = None

    # ------------------------------------------------------------------ primitives
    def _open(self, token: _Token, in_list: bool) -> None:
        spec = self.spec
        if spec is not None and spec[0] != "m":
            raise _fail(
                self.path, token, f"{self.name!r} is a {_KIND_NAMES[spec[0]]}, not a message"
            )
        if len(self.stack) >= MAX_DEPTH:
            raise _fail(
                self.path, token, f"messages nested more than {MAX_DEPTH} deep: not a GE graph"
            )
        self.stack.append(
            _Frame(self.body, self.type, self.closer, self.opened, self.name, spec,
                   self.list_items if in_list else None)
        )  # fmt: skip
        self.body = {}
        self.type = spec[2] if spec else "Any"
        self.closer = "}" if token.text == "{" else ">"
        self.opened = token
        self.state = _IDLE

    def _close(self, token: _Token) -> None:
        if token.text != self.closer:
            raise _fail(self.path, token, f"unexpected {token.text!r}")
        finished = _finish_message(self.type, self.body)
        frame = self.stack.pop()
        self.body, self.type, self.closer, self.opened = (
            frame.body,
            frame.message_type,
            frame.closer,
            frame.opened,
        )
        if frame.list_items is not None:
            frame.list_items.append(finished)
            self.list_items = frame.list_items
            self.name, self.spec = frame.name, frame.spec
            self.state = _IN_LIST
        else:
            _store(self.body, frame.spec, frame.name, finished)
            self.state = _IDLE

    def _name(self, token: _Token) -> None:
        self.name = token.text
        self.name_token = token
        self.spec = _field_spec(self.type, token.text)
        self.state = _AFTER_NAME

    def _value(self, tokens: list[_Token], into_list: bool) -> None:
        value = _scalar_value(self.path, tokens, self.spec[0] if self.spec else None, self.name)
        if into_list:
            assert self.list_items is not None
            self.list_items.append(value)
        else:
            _store(self.body, self.spec, self.name, value)

    # ------------------------------------------------------------------ token machine
    def feed(self, token: _Token) -> None:
        self.last = token
        state = self.state
        kind, text = token.kind, token.text
        if state == _IN_STRINGS:
            if kind == "str":
                self.strings.append(token)
                return
            into_list = self.strings_return == _IN_LIST
            self._value(self.strings, into_list)
            self.strings = []
            self.state = state = self.strings_return
        if state == _IDLE:
            if kind == "ident":
                self._name(token)
            elif kind == "punct" and text in ("}", ">"):
                self._close(token)
            elif not (kind == "punct" and text in (",", ";")):
                raise _fail(self.path, token, f"expected a field name, found {text!r}")
        elif state in (_AFTER_NAME, _AFTER_COLON):
            if kind == "punct" and text in ("{", "<"):
                self._open(token, in_list=False)
            elif kind == "punct" and text == ":" and state == _AFTER_NAME:
                self.state = _AFTER_COLON
            elif kind == "punct" and text == "[":
                items = self.body.setdefault(self.name, [])
                if not isinstance(items, list):
                    items = self.body[self.name] = _RepeatedList([items])
                self.list_items = items
                self.state = _IN_LIST
            elif state == _AFTER_NAME:
                raise _fail(self.path, token, f"expected ':' after {self.name!r}")
            elif self.spec is not None and self.spec[0] == "m":
                raise _fail(self.path, token, f"{self.name!r} is a message: expected '{{'")
            elif kind == "str":
                self.strings = [token]
                self.strings_return = _IDLE
                self.state = _IN_STRINGS
            else:
                self._value([token], into_list=False)
                self.state = _IDLE
        elif state == _IN_LIST:
            if kind == "punct" and text == "]":
                self.state = _IDLE
            elif kind == "punct" and text == ",":
                pass
            elif kind == "punct" and text in ("{", "<"):
                self._open(token, in_list=True)
            elif kind == "str":
                self.strings = [token]
                self.strings_return = _IN_LIST
                self.state = _IN_STRINGS
            else:
                self._value([token], into_list=True)

    # ------------------------------------------------------------------ lines
    def line(self, line: str, number: int) -> None:
        if self.state == _IDLE and self._fast_line(line, number):
            return
        for token in _line_tokens(line, number, self.path):
            self.feed(token)

    def _fast_line(self, line: str, number: int) -> bool:
        """Handle ``}``, ``name {`` and ``name: simple-value`` lines without tokenising."""
        text = line.strip()
        if not text:
            return True
        if text == "}":
            self._close(_Token("punct", "}", number, line.index("}") + 1))
            return True
        if text[-1] == "{":
            name = text[:-1].rstrip()
            if name.isidentifier() and name.isascii():
                column = line.index(name) + 1
                self._name(_Token("ident", name, number, column))
                self._open(_Token("punct", "{", number, line.rindex("{") + 1), in_list=False)
                return True
            return False
        colon = text.find(": ")
        if colon <= 0:
            return False
        name = text[:colon]
        if not (name.isidentifier() and name.isascii()):
            return False
        spec = _field_spec(self.type, name)
        raw = text[colon + 2 :]
        kind = spec[0] if spec else None
        if kind == "m":
            return False
        if raw[:1] == '"':
            inner = raw[1:-1]
            if len(raw) < 2 or raw[-1] != '"' or '"' in inner or "\\" in inner:
                return False
            if kind not in (None, "s", "y"):
                return False
            value: Any = inner
        elif _BARE.fullmatch(raw):
            if len(raw) > MAX_NUMBER_LENGTH:
                return False  # the token path says what is wrong with it
            if kind == "i" and raw.lstrip("-+").isdigit() and not raw.lstrip("-+").startswith("0"):
                value = int(raw)
            elif kind == "i" and raw == "0":
                value = 0
            elif kind == "e" and raw.isidentifier():
                value = raw
            elif kind == "b" and raw in ("true", "false"):
                value = raw == "true"
            else:
                return False
        else:
            return False
        _store(self.body, spec, name, value)
        return True

    def finish(self) -> dict[str, Any]:
        if self.state == _IN_STRINGS:
            self._value(self.strings, self.strings_return == _IN_LIST)
            self.state = self.strings_return
        if self.state != _IDLE:
            where = self.last or self.name_token
            expected = {
                _AFTER_NAME: f"':' or '{{' after {self.name!r}",
                _AFTER_COLON: f"a value for {self.name!r}",
                _IN_LIST: f"a value or ']' in the list of {self.name!r}",
            }[self.state]
            raise GraphError(
                self.path,
                f"unexpected end of file, expected {expected}",
                where.line if where else 1,
                where.column if where else 1,
            )
        if self.stack:
            where = self.opened or self.last
            raise GraphError(
                self.path,
                f"unexpected end of file: '{self.closer}' never closes this message",
                where.line if where else 1,
                where.column if where else 1,
            )
        return self.body


def parse_graph_text(lines: Iterable[str], path: str | os.PathLike = "<text>") -> dict[str, Any]:
    """Parse ModelDef text format from an iterable of lines into the atc-JSON dict shape."""
    parser = _Parser(str(path))
    for number, line in enumerate(lines, start=1):
        parser.line(line, number)
    return _plain(parser.finish())


def _plain(value: Any) -> Any:
    """Turn helper list subclasses back into plain lists (cheap walk, keeps dicts)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list)):
                value[key] = _plain(item)
        return value
    if isinstance(value, list):
        return [_plain(item) if isinstance(item, (dict, list)) else item for item in value]
    return value


def parse_graph_text_file(path: str | os.PathLike, head_checked: bool = False) -> dict[str, Any]:
    """Parse a ``ge_proto_*.txt`` file (read line by line). An empty or binary file is
    refused first (``head_checked``: the caller has already done that)."""
    path = Path(path)
    if not head_checked:
        read_graph_head(path)
    try:
        with open(path, encoding="utf-8", errors="surrogateescape", newline=None) as handle:
            return parse_graph_text(handle, path)
    except OSError as error:
        raise GraphError(path, f"cannot read: {error.strerror or error}") from None


# ----------------------------------------------------------------------------- writer


def escape(data: bytes | str) -> str:
    """C-escaped, double-quoted literal as protobuf's TextFormat prints it (octal for non-ASCII)."""
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    out = ['"']
    for byte in raw:
        if byte == 0x0A:
            out.append("\\n")
        elif byte == 0x0D:
            out.append("\\r")
        elif byte == 0x09:
            out.append("\\t")
        elif byte == 0x22:
            out.append('\\"')
        elif byte == 0x27:
            out.append("\\'")
        elif byte == 0x5C:
            out.append("\\\\")
        elif 0x20 <= byte < 0x7F:
            out.append(chr(byte))
        else:
            out.append(f"\\{byte:03o}")
    out.append('"')
    return "".join(out)


def _format_float(value: Any) -> str:
    number = float(value)
    if math.isnan(number):
        return "nan"
    if math.isinf(number):
        return "inf" if number > 0 else "-inf"
    text = repr(number)
    return text[:-2] if text.endswith(".0") else text


def _format_scalar(kind: str | None, value: Any) -> str:
    if kind in ("s", "y") or (kind is None and isinstance(value, str)):
        return escape(value if isinstance(value, (str, bytes)) else str(value))
    if kind == "b" or isinstance(value, bool):
        return "true" if value else "false"
    if kind == "f" or isinstance(value, float):
        return _format_float(value)
    if kind == "e":
        return str(value)
    if kind == "i":
        return str(int(value))
    return str(value)


def _write_message(out: list[str], message_type: str, body: Mapping[str, Any], indent: str) -> None:
    schema = SCHEMA.get(message_type, {})
    names = [name for name in schema if name in body]
    names += [name for name in body if name not in schema]
    for name in names:
        value = body[name]
        spec = schema.get(name)
        repeated = spec[1] if spec else isinstance(value, list)
        values = value if repeated and isinstance(value, list) else [value]
        for item in values:
            is_message = (spec is not None and spec[0] == "m") or (
                spec is None and (isinstance(item, Mapping) or item is None)
            )
            if is_message:
                out.append(f"{indent}{name} {{\n")
                if item:
                    inner = spec[2] if spec else "Any"
                    _write_message(out, inner, item, indent + "  ")
                out.append(f"{indent}}}\n")
            else:
                out.append(f"{indent}{name}: {_format_scalar(spec[0] if spec else None, item)}\n")


def write_graph_text(model: Mapping[str, Any]) -> str:
    """Text format of a ModelDef dict in the atc-JSON shape (the inverse of the reader)."""
    out: list[str] = []
    _write_message(out, "ModelDef", model, "")
    return "".join(out)
