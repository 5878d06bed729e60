"""Recipe commands that edit the configuration: all off (step 1), restore, apply suspects."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from lsprotocol import types

from ..documents import file_name
from ..safety import show
from . import annotations, target
from .command import CommandError, Refused, apply_edits, confirm, recipe_command, replace_text

if TYPE_CHECKING:
    from ..server import FusionSwitchServer

ALL_OFF = "fusionSwitch.allOff"
RESTORE = "fusionSwitch.restore"
APPLY_SUSPECTS = "fusionSwitch.applySuspects"


@recipe_command(ALL_OFF)
async def all_off(ls: FusionSwitchServer, params: dict):
    """Both sections `"ALL": "off"`; the previous text is saved first, for restore."""
    from ... import cfg
    from ...workflow.backup import changed_since_all_off, load_backup, save_backup
    from ...workflow.state_dir import atomic_write, state_file

    doc = target.config(ls, params, command=ALL_OFF)
    path = target.file_path(doc, command=ALL_OFF)
    name = file_name(doc.uri)
    analysis = await ls.state.analysis_async(doc)
    new_text = cfg.all_off_text(analysis.document)
    previous = load_backup(path)
    if previous is not None and not changed_since_all_off(previous, doc.text):
        show(
            ls,
            f"fusion-switch: {name} is already all off; the configuration from before is still "
            "kept for fusionSwitch.restore.",
            types.MessageType.Info,
        )
        return {"applied": False, "alreadyAllOff": True}
    backup_file = state_file(path, "before-all-off.json")
    old_backup = backup_file.read_text(encoding="utf-8") if previous is not None else None
    save_backup(path, doc.text, new_text)
    applied = False
    try:
        applied = await replace_text(ls, doc, new_text, "Fusion Switch: all fusion off")
    finally:
        if not applied:  # nothing changed in the editor: put the old backup state back
            if old_backup is None:
                backup_file.unlink(missing_ok=True)
            else:
                atomic_write(backup_file, old_backup)
    if not applied:
        raise CommandError(f"fusion-switch: the editor did not apply the edit to {name}.")
    show(
        ls,
        f"fusion-switch: all fusion is off in {name}. Build and dump the fusion-off model, then "
        "run 'Restore Configuration' (fusionSwitch.restore) to get your configuration back.",
        types.MessageType.Info,
    )
    return {"applied": True, "backup": os.fspath(backup_file)}


@recipe_command(RESTORE)
async def restore(ls: FusionSwitchServer, params: dict):
    """The exact text from before all off (also after a restart: it is kept on disk)."""
    from ...workflow.backup import changed_since_all_off, clear_backup, load_backup

    doc = target.config(ls, params, command=RESTORE)
    path = target.file_path(doc, command=RESTORE)
    name = file_name(doc.uri)
    backup = load_backup(path)
    if backup is None:
        raise Refused(
            f"fusion-switch: nothing to restore for {name}: fusionSwitch.allOff has not saved "
            "a configuration for it (or it was restored already)."
        )
    if changed_since_all_off(backup, doc.text) and doc.text != backup.text:
        question = (
            f"fusion-switch: {name} was edited since 'all off' ({backup.path_hint}); restoring "
            "replaces those edits with the configuration from before."
        )
        if not params.get("force") and not await confirm(ls, question, "Restore anyway"):
            raise Refused(
                question + ' Nothing was changed; run restore with {"force": true} to replace them.'
            )
    if not await replace_text(ls, doc, backup.text, "Fusion Switch: restore configuration"):
        raise CommandError(f"fusion-switch: the editor did not apply the edit to {name}.")
    clear_backup(path)
    show(ls, f"fusion-switch: {name} is back as it was before 'all off'.", types.MessageType.Info)
    return {"applied": True}


@recipe_command(APPLY_SUSPECTS)
async def apply_suspects(ls: FusionSwitchServer, params: dict):
    """Switch the suspected rules off (all, or `rules`), adding entries and sections. Only
    rules the replay proves (`introduces`) by default; `includeUnverified: true` adds the
    suspected but unproven ones (heuristic guesses, undecided passes).

    If the file is still exactly as 'all off' left it, the rules are switched off in the
    configuration from before all off (that is the recipe's end: the user's own
    configuration minus the guilty rules), and the backup is used up."""
    from ... import cfg
    from ...workflow import annotate
    from ...workflow.backup import changed_since_all_off, clear_backup, load_backup

    doc = target.config(ls, params, command=APPLY_SUSPECTS)
    name = file_name(doc.uri)
    summary = annotations.results(ls, doc)
    if not summary:
        raise Refused(
            f"fusion-switch: no comparison results for {name} yet; run fusionSwitch.compare first."
        )
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
    path = target.path_of(doc.uri)
    backup = load_backup(path) if path is not None else None
    if backup is not None and not changed_since_all_off(backup, doc.text):
        base = cfg.parse(backup.text)
        edits = cfg.set_switches(base, changes)
        if not edits and base.has_syntax_errors:
            raise CommandError(
                f"fusion-switch: the configuration saved before 'all off' has syntax errors; "
                f"run fusionSwitch.restore and fix {name} first."
            )
        new_text = cfg.apply_edits(backup.text, edits)
        if not await replace_text(ls, doc, new_text, "Fusion Switch: turn suspected rules off"):
            raise CommandError(f"fusion-switch: the editor did not apply the edit to {name}.")
        clear_backup(path)
        note = " (in the configuration from before 'all off', which is now restored)"
        restored = True
    else:
        analysis = await ls.state.analysis_async(doc)
        edits = cfg.set_switches(analysis.document, changes)
        if not edits and analysis.document.has_syntax_errors:
            raise CommandError(f"fusion-switch: fix the syntax errors in {name} first.")
        if not await apply_edits(ls, doc, edits, "Fusion Switch: turn suspected rules off"):
            raise CommandError(f"fusion-switch: the editor did not apply the edit to {name}.")
        note, restored = "", False
    rule_names = ", ".join(f"{r} ({s})" for s, r, _ in changes)
    show(ls, f"fusion-switch: switched off {rule_names} in {name}{note}.", types.MessageType.Info)
    return {"applied": True, "changes": listed, "restoredFromAllOff": restored}
