"""Showing new comparison results: diagnostics again, then lenses, hints and the status line.

Apart from :mod:`.annotations` (which the diagnostics feature reads) so that publishing, which
calls the diagnostics feature, does not make the two import each other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..features import diagnostics
from .annotations import send_status

if TYPE_CHECKING:
    from ..server import FusionSwitchServer


def refresh(ls: FusionSwitchServer) -> None:
    """After results changed: re-publish diagnostics, ask for lenses and hints again."""
    diagnostics.validate_all(ls)
    client = ls.state.client
    if client.code_lens and client.code_lens_refresh:
        ls.workspace_code_lens_refresh(None)
    if client.inlay_hints and client.inlay_hint_refresh:
        ls.workspace_inlay_hint_refresh(None)
    send_status(ls)
