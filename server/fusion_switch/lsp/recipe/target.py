"""Which configuration a command acts on, and the workspace folder it belongs to.

Every recipe command takes one object argument whose optional `cfgUri` names the
configuration; without it, the only open configuration is used, else the user is asked to
name one (`CommandError`, shown as a message)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..documents import OpenDocument, file_name
from ..scopes import path_of

if TYPE_CHECKING:
    from ..server import FusionSwitchServer


class CommandError(Exception):
    """A problem the user can fix; its text is shown as is (no traceback)."""


def arguments(args: tuple) -> dict[str, Any]:
    """The command's one object argument (a bare string is taken as `cfgUri`)."""
    if not args or args[0] is None:
        return {}
    first = args[0]
    if isinstance(first, str):
        return {"cfgUri": first}
    if isinstance(first, dict):
        return first
    raise CommandError(
        "fusion-switch: commands take one object argument such as "
        f'{{"cfgUri": "file:///…/fusion_switch.cfg"}}, got {type(first).__name__}'
    )


def config(ls: FusionSwitchServer, params: dict[str, Any], *, command: str) -> OpenDocument:
    """The open configuration named by `cfgUri`, or the only open one."""
    uri = params.get("cfgUri")
    docs = list(ls.state.documents)
    if uri is not None:
        if not isinstance(uri, str):
            raise CommandError(f"fusion-switch: {command}: cfgUri must be a URI string")
        doc = ls.state.documents.get(uri)
        if doc is None:
            raise CommandError(
                f"fusion-switch: {command}: {file_name(uri)} is not open as a fusion switch "
                "configuration; open it first."
            )
        return doc
    if len(docs) == 1:
        return docs[0]
    if not docs:
        raise CommandError(
            f"fusion-switch: {command}: open a fusion_switch.cfg first (or pass cfgUri)."
        )
    names = ", ".join(sorted(file_name(d.uri) for d in docs))
    raise CommandError(
        f"fusion-switch: {command}: {len(docs)} configurations are open ({names}); "
        "say which one with cfgUri."
    )


def file_path(doc: OpenDocument, *, command: str) -> Path:
    path = path_of(doc.uri)
    if path is None:
        raise CommandError(
            f"fusion-switch: {command} needs a configuration saved on disk ({doc.uri} is not a "
            "file: URI); save it first."
        )
    return path


def workspace_folder(ls: FusionSwitchServer, path: Path) -> Path:
    """The innermost workspace folder holding `path`; else the root; else the file's folder."""
    folder = ls.state.scopes.folder_holding(path)
    folder_path = path_of(folder) if folder is not None else None
    if folder_path is not None:
        return folder_path
    root = ls.workspace.root_path
    if root and path.is_relative_to(root):
        return Path(root)
    return path.parent
