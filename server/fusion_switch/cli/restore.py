"""`fusion-switch restore CFG [--version N] [--list] [--yes]`: bring back a configuration from
its edit history, byte for byte (default: the state before our last change that was not a
restore, so restoring twice is harmless; after `apply` on the all-off file, which switches the
suspects off in the configuration from before `off --all`, the state before `off --all`: the
user's own configuration, as the editor's restore; --version N undoes a restore).

Only files the history index names, with the content digest it recorded, are applied; anything
else in the history folder is refused (an interactive user may confirm a changed version).
The restore itself is recorded, so it can be undone the same way.
Exit status: 0 restored (or listed), 1 declined or refused, 2 bad input.
"""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "restore",
        help="restore a fusion_switch.cfg from its edit history",
        description=(
            "List the versions fusion-switch recorded for a configuration, or restore one "
            "byte for byte (default: the state before the last change)."
        ),
    )
    parser.add_argument("cfg", metavar="CFG", help="the fusion_switch.cfg")
    parser.add_argument("--version", type=int, metavar="N", help="version to restore")
    parser.add_argument("--list", action="store_true", help="list the versions and exit")
    parser.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    parser.set_defaults(func=run)


def confirm(question: str) -> bool:
    """Ask on the terminal; False when there is no terminal to ask on."""
    if not sys.stdin.isatty():
        return False
    try:
        answer = input(f"{question} [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def run(args: argparse.Namespace) -> int:
    from ..workflow.changes import ChangeError, read_cfg, write_change
    from ..workflow.history import History, HistoryError, Untrusted, describe

    try:
        cfg = read_cfg(args.cfg, must_exist=False, as_text=False)
        history = History(cfg.path)
        versions = history.versions()
        strays = history.unindexed()
    except ChangeError as exc:
        print(f"fusion-switch restore: {exc}", file=sys.stderr)
        return 2
    except HistoryError as exc:
        print(f"fusion-switch restore: {exc}", file=sys.stderr)
        return 1
    if strays:
        print(
            f"fusion-switch restore: ignoring {len(strays)} file(s) in {history.folder} that "
            f"fusion-switch did not record: {', '.join(strays[:5])}",
            file=sys.stderr,
        )
    if args.list:
        if not versions:
            print(f"{cfg.path}: no history yet.")
            return 0
        print(f"{cfg.path}: versions (restore N brings back the file as it was before change N)")
        for v in versions:
            print(describe(v))
        return 0
    if not versions:
        print(
            f"fusion-switch restore: {cfg.path} has no history: fusion-switch has not changed it.",
            file=sys.stderr,
        )
        return 1
    try:
        version = history.get(args.version) if args.version is not None else history.default()
        if version is None:
            print(
                f"fusion-switch restore: {cfg.path}: the history holds only restores; name a "
                "version with --version N (see --list)",
                file=sys.stderr,
            )
            return 1
        try:
            data = history.content(version)
        except Untrusted as exc:
            print(f"fusion-switch restore: {exc}", file=sys.stderr)
            if not confirm("Apply this file even though fusion-switch cannot vouch for it?"):
                return 1
            data = history.content(version, trust_changed=True)
    except HistoryError as exc:
        print(f"fusion-switch restore: {exc}", file=sys.stderr)
        return 1
    from ..workflow.restore_choice import default_note

    note = default_note(versions, version) if args.version is None else ""
    note = f" ({version.why}): {note}" if note else ""
    if data == cfg.data:
        print(f"fusion-switch: {cfg.path} is already as version {version.number} had it{note}.")
        return 0
    edited = versions[-1].wrote(cfg.data) is False
    what = "remove the file (it did not exist then)" if data is None else "replace the file"
    question = (
        f"Restore {cfg.path} to its state before change {version.number} "
        f"({version.why}, {version.when}, by {version.who}){note}? This will {what}."
    )
    if edited:
        question += " The file was edited since fusion-switch last wrote it; those edits are kept"
        question += " in the history too."
    if not args.yes and not confirm(question):
        print(
            f"fusion-switch restore: nothing changed ({question} Run again with --yes to "
            "restore without asking.)",
            file=sys.stderr,
        )
        return 1
    try:
        recorded = write_change(
            cfg, data, who="cli", kind="restore", why=f"restore version {version.number}"
        )
    except ChangeError as exc:
        print(f"fusion-switch restore: {exc}", file=sys.stderr)
        return 2
    undo = f" (undo: fusion-switch restore {cfg.path})" if recorded else ""
    print(
        f"fusion-switch: {cfg.path} restored to its state before change {version.number}"
        f"{note}{undo}."
    )
    return 0
