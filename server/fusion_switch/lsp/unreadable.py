"""Messages the server cannot read, answered rather than dropped: what of each can be made out
(its id, method and document) and why it was refused. pygls raised on such a message and
lost its id: the client waited for ever, and a ``didChange`` dropped that way left the
server's copy of the text behind the editor's (a review)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from json.decoder import scanstring
from typing import Any

from lsprotocol import types

_PARSE_ERROR = types.ErrorCodes.ParseError.value  # -32700
INVALID_REQUEST = types.ErrorCodes.InvalidRequest.value  # -32600
_INVALID_PARAMS = types.ErrorCodes.InvalidParams.value  # -32602
DOCUMENT_NOTIFICATIONS = frozenset(
    {types.TEXT_DOCUMENT_DID_OPEN, types.TEXT_DOCUMENT_DID_CHANGE, types.TEXT_DOCUMENT_DID_CLOSE}
)
# Where a body that did not parse is searched for its id, method and document (clients
# write them first): a bounded search, however large the body. A change whose document is
# not found there drops every open document (`_stop_following`).
_SALVAGE_PREFIX = 64 << 10


@dataclass(frozen=True)
class Unreadable:
    """A message that could not be read: what of it could be made out, and why."""

    id: int | str | None
    method: str | None
    uri: str | None
    language_id: str | None
    problem: str
    code: int
    answer: bool = False  # a response to a request of the server's

    @classmethod
    def of(cls, data: object, problem: str, code: int = _INVALID_PARAMS) -> Unreadable:
        """From a message that parsed as JSON but does not fit the protocol."""
        data = data if isinstance(data, dict) else {}
        params = data.get("params")
        document = params.get("textDocument") if isinstance(params, dict) else None
        document = document if isinstance(document, dict) else {}
        method = data.get("method")
        if not isinstance(method, str) and method is not None:
            method, code = None, INVALID_REQUEST
        return cls(
            _message_id(data.get("id")),
            method,
            _text(document.get("uri")),
            _text(document.get("languageId")),
            problem,
            code,
            method is None and ("result" in data or "error" in data),
        )

    @classmethod
    def salvaged(cls, body: bytes, problem: str) -> Unreadable:
        """From a body that is not JSON: its id, method and document, when they can be made
        out at its start (invalid bytes kept as surrogates, deep values skipped)."""
        text = body[:_SALVAGE_PREFIX].decode("utf-8", "surrogateescape")
        found: dict[str, Any] = {}
        try:
            for key, at in _members(text, _skip_space(text, 0)):
                if key in ("id", "method"):
                    found[key] = _scalar(text, at)
                elif key == "params":
                    for pkey, pat in _members(text, at):
                        if pkey == "textDocument":
                            for dkey, dat in _members(text, pat):
                                if dkey in ("uri", "languageId"):
                                    found[dkey] = _scalar(text, dat)
                            break
                elif key in ("result", "error"):
                    found["answer"] = True
        except (ValueError, IndexError):  # the body breaks off here: what was found stands
            pass
        return cls(
            _message_id(found.get("id")),
            _text(found.get("method")),
            _text(found.get("uri")),
            _text(found.get("languageId")),
            problem,
            _PARSE_ERROR,
            "method" not in found and found.get("answer", False),
        )


def _message_id(value: object) -> int | str | None:
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def validation_problem(error: BaseException) -> str:
    """What cattrs found wrong, in a line: "Position.line should be in range [0:2147483647],
    but was -1 @ $.params.position"."""
    from cattrs.v import format_exception, transform_error

    def say(exc: BaseException, kind: type | None) -> str:
        if type(exc) is ValueError:  # lsprotocol's validators say what and why
            return str(exc).rstrip(".")
        return format_exception(exc, kind)

    try:
        found = transform_error(error, "$", say)
    except Exception:
        found = []
    # a value quoted in a finding may be a whole document: each is cut short
    return "; ".join(f[:200] for f in found[:3]) or f"invalid message ({type(error).__name__})"


_SPACE = re.compile(r"[ \t\n\r]*")
_STRUCTURAL = re.compile(r'["{}\[\]]')
_SCALAR = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null")


def _skip_space(text: str, at: int) -> int:
    return _SPACE.match(text, at).end()


def _members(text: str, at: int):
    """(key, where its value starts) of each member of the JSON object at ``text[at]``, up
    to where the text breaks off (ValueError); nested values are skipped without recursion."""
    if not text.startswith("{", at):
        return
    at = _skip_space(text, at + 1)
    while text.startswith('"', at):
        key, at = scanstring(text, at + 1)
        at = _skip_space(text, at)
        if not text.startswith(":", at):
            return
        at = _skip_space(text, at + 1)
        yield key, at
        at = _skip_space(text, _skip_value(text, at))
        if not text.startswith(",", at):
            return
        at = _skip_space(text, at + 1)


def _skip_value(text: str, at: int) -> int:
    """Where the JSON value at ``text[at]`` ends."""
    if text.startswith('"', at):
        return scanstring(text, at + 1)[1]
    if text[at] not in "[{":
        match = _SCALAR.match(text, at)
        if match is None:
            raise ValueError("not a JSON value")
        return match.end()
    depth = 0
    while (match := _STRUCTURAL.search(text, at)) is not None:
        at = match.end()
        if match.group() == '"':
            at = scanstring(text, at)[1]
        elif match.group() in "[{":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return at
    raise ValueError("the value breaks off")


def _scalar(text: str, at: int) -> object:
    """The string, number, true, false or null at ``text[at]``; None for anything else."""
    if text.startswith('"', at):
        return scanstring(text, at + 1)[0]
    match = _SCALAR.match(text, at)
    return json.loads(match.group()) if match else None
