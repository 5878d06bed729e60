"""A comparison's results on the open configurations: diagnostics (with the syntax and rule
checks), code lenses, inlay hints, hover evidence; and telling the client to refresh them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from ..safety import log
from ..scopes import path_of

if TYPE_CHECKING:
    from ...cfg import CfgDocument, Finding
    from ..documents import OpenDocument
    from ..server import FusionSwitchServer


def results(ls: FusionSwitchServer, doc: OpenDocument) -> dict | None:
    """The last comparison attached to this configuration (loaded from disk on first use),
    its rules CANN will not switch off marked by the catalogue in force (a summary saved
    before compare marked them, or a rule the user's CANN or extra catalogue forbids)."""
    summary = ls.state.results.get(path_of(doc.uri))
    if summary:
        from ...catalogue.rules import mark_unswitchable

        named = [*(summary.get("suspects") or []), *(summary.get("unverified_rules") or [])]
        mark_unswitchable(named, ls.state.catalogue_for(doc.uri))
    return summary


def findings(ls: FusionSwitchServer, doc: OpenDocument, document: CfgDocument) -> list[Finding]:
    summary = results(ls, doc)
    if not summary:
        return []
    from ...workflow import annotate

    return annotate.findings(document, summary)


def evidence(ls: FusionSwitchServer, doc: OpenDocument) -> dict[str, str]:
    summary = results(ls, doc)
    if not summary:
        return {}
    from ...workflow import annotate

    return annotate.evidence_markdown(summary)


def send_status(ls: FusionSwitchServer) -> None:
    """`fusionSwitch/status` for clients that announced it (our VS Code extension)."""
    method = ls.state.client.status_notification
    if method is None or not ls.state.initialized:
        return
    try:
        ls.protocol.notify(method, ls.state.status())
    except Exception as exc:  # never let a status line break a command
        log(ls, f"fusion-switch: could not send {method}: {exc!r}")


def tell_detected_target(ls: FusionSwitchServer, label: str) -> None:
    from ..safety import show

    show(
        ls,
        f"fusion-switch: target {label} taken from the compared graphs (soc_version), because "
        "fusionSwitch.target is empty; set it to choose another.",
        types.MessageType.Info,
    )
