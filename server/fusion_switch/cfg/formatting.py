"""Formatting in the layout of the CANN docs: 2-space indent, `"Key": value`, one entry a line."""

from __future__ import annotations

from .tree import ArrayNode, CfgDocument, Node, ObjectNode

INDENT = "  "
SKELETON = '{\n  "Switch": {\n    "GraphFusion": {\n    },\n    "UBFusion": {\n    }\n  }\n}\n'
_SAFE_SYNTAX = {"trailing-comma"}  # formatting drops trailing commas; other errors block it


def render(text: str, node: Node, level: int = 0, indent: str = INDENT) -> str:
    """A node re-laid out; strings and numbers keep their original spelling."""
    if isinstance(node, ObjectNode):
        members = [m for m in node.members if m.value is not None]
        if not members:
            return "{}"
        inner = indent * (level + 1)
        body = ",\n".join(
            f"{inner}{text[m.key_start : m.key_end]}: {render(text, m.value, level + 1, indent)}"
            for m in members
        )
        return "{\n" + body + "\n" + indent * level + "}"
    if isinstance(node, ArrayNode):
        if not node.items:
            return "[]"
        inner = indent * (level + 1)
        body = ",\n".join(inner + render(text, item, level + 1, indent) for item in node.items)
        return "[\n" + body + "\n" + indent * level + "]"
    return text[node.start : node.end]


def format_document(doc: CfgDocument) -> str | None:
    """The whole formatted text, or None when syntax errors make formatting unsafe. Lines end
    as the document's first line does (CRLF or LF)."""
    body = _formatted_body(doc)
    if body is None:
        return None
    bom = "\ufeff" if doc.text.startswith("\ufeff") or body.startswith("\ufeff") else ""
    return bom + (body.replace("\n", "\r\n") if _crlf(doc.text) else body)


def _crlf(text: str) -> bool:
    end = text.find("\n")
    return end > 0 and text[end - 1] == "\r"


def _formatted_body(doc: CfgDocument) -> str | None:
    if doc.format == "empty":
        return None
    if doc.format == "lines":
        if any(f.severity == "error" and f.code == "line-syntax" for f in doc.syntax_findings):
            return None
        # a first name starting with U+FEFF gets a mark before it (format_document): read
        # back, the file's mark is dropped and the name keeps its own
        return "".join(f"{e.name}:{e.value}\n" for e in doc.entries)
    if doc.root is None:
        return None
    if any(f.code not in _SAFE_SYNTAX for f in doc.syntax_findings):
        return None
    return render(doc.text, doc.root) + "\n"
