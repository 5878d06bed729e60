"""What most handlers start with: the tracked document and a converter for it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..convert import Converter
from ..documents import OpenDocument
from ..recipe import annotations
from ..state import LARGE_DOCUMENT

T = TypeVar("T")

if TYPE_CHECKING:
    from ...cfg import CfgDocument
    from ..server import FusionSwitchServer


def document(ls: FusionSwitchServer, uri: str) -> tuple[OpenDocument, Converter] | None:
    """The open configuration at `uri` with a converter, or None for untracked documents."""
    doc = ls.state.documents.get(uri)
    if doc is None:
        return None
    return doc, Converter(doc.index, ls.state.encoding, ls.state.client)


async def compute(doc: OpenDocument, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call a pure-layer function; for large documents on a worker thread, so the event loop
    keeps answering other requests meanwhile."""
    if len(doc.text) < LARGE_DOCUMENT:
        return fn(*args, **kwargs)
    return await asyncio.to_thread(fn, *args, **kwargs)


async def annotated(
    ls: FusionSwitchServer, uri: str
) -> tuple[OpenDocument, Converter, CfgDocument, dict] | None:
    """For code lenses and inlay hints: the open configuration at `uri`, its converter, its
    parsed document and the last comparison attached to it; None when untracked or not
    compared yet (so nothing is analysed for files without results)."""
    found = document(ls, uri)
    if found is None:
        return None
    doc, conv = found
    summary = annotations.results(ls, doc)
    if not summary:
        return None
    analysis = await ls.state.analysis_async(doc)
    return doc, conv, analysis.document, summary
