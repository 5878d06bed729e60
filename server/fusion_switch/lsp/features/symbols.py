"""textDocument/documentSymbol: sections and rules (hierarchical when the client can)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from lsprotocol import types

from ..safety import guarded
from .common import compute, document

if TYPE_CHECKING:
    from ...cfg.model import Symbol
    from ..server import FusionSwitchServer

# Like VS Code's JSON support (json.maxItemsComputed), an outline stops at this many symbols:
# a 200,000-entry file would otherwise take seconds to send and render.
MAX_SYMBOLS = 5000


def limit(symbols: list[Symbol], budget: int) -> list[Symbol]:
    """The first `budget` symbols in document order (parents before their children)."""
    kept: list[Symbol] = []
    for symbol in symbols:
        if budget <= 0:
            break
        budget -= 1
        children = limit(symbol.children, budget)
        budget -= _count(children)
        kept.append(replace(symbol, children=children))
    return kept


def _count(symbols: list[Symbol]) -> int:
    return sum(1 + _count(s.children) for s in symbols)


def register(server: FusionSwitchServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    @guarded(list)
    async def document_symbols(ls: FusionSwitchServer, params: types.DocumentSymbolParams):
        from ... import cfg  # lazy: see engine note in state.py

        found = document(ls, params.text_document.uri)
        if found is None:
            return []
        doc, conv = found
        parsed = await ls.state.document_async(doc)
        found_symbols = limit(await compute(doc, cfg.symbols, parsed), MAX_SYMBOLS)
        if ls.state.client.hierarchical_symbols:
            return [conv.document_symbol(s) for s in found_symbols]
        return conv.symbol_information(found_symbols, doc.uri)
