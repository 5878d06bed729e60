"""What most handlers start with: the tracked document and a converter for it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..convert import Converter
from ..documents import OpenDocument
from ..recipe import annotations
from ..state import LARGE_DOCUMENT, run_for_request

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
    """Call a pure-layer function; for large documents on the request thread (one for the
    process, never behind an analysis: see `state`), so the event loop keeps answering other
    requests meanwhile, and requests on large documents take turns instead of competing."""
    if len(doc.text) < LARGE_DOCUMENT:
        return fn(*args, **kwargs)
    return await run_for_request(fn, *args, **kwargs)


async def annotated(
    ls: FusionSwitchServer, uri: str
) -> tuple[OpenDocument, Converter, CfgDocument, dict] | None:
    """For code lenses and inlay hints: the open configuration at `uri`, its converter, its
    parsed document and the last comparison attached to it; None when untracked or not
    compared yet (so nothing is analysed for files without results). The syntax tree is all
    they read: a large document's is parsed, not analysed, when no analysis is cached."""
    found = document(ls, uri)
    if found is None:
        return None
    doc, conv = found
    summary = annotations.results(ls, doc)
    if not summary:
        return None
    return doc, conv, await ls.state.document_async(doc), summary
