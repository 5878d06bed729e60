"""How recipe commands are declared: one object argument in, a small result out, and every
problem the user can fix shown as a message (`window/showMessage`) and returned as
`{"error": ...}` instead of an error response."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from .. import command_registry
from ..convert import Converter
from ..safety import show
from .target import CommandError, arguments

if TYPE_CHECKING:
    from ...cfg.model import Edit
    from ..documents import OpenDocument
    from ..server import FusionSwitchServer


class Refused(CommandError):
    """The command cannot run now (shown as a warning, not an error)."""


def recipe_command(name: str):
    def wrap(fn: Callable[[Any, dict], Awaitable[Any]]):
        # No functools.wraps: pygls reads the handler's annotations to structure arguments.
        async def handler(ls, *args):
            try:
                return await fn(ls, arguments(args))
            except CommandError as exc:
                kind = (
                    types.MessageType.Warning
                    if isinstance(exc, Refused)
                    else types.MessageType.Error
                )
                show(ls, str(exc), kind)
                return {"error": str(exc)}

        handler.__name__, handler.__doc__ = fn.__name__, fn.__doc__
        return command_registry.command(name)(handler)

    return wrap


async def apply_edits(
    ls: FusionSwitchServer, doc: OpenDocument, edits: list[Edit], label: str
) -> bool:
    """A `workspace/applyEdit` for the document's current version; whether it was applied."""
    if not ls.state.client.apply_edit:
        raise CommandError(
            "fusion-switch: this editor does not let the server edit files "
            "(no workspace/applyEdit support)."
        )
    if not edits:
        return True
    conv = Converter(doc.index, ls.state.encoding, ls.state.client)
    result = await ls.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(
            edit=conv.workspace_edit(edits, doc.uri, doc.version), label=label
        )
    )
    return bool(result is not None and result.applied)


async def replace_text(
    ls: FusionSwitchServer, doc: OpenDocument, new_text: str, label: str
) -> bool:
    """Bring the document to `new_text` with one minimal edit."""
    from ...workflow.replacement import replacement_edit

    edit = replacement_edit(doc.text, new_text)
    return await apply_edits(ls, doc, [edit] if edit is not None else [], label)


async def confirm(ls: FusionSwitchServer, message: str, action: str) -> bool:
    """Ask the user (`window/showMessageRequest`) when the client can; else refuse."""
    if not ls.state.client.show_message_request:
        return False
    try:
        answer = await ls.window_show_message_request_async(
            types.ShowMessageRequestParams(
                type=types.MessageType.Warning,
                message=message,
                actions=[types.MessageActionItem(action), types.MessageActionItem("Cancel")],
            )
        )
    except Exception:  # the client could not ask: nothing is changed
        return False
    return answer is not None and answer.title == action
