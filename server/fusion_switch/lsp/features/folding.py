"""textDocument/foldingRange: objects spanning more than one line."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from ..safety import guarded
from .common import compute, document

if TYPE_CHECKING:
    from ..server import FusionSwitchServer

MAX_FOLDS = 5000  # as for symbols: enough for any real file, bounded for pathological ones


def register(server: FusionSwitchServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_FOLDING_RANGE)
    @guarded(list)
    async def folding_ranges(ls: FusionSwitchServer, params: types.FoldingRangeParams):
        from ... import cfg  # lazy: see engine note in state.py

        found = document(ls, params.text_document.uri)
        if found is None:
            return []
        doc, conv = found
        parsed = await ls.state.document_async(doc)
        folds = await compute(doc, cfg.folds, parsed)
        limit = min(ls.state.client.folding_range_limit or MAX_FOLDS, MAX_FOLDS)
        ranges = []
        for fold in folds:
            if len(ranges) >= limit:
                break
            folding_range = conv.folding_range(fold)
            if folding_range is not None:
                ranges.append(folding_range)
        return ranges
