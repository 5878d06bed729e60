"""What most handlers start with: the tracked document and a converter for it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..convert import Converter
from ..documents import OpenDocument
from ..state import LARGE_DOCUMENT

T = TypeVar("T")

if TYPE_CHECKING:
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
