"""Tolerant parser for `fusion_switch.cfg`: strict JSON or CANN's old `Name:on|off` line format.

Invariant: `parse` never raises. Whatever the input, it returns a `CfgDocument` with a (possibly
partial) tree, every key and value with its offsets, and syntax findings saying what CANN's parser
will reject. Offsets are indexes into the Python `str` (code points), like everywhere in `cfg`.

Speed matters (a 5,000-entry file is parsed on every keystroke), so nodes keep plain int offsets
and build `Span` objects only when asked, and the common member shape `"key": "value",` is read
by one regular expression.
"""

from __future__ import annotations

import gc
import json
import re
from contextlib import contextmanager
from functools import cached_property

from .model import Finding, Related, Span
from .tree import (
    ArrayNode,
    CfgDocument,
    LineEntry,
    LineNumbers,
    Member,
    Node,
    ObjectNode,
    ScalarNode,
    StringNode,
    _Container,
)

MAX_DEPTH = 64  # deeper values are skipped (fusion_switch.cfg needs 4 levels at most)
MAX_SYNTAX_FINDINGS = 100  # after this many errors parsing stops (binary garbage, huge files)

_WS = re.compile(r"[ \t\r\n]*")
# The frequent member shape: "key": "value" followed by an optional comma.
_PAIR = re.compile(
    r'[ \t\r\n]*"([^"\\\x00-\x1f]*)"[ \t\r\n]*(:)[ \t\r\n]*"([^"\\\x00-\x1f]*)"[ \t\r\n]*(,?)'
)
# Possessive: a 10 MB string of escapes must not keep a backtracking point per character.
_STRING = re.compile(r'"((?:[^"\\\n\r]++|\\[^\n\r]?)*+)(")?')
_WORD = re.compile(r'[^ \t\r\n{}\[\]:,"/]+')
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_BAD_ESCAPE = re.compile(r'\\(?!["\\/bfnrt]|u[0-9a-fA-F]{4})')
_CONTROL = re.compile(r"[\x00-\x1f]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_BLOCK_COMMENT_END = re.compile(r"\*/")
_SKIP_TOKEN = re.compile(r'"(?:[^"\\\n\r]|\\.)*"?|[{}\[\]]')
_LEADING_COMMENTS = re.compile(r"(?:\s+|//[^\n]*|/\*(?:[^*]|\*(?!/))*(?:\*/)?)*")


@contextmanager
def gc_paused():
    """Pause the cyclic garbage collector while building many small objects.

    A 10 MB file creates millions of nodes; without this, repeated full collections scanning
    the growing tree cost more than the parse itself (measured 4x). Reference counting still
    frees everything; the collector is re-enabled afterwards if it was enabled before.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def parse(text: str) -> CfgDocument:
    """Parse any text; never raises."""
    with gc_paused():
        try:
            return _parse(text)
        except Exception as exc:  # a parser bug must not take the editor down
            text = text if isinstance(text, str) else ""
            return CfgDocument(text, "json", [internal_error(exc, len(text))])


def internal_error(exc: Exception, length: int) -> Finding:
    return Finding(
        "json-syntax",
        "error",
        Span(0, min(1, length)),
        f"fusion-switch could not check this file (internal error {type(exc).__name__}: {exc}). "
        "Please report it with the file.",
        {"internal": True},
    )


def _parse(text: str) -> CfgDocument:
    if not isinstance(text, str):
        text = str(text)
    start = 1 if text.startswith("\ufeff") else 0  # nlohmann skips a UTF-8 BOM
    if not text[start:].strip(" \t\r\n"):
        doc = CfgDocument(text, "empty")
        doc.syntax_findings.append(
            Finding(
                "empty-file",
                "error",
                Span(0, len(text)),
                'The file is empty: CANN rejects it ("file is empty"). Add '
                '{"Switch": {"GraphFusion": {...}, "UBFusion": {...}}}.',
            )
        )
        return doc
    lead = _LEADING_COMMENTS.match(text, start)
    first = text[lead.end()] if lead.end() < len(text) else ""
    if (first and first in "{[") or not first:  # not first: only comments
        return _JsonParser(text, start).run()
    return _parse_lines(text, start)


class _Stop(Exception):
    """Raised after too many syntax errors; the tree built so far is kept."""


class _JsonParser:
    def __init__(self, text: str, start: int) -> None:
        self.text = text
        self.n = len(text)
        self.pos = start
        self.findings: list[Finding] = []
        self.open: list[ObjectNode | ArrayNode] = []
        self.eof_closers = ""  # closers missing at the end of the file, innermost first

    # ---- helpers -------------------------------------------------------------------------
    def error(
        self,
        start: int,
        end: int,
        message: str,
        code: str = "json-syntax",
        data: dict | None = None,
        related: list[Related] | None = None,
    ) -> None:
        if len(self.findings) >= MAX_SYNTAX_FINDINGS:
            self.findings.append(
                Finding(
                    "json-syntax",
                    "error",
                    Span(start, max(start, end)),
                    f"More than {MAX_SYNTAX_FINDINGS} syntax errors: stopped reading here. "
                    "CANN rejects the whole file.",
                )
            )
            raise _Stop
        start = min(start, self.n)
        end = min(max(start, end), self.n)
        self.findings.append(
            Finding(code, "error", Span(start, end), message, data or {}, related or [])
        )

    def missing(self, closer: str) -> str:
        """What to insert at the end to close this container and the ones inside it."""
        self.eof_closers += closer
        text = self.text
        last_line = text[text.rfind("\n") + 1 :]
        # after a `// comment` on the last line the closers go on a new line
        return ("\n" if "//" in last_line else "") + self.eof_closers

    def where(self, offset: int) -> str:
        """`line L, column C` of an offset, for messages."""
        line, col = self.line_numbers.line_col(offset)
        return f"line {line}, column {col}"

    @cached_property
    def line_numbers(self) -> LineNumbers:
        return LineNumbers(self.text)

    def skip(self) -> None:
        """Skip whitespace and comments (each comment is an error: strict JSON has none)."""
        text = self.text
        while True:
            self.pos = _WS.match(text, self.pos).end()
            if text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                end = self.n if end < 0 else end
                if end > self.pos and text[end - 1] == "\r":
                    end -= 1
                self.comment(self.pos, end)
            elif text.startswith("/*", self.pos):
                m = _BLOCK_COMMENT_END.search(text, self.pos + 2)
                end = m.end() if m else self.n
                self.comment(self.pos, end)
            else:
                return

    def comment(self, start: int, end: int) -> None:
        self.error(
            start,
            end,
            "Comments are not allowed: CANN reads the file as strict JSON and rejects the whole "
            "file. Remove the comment.",
            code="comment",
        )
        self.pos = end

    # ---- grammar -------------------------------------------------------------------------
    def run(self) -> CfgDocument:
        root: Node | None = None
        try:
            self.skip()
            root = self.value(0)
            if root is None:
                self.error(
                    self.pos,
                    min(self.pos + 1, self.n),
                    "Expected a JSON object ('{') at the top level.",
                )
            else:
                self.skip()
                if self.pos < self.n:  # nlohmann's `>>` stops at the end of the value
                    self.findings.append(
                        Finding(
                            "text-after-object",
                            "warning",
                            Span(self.pos, self.n),
                            "Text after the end of the top-level object: CANN stops reading "
                            "at the end of the object and never sees it, but other tools "
                            "reject the file. Remove it.",
                            {},
                        )
                    )
        except _Stop:
            for node in self.open:
                node.end = self.n
        except RecursionError:  # pragma: no cover - MAX_DEPTH keeps recursion shallow
            for node in self.open:
                node.end = self.n
        return CfgDocument(self.text, "json", self.findings, root)

    def value(self, depth: int) -> Node | None:
        """Parse a value at self.pos (after whitespace); None when there is no value here."""
        text = self.text
        pos = self.pos
        if pos >= self.n:
            return None
        c = text[pos]
        if c == '"':
            return self.string()
        if c == "{" or c == "[":
            if depth >= MAX_DEPTH:
                return self.skip_deep()
            return self.object(depth + 1) if c == "{" else self.array(depth + 1)
        if c in ",:}]":
            return None
        m = _WORD.match(text, pos)
        if m is None:  # a lone '/' that is not a comment
            self.error(pos, pos + 1, f"Unexpected character {c!r}: expected a value.")
            self.pos = pos + 1
            return ScalarNode("invalid", pos, pos + 1, c)
        word = m.group()
        self.pos = m.end()
        if word in ("true", "false", "null"):
            return ScalarNode(word, pos, m.end(), word)
        if _NUMBER.fullmatch(word):
            return ScalarNode("number", pos, m.end(), word)
        if word.startswith("'"):
            message = (
                f"Single-quoted text {word!r}: JSON strings need double quotes; CANN rejects "
                "the whole file."
            )
        else:
            message = (
                f"Unexpected {shorten(word)!r}: expected a JSON value such as the string "
                '"on" or "off"; CANN rejects the whole file.'
            )
        self.error(pos, m.end(), message)
        return ScalarNode("invalid", pos, m.end(), word)

    def string(self) -> StringNode:
        text = self.text
        start = self.pos
        m = _STRING.match(text, start)
        inner = m.group(1)
        closed = m.start(2) >= 0
        self.pos = end = m.end()
        if not closed:
            self.error(
                start,
                end,
                "Unterminated string: expected a closing '\"' before the end of the line.",
                data={} if inner.endswith("\\") else {"insert": '"', "at": end},
            )
        value = inner
        if "\\" in inner:
            bad = _BAD_ESCAPE.search(inner)
            if bad:
                at = start + 1 + bad.start()
                self.error(
                    at,
                    at + 2,
                    'Invalid escape sequence: JSON allows \\" \\\\ \\/ \\b \\f '
                    "\\n \\r \\t and \\uXXXX.",
                )
                value = inner.replace("\\", "")
            else:
                try:
                    value = json.loads(f'"{inner}"')
                except ValueError:
                    value = inner
                if _SURROGATE.search(value):
                    value = self.lone_surrogate(start, inner, value)
        bad = _CONTROL.search(inner)
        if bad:
            at = start + 1 + bad.start()
            self.error(
                at,
                at + 1,
                f"Control character U+{ord(inner[bad.start()]):04X} inside a string: JSON needs "
                "it escaped; CANN rejects the whole file.",
            )
        return StringNode(start, end, value, closed)

    def lone_surrogate(self, start: int, inner: str, value: str) -> str:
        """Report a \\uD800-\\uDFFF escape without its pair (not a character: CANN's parser
        rejects the file); the value keeps the escape as text so no lone surrogate goes on."""
        escape = _SURROGATE_ESCAPE.search(inner)
        at = start + 1 + (escape.start() if escape else 0)
        self.error(
            at,
            at + (6 if escape else len(inner)),
            "Lone surrogate escape: \\uD800-\\uDFFF must come in high-low pairs; this one is "
            "not a character and CANN rejects the whole file. Write the character itself.",
        )
        return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", value)

    def skip_deep(self) -> Node:
        start = self.pos
        level = 0
        end = self.n
        for m in _SKIP_TOKEN.finditer(self.text, start):
            tok = m.group()
            if tok in "{[":
                level += 1
            elif tok in "}]":
                level -= 1
                if level == 0:
                    end = m.end()
                    break
        self.pos = end
        self.error(
            start,
            end,
            f"Nested more than {MAX_DEPTH} levels deep: a fusion_switch.cfg has at most 4 "
            "levels (Priority > section > stage > rule). This part is not checked.",
        )
        return ScalarNode("invalid", start, end, "")

    def object(self, depth: int) -> ObjectNode:
        text = self.text
        obj = ObjectNode(self.pos)
        self.open.append(obj)
        self.pos += 1
        members = obj.members
        commas = obj.commas
        state = 0  # 0: first, 1: after a comma, 2: after a member
        incomplete = False  # the last member lacks its colon or value (do not also ask for ',')
        pair = _PAIR.match
        while True:
            if state != 2:
                m = pair(text, self.pos)
                while m is not None:
                    _, (ks, ke), (colon, _), (vs, ve), (cs, ce) = m.regs
                    member = Member(text[ks:ke], ks - 1, ke + 1)
                    member.colon = colon
                    member.value = StringNode(vs - 1, ve + 1, text[vs:ve])
                    member.end = ve + 1
                    members.append(member)
                    if ce > cs:
                        member.comma = cs
                        commas.append(cs)
                        self.pos = ce
                        state = 1
                        m = pair(text, ce)
                    else:
                        self.pos = ce
                        state = 2
                        incomplete = False
                        break
            self.skip()
            pos = self.pos
            if pos >= self.n:
                return self.unclosed(obj)
            c = text[pos]
            if c == "}":
                return self.close(obj, pos, after_comma=state == 1)
            if c == ",":
                if self.comma(obj, pos, state == 2 and bool(members), "a key (a quoted rule name)"):
                    members[-1].comma = pos
                    state = 1
                continue
            if c == "]":
                self.error(
                    pos, pos + 1, "Unexpected ']': expected a key or '}' to close the object."
                )
                self.pos = pos + 1
                continue
            if state == 2 and not incomplete and members:
                prev = members[-1]
                self.error(
                    pos,
                    pos + 1,
                    "Expected ',' between members (or '}' to close the object).",
                    data={"insert": ",", "at": prev.end},
                )
            if c == '"':
                key = self.string()
                member = Member(key.value, key.start, key.end)
            elif c == ":":
                self.error(pos, pos + 1, "Expected a key (a quoted rule name) before ':'.")
                self.pos = pos + 1
                state = 2 if members else state
                incomplete = True
                continue
            elif c in "{[":
                self.error(pos, pos + 1, "Expected a key (a quoted rule name), not a nested value.")
                self.value(depth)
                state = 2 if members else state
                incomplete = True
                continue
            else:
                m = _WORD.match(text, pos)
                end = m.end() if m else pos + 1
                word = text[pos:end]
                self.error(
                    pos,
                    end,
                    f'Keys must be double-quoted strings: write "{shorten(word)}". CANN rejects '
                    "the whole file.",
                )
                self.pos = end
                member = Member(word, pos, end)
                member.key_quoted = False
            members.append(member)
            state = 2
            incomplete = True
            self.skip()
            if self.pos < self.n and text[self.pos] == ":":
                member.colon = self.pos
                member.end = self.pos + 1
                self.pos += 1
                self.skip()
                value = self.value(depth)
                if value is None:
                    at = self.pos
                    self.error(
                        member.colon,
                        member.colon + 1,
                        f"Expected a value after ':' for key {shorten(member.key)!r} "
                        f'(at {self.where(at)}), such as "on" or "off".',
                    )
                else:
                    member.value = value
                    member.end = value.end
                    incomplete = False
            else:
                if (
                    member.key_quoted
                    and text[member.key_end - 1] == '"'
                    and (member.key_end - member.key_start >= 2)
                ):  # an unterminated key already has its error
                    self.error(
                        member.key_start,
                        member.key_end,
                        f"Expected ':' after the key {shorten(member.key)!r}.",
                        data={"insert": ":", "at": member.key_end},
                    )
                # `"Key" "on"` on one line: read the value anyway (one error, not two)
                pos = self.pos
                if (
                    pos < self.n
                    and text[pos] not in ",:}]"
                    and "\n" not in text[member.key_end : pos]
                ):
                    value = self.value(depth)
                    if value is not None:
                        member.value = value
                        member.end = value.end
                        incomplete = False

    def array(self, depth: int) -> ArrayNode:
        text = self.text
        arr = ArrayNode(self.pos)
        self.open.append(arr)
        self.pos += 1
        items = arr.items
        state = 0
        while True:
            self.skip()
            pos = self.pos
            if pos >= self.n:
                return self.unclosed(arr)
            c = text[pos]
            if c == "]":
                return self.close(arr, pos, after_comma=state == 1)
            if c == ",":
                if self.comma(arr, pos, state == 2, "a value"):
                    state = 1
                continue
            if c in "}:":
                self.error(pos, pos + 1, f"Unexpected {c!r}: expected a value or ']'.")
                self.pos = pos + 1
                continue
            if state == 2:
                self.error(
                    pos,
                    pos + 1,
                    "Expected ',' between array items (or ']').",
                    data={"insert": ",", "at": items[-1].end},
                )
            item = self.value(depth)
            if item is None:  # cannot happen for the characters left, but never loop forever
                self.pos = pos + 1
                continue
            items.append(item)
            state = 2

    def comma(self, node: _Container, pos: int, after_entry: bool, expected: str) -> bool:
        """Read the ',' at `pos`: True when it follows an entry, else an error (removable)."""
        self.pos = pos + 1
        if after_entry:
            node.commas.append(pos)
            return True
        closer = "}" if isinstance(node, ObjectNode) else "]"
        message = f"Unexpected ',': expected {expected} or '{closer}'."
        self.error(pos, pos + 1, message, data={"delete": True})
        return False

    def close(self, node: _Container, pos: int, after_comma: bool) -> _Container:
        """`node` ends with the closer at `pos` (a comma right before it is an error)."""
        if after_comma and node.commas:
            closer = "}" if isinstance(node, ObjectNode) else "]"
            at = node.commas[-1]
            self.error(
                at,
                at + 1,
                f"Trailing comma before '{closer}': CANN's strict JSON parser rejects the whole "
                'file (it then retries the old line format and fails with "delimiter must be '
                'colon"). Remove the comma.',
                code="trailing-comma",
            )
        self.pos = node.end = pos + 1
        node.closed = True
        self.open.pop()
        return node

    def unclosed(self, node: _Container) -> _Container:
        """`node` runs to the end of the file: one error offering the closers to insert."""
        closer = "}" if isinstance(node, ObjectNode) else "]"
        self.error(
            self.n,
            self.n,
            f"Unexpected end of file: expected '{closer}' to close the {node.kind} opened at "
            f"{self.where(node.start)}.",
            data={"insert": self.missing(closer), "at": self.n},
            related=[Related(Span(node.start, node.start + 1), f"the {node.kind} opened here")],
        )
        node.end = self.n
        self.open.pop()
        return node


def shorten(text: str, limit: int = 120) -> str:
    """User text quoted in a message: long names and values are cut (a value can be 10 MB)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


_C_SPACE = " \t\n\v\f\r"  # what FE's Trim (C's isspace) removes; str.strip() removes more


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    """Offsets of `text[start:end]` without its surrounding ASCII blanks (empty: both at the
    start)."""
    part = text[start:end]
    lead = start + len(part) - len(part.lstrip(_C_SPACE))
    return lead, max(lead, start + len(part.rstrip(_C_SPACE)))


def _parse_lines(text: str, start: int) -> CfgDocument:
    """The old format: one `Name:on|off` per line; both name and value are trimmed. As FE's
    reader (getline, which keeps a CR): only an empty line is skipped, a line of blanks or a
    lone CR has no colon and is rejected, and an entry with no name is skipped."""
    doc = CfgDocument(text, "lines")
    findings = doc.syntax_findings
    pos = start
    n = len(text)
    while pos <= n and len(findings) < MAX_SYNTAX_FINDINGS:
        nl = text.find("\n", pos)
        line_end = n if nl < 0 else nl
        content_end = line_end - 1 if line_end > pos and text[line_end - 1] == "\r" else line_end
        lead, trail = _trimmed(text, pos, content_end)
        if line_end > pos:
            colon_at = text.find(":", pos, content_end)
            if colon_at < 0:
                found = (
                    f"Found {shorten(text[lead:trail])!r}."
                    if trail > lead
                    else "This line holds only blanks (or a CR): CANN skips only empty lines."
                )
                findings.append(
                    Finding(
                        "line-syntax",
                        "error",
                        Span(lead, trail) if trail > lead else Span(pos, line_end),
                        f"Expected Name:on or Name:off on this line: CANN rejects the whole file "
                        f'("delimiter must be colon"). {found}',
                        {"line_start": pos, "line_end": line_end},
                    )
                )
            else:
                ns, ne = _trimmed(text, pos, colon_at)
                vs, ve = _trimmed(text, colon_at + 1, content_end)
                entry = LineEntry(
                    text[ns:ne], ns, ne, text[vs:ve], vs, ve, pos, content_end, colon_at
                )
                doc.entries.append(entry)  # one with no name CANN skips (its value read)
        if nl < 0:
            break
        pos = nl + 1
    return doc
