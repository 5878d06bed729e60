"""Recipe commands that edit the configuration: all off (step 1), restore, apply suspects.

They change the editor's buffer (a versioned WorkspaceEdit) and record every change in the
same edit history as the command line (workflow/history.py, `who="editor"`): a change made
here is restorable with `fusion-switch restore`, and one made there with fusionSwitch.restore.
The previous text is recorded before the edit is sent; if the editor refuses the edit, the
version is dropped again.

An editor does not save what `workspace/applyEdit` changes, and CANN reads the file on disk: a
change is said to be saved only when the file holds it once the edit is answered (our VS Code
extension saves a file that had no unsaved changes), else to be in the editor, to be saved
before building. Its version is pending until the file changes (`History.record(in_buffer=
True)`): the terminal lists only what the file went through, the editor (`holding` its text)
also what its buffer did.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from ..documents import file_name
from ..safety import show
from ..scopes import path_of
from . import annotations, target
from .command import CommandError, Refused, apply_edits, confirm, recipe_command, replace_text

if TYPE_CHECKING:
    from ...workflow.history import History, Version
    from ..server import FusionSwitchServer

ALL_OFF = "fusionSwitch.allOff"
RESTORE = "fusionSwitch.restore"
APPLY_SUSPECTS = "fusionSwitch.applySuspects"


_BOM = b"\xef\xbb\xbf"


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _as_saved(path, text: str) -> bytes:
    """The bytes the editor saves for ``text`` at ``path``: with the file's byte-order mark
    when it has one. Editors hold such a file's text without the mark and save it back with
    it, and the terminal commands record and compare the file's bytes: a version recorded
    without it came back without it, and a change made in the terminal was never recognised
    as the text the editor showed."""
    data = _encode(text)
    if path is None or text.startswith("\ufeff"):
        return data
    try:
        with open(path, "rb") as file:
            head = file.read(len(_BOM))
    except OSError:
        return data
    return _BOM + data if head == _BOM else data


def _history(path) -> History:
    from ...workflow.history import History

    return History(path)


def _label(version: Version) -> str:
    return "all off" if version.kind == "all-off" else version.why


def _saved(path, text: str) -> bool:
    """Whether the file on disk holds ``text`` (as the editor saves it)."""
    from ...workflow.safe_files import read_regular

    try:
        return read_regular(path) == _as_saved(path, text)
    except Exception:  # unreadable, gone, unsafe: not saved
        return False


def _kept(name: str, saved: bool) -> str:
    """How the change stands, said after it: saved, or to be saved before building."""
    if saved:
        return " Saved."
    return (
        f" The change is in the editor only: save {name} before you build (CANN reads the "
        "file on disk)."
    )


async def _recorded_replace(
    ls: FusionSwitchServer, doc, path, new_text: str, label: str, **record
) -> Version | None:
    """Record the document's text in the history, then replace it; drop the record when the
    editor does not apply the edit. Returns the version (None: nothing to change)."""
    from ...workflow.history import HistoryError
    from ...workflow.safe_files import UnsafePath

    if new_text == doc.text:
        return None
    history = _history(path)
    try:
        version = history.record(
            _as_saved(path, doc.text),
            _as_saved(path, new_text),
            who="editor",
            in_buffer=True,
            **record,
        )
    except (HistoryError, UnsafePath, OSError) as exc:
        raise CommandError(
            f"fusion-switch: cannot record the change in the history next to "
            f"{file_name(doc.uri)}: {exc}; nothing was changed."
        ) from None
    applied = False
    try:
        applied = await replace_text(ls, doc, new_text, label)
    finally:
        if not applied:
            history.forget(version)
    if not applied:
        raise CommandError(
            f"fusion-switch: the editor did not apply the edit to {file_name(doc.uri)}."
        )
    if _saved(path, new_text):  # the editor saved it: listed for the terminal too, for good
        history.settle(_as_saved(path, new_text))
    return version


def _json_note(document, name: str, changes, catalogue) -> str:
    """Said when a line-format file was rewritten as JSON for rules GE reads (as the CLI
    says it: `workflow.switching.json_note`)."""
    from ...workflow.switching import json_note

    note = json_note(name, document.text, changes, catalogue)
    return "; " + note if note else ""


def _say_still_all_off(ls: FusionSwitchServer, name: str, text: str) -> None:
    """As `apply` says it: the rules went in beside "ALL": "off" (a file edited since 'all
    off' wrote it is not taken for the recipe's first step, matched byte for byte)."""
    from ...workflow.switching import sections_all_off

    sections = sections_all_off(text)
    if sections:
        show(
            ls,
            f'fusion-switch: {name} still has "ALL": "off" in {" and ".join(sections)}, so all '
            "of that fusion stays off (the file was changed since 'all off' wrote it, so it was "
            "not taken for the recipe's first step). To end on your own configuration, run "
            "'Restore Configuration' (fusionSwitch.restore) to the version from before all "
            "off, then apply the suspects again.",
            types.MessageType.Warning,
        )


@recipe_command(ALL_OFF)
async def all_off(ls: FusionSwitchServer, params: dict):
    """Both sections `"ALL": "off"`; the previous text is kept in the history, for restore."""
    from ... import cfg

    doc = target.config(ls, params, command=ALL_OFF)
    path = target.file_path(doc, command=ALL_OFF)
    name = file_name(doc.uri)
    analysis = await ls.state.analysis_async(doc)
    new_text = cfg.all_off_text(analysis.document)
    holding = _as_saved(path, doc.text)
    latest = _safe_latest(path, holding)
    if new_text == doc.text or (
        latest is not None and latest.kind == "all-off" and latest.wrote(holding)
    ):
        show(
            ls,
            f"fusion-switch: {name} is already all off; the configuration from before is still "
            "kept for fusionSwitch.restore.",
            types.MessageType.Info,
        )
        return {"applied": False, "alreadyAllOff": True}
    version = await _recorded_replace(
        ls,
        doc,
        path,
        new_text,
        "Fusion Switch: all fusion off",
        kind="all-off",
        why="all fusion off",
    )
    from ...workflow.switching import kept_on_by_cann

    kept = kept_on_by_cann(ls.state.catalogue_for(doc.uri))
    still = (
        f" CANN's own fusion configuration switches on {', '.join(r for _, r in kept)}, which "
        "beats ALL: they stay on (switch them off by name to include them)."
        if kept
        else ""
    )
    saved = _saved(path, new_text)
    restore = (
        "run 'Restore Configuration' (fusionSwitch.restore, or 'fusion-switch restore' in a "
        "terminal) to get your configuration back."
    )
    if saved:
        text = (
            f"fusion-switch: all fusion is off in {name} (saved).{still} Build and dump the "
            f"fusion-off model, then {restore}"
        )
    else:
        text = (
            f"fusion-switch: all fusion is off in the editor's {name}, not yet on disk: save "
            f"it before you build (CANN reads the file).{still} Then build and dump the "
            f"fusion-off model, and {restore}"
        )
    show(ls, text, types.MessageType.Info if saved else types.MessageType.Warning)
    return {
        "applied": True,
        "version": version.number if version else None,
        "keptOnByCann": [f"{s}:{r}" for s, r in kept],
        "saved": saved,
    }


def _safe_latest(path, holding: bytes) -> Version | None:
    from ...workflow.history import HistoryError

    try:
        return _history(path).latest(holding)
    except HistoryError:
        return None


@recipe_command(RESTORE)
async def restore(ls: FusionSwitchServer, params: dict):
    """The exact text from before our last change (also after a restart, and also when the
    change was made by `fusion-switch` in a terminal); after 'Turn Suspected Rules Off' on the
    all-off file, the user's configuration from before 'all off'. `version` picks another
    one; `list: true` returns the versions to choose from and changes nothing."""
    from ...workflow.history import HistoryError, Untrusted
    from ...workflow.restore_choice import choices, default_note

    doc = target.config(ls, params, command=RESTORE)
    path = target.file_path(doc, command=RESTORE)
    name = file_name(doc.uri)
    history = _history(path)
    holding = _as_saved(path, doc.text)
    number = params.get("version")
    if number is not None and (not isinstance(number, int) or isinstance(number, bool)):
        raise CommandError("fusion-switch: restore: version must be a version number.")
    try:
        versions = history.versions(holding)
        if params.get("list") is True:
            return choices(versions)
        version = history.get(number, holding) if number is not None else history.default(holding)
        if version is None and versions:
            raise Refused(
                f"fusion-switch: nothing to restore for {name}: its history holds only "
                'restores; name the version to bring back ({"version": N}; {"list": true} '
                "lists them)."
            )
        if version is None:
            raise Refused(f"fusion-switch: nothing to restore for {name}: it has no history.")
        data = history.content(version)
    except Untrusted as exc:
        raise Refused(f"fusion-switch: {exc}. Nothing was changed.") from None
    except HistoryError as exc:
        raise Refused(f"fusion-switch: {exc}") from None
    which = f"'{_label(version)}' (version {version.number})"
    note = default_note(versions, version) if number is None else ""
    if data is None:
        raise Refused(
            f"fusion-switch: {name} did not exist before change {version.number}; delete the "
            "file to go back to that state."
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused(f"fusion-switch: version {version.number} is not UTF-8 text.") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    if text == doc.text:
        raise Refused(
            f"fusion-switch: nothing to restore for {name}: it is already as it was before "
            f"{which}" + (f": {note}." if note else ".")
        )
    newest = versions[-1]
    if not newest.wrote(holding):
        question = (
            f"fusion-switch: {name} was edited since '{_label(newest)}' ({newest.when}); "
            "restoring replaces those edits with the configuration from before (they are "
            "kept in the history)."
        )
        if not params.get("force") and not await confirm(ls, question, "Restore anyway"):
            raise Refused(
                question + ' Nothing was changed; run restore with {"force": true} to replace them.'
            )
    await _recorded_replace(
        ls,
        doc,
        path,
        text,
        "Fusion Switch: restore configuration",
        kind="restore",
        why=f"restore version {version.number}",
    )
    saved = _saved(path, text)
    show(
        ls,
        f"fusion-switch: {name} is back as it was before {which}"
        + (f": {note}." if note else ".")
        + _kept(name, saved),
        types.MessageType.Info if saved else types.MessageType.Warning,
    )
    return {"applied": True, "version": version.number, "saved": saved}


def _no_results(ls: FusionSwitchServer, doc, name: str) -> str:
    """Why there is nothing to apply to this file: results are applied only to the
    configuration they were made for (a review: model A's applied to model B's cfg)."""
    from ...workflow.results import foreign_results

    path = path_of(doc.uri)
    other = foreign_results(path) if path is not None else None
    last = ls.state.results.last_compared
    if other is not None:
        return (
            f"fusion-switch: nothing applied to {name}: the comparison results kept beside it "
            f"were made for {other}, not for this file. Run fusionSwitch.compare for {name} "
            "to get its own."
        )
    if last is not None and last != path:
        return (
            f"fusion-switch: nothing applied to {name}: it has no comparison results; the last "
            f"comparison was made for {last}, and its results apply to that file only. Run "
            f"fusionSwitch.compare for {name} first."
        )
    return f"fusion-switch: no comparison results for {name} yet; run fusionSwitch.compare first."


@recipe_command(APPLY_SUSPECTS)
async def apply_suspects(ls: FusionSwitchServer, params: dict):
    """Switch the suspected rules off (all, or `rules`), adding entries and sections. Only
    rules the replay proves (`introduces`) by default; `includeUnverified: true` adds the
    suspected but unproven ones (heuristic guesses, undecided passes).

    If the file is still exactly as our 'all off' left it (here or in a terminal), the rules
    are switched off in the configuration from before all off: the recipe's end, the user's
    own configuration minus the guilty rules."""
    from ... import cfg
    from ...workflow import annotate
    from ...workflow.history import HistoryError

    doc = target.config(ls, params, command=APPLY_SUSPECTS)
    name = file_name(doc.uri)
    summary = annotations.results(ls, doc)
    if not summary:
        raise Refused(_no_results(ls, doc, name))
    rules = params.get("rules")
    if rules is not None and not (
        isinstance(rules, list) and all(isinstance(r, str) for r in rules)
    ):
        raise CommandError("fusion-switch: applySuspects: rules must be a list of rule names.")
    include_unverified = params.get("includeUnverified") is True
    changes = annotate.suspect_changes(summary, rules, include_unverified)
    if not changes:
        raise Refused(
            f"fusion-switch: the last comparison suspects no rule to switch off in {name}."
        )
    listed = [{"section": s, "rule": r, "value": v} for s, r, v in changes]
    path = path_of(doc.uri)
    base_text = None
    if path is not None:
        latest = _safe_latest(path, _as_saved(path, doc.text))
        all_off = latest is not None and latest.kind == "all-off"
        if all_off and latest.wrote(_as_saved(path, doc.text)):
            try:
                data = _history(path).content(latest)
                base_text = data.decode("utf-8").removeprefix("\ufeff") if data else None
            except (HistoryError, UnicodeDecodeError):
                base_text = None
    rule_names = ", ".join(f"{r} ({s})" for s, r, _ in changes)
    why = f"apply suspects: {rule_names} off"
    catalogue = ls.state.catalogue_for(doc.uri)  # the folder's (its extra files), not the window's
    if base_text is not None:
        base = cfg.parse(base_text)
        edits = cfg.set_switches(base, changes, catalogue)
        if not edits and base.has_syntax_errors:
            raise CommandError(
                f"fusion-switch: the configuration saved before 'all off' has syntax errors; "
                f"run fusionSwitch.restore and fix {name} first."
            )
        new_text = cfg.apply_edits(base_text, edits)
        await _recorded_replace(
            ls,
            doc,
            path,
            new_text,
            "Fusion Switch: turn suspected rules off",
            kind="apply",
            why=why,
            rules=[f"{s}:{r}" for s, r, _ in changes],
        )
        note = " (in the configuration from before 'all off', which is now restored)"
        note += _json_note(base, name, changes, catalogue)
        restored = True
    else:
        analysis = await ls.state.analysis_async(doc)
        if analysis.document.text != doc.text:  # typed into while it was analysed (a review)
            raise CommandError(
                f"fusion-switch: {name} changed while the suspects were being applied; "
                "nothing was changed: run the command again."
            )
        edits = cfg.set_switches(analysis.document, changes, catalogue)
        if not edits and analysis.document.has_syntax_errors:
            raise CommandError(f"fusion-switch: fix the syntax errors in {name} first.")
        if path is not None:
            new_text = cfg.apply_edits(doc.text, edits)
            await _recorded_replace(
                ls,
                doc,
                path,
                new_text,
                "Fusion Switch: turn suspected rules off",
                kind="apply",
                why=why,
                rules=[f"{s}:{r}" for s, r, _ in changes],
            )
        elif not await apply_edits(ls, doc, edits, "Fusion Switch: turn suspected rules off"):
            raise CommandError(f"fusion-switch: the editor did not apply the edit to {name}.")
        note, restored = _json_note(analysis.document, name, changes, catalogue), False
        _say_still_all_off(ls, name, cfg.apply_edits(analysis.document.text, edits))
    saved = path is not None and _saved(path, new_text)
    show(
        ls,
        f"fusion-switch: switched off {rule_names} in {name}{note}.{_kept(name, saved)}",
        types.MessageType.Info if saved else types.MessageType.Warning,
    )
    return {"applied": True, "changes": listed, "restoredFromAllOff": restored, "saved": saved}
