"""Document symbols (Switch/Priority > sections > rules) and folding ranges."""

from __future__ import annotations

from .model import Fold, Symbol
from .tree import ArrayNode, CfgDocument, Member, ObjectNode, StringNode

_KINDS = {0: "section", 1: "group", 2: "rule", 3: "rule"}


def symbols(doc: CfgDocument) -> list[Symbol]:
    if doc.format == "lines":
        return [Symbol(e.name, "rule", e.span, e.name_span, e.value) for e in doc.entries if e.name]
    root = doc.root
    if not isinstance(root, ObjectNode):
        return []
    return [_member_symbol(doc, m, 0) for m in root.members]


def _member_symbol(doc: CfgDocument, m: Member, depth: int) -> Symbol:
    value = m.value
    kind = _KINDS.get(depth, "rule")
    children: list[Symbol] = []
    detail = ""
    if isinstance(value, ObjectNode):
        children = [_member_symbol(doc, c, depth + 1) for c in value.members]
        if depth == 2 and children:  # a Priority stage holding rules
            kind = "group"
    elif isinstance(value, ArrayNode):
        children = [
            Symbol(i.value, "rule", i.span, i.span)
            for i in value.items
            if isinstance(i, StringNode)
        ]
    elif value is not None:
        detail = value.value if isinstance(value, StringNode) else doc.text[value.start : value.end]
        if depth == 0:
            kind = "key"
    if depth >= 2 and not isinstance(value, ObjectNode):
        kind = "rule"
    return Symbol(m.key, kind, m.span, m.key_span, detail, children)


def folds(doc: CfgDocument) -> list[Fold]:
    """One fold per object or array spanning more than one line."""
    text = doc.text
    return [
        Fold(node.start, node.end)
        for node in doc.containers()
        if "\n" in text[node.start : node.end]
    ]
