"""`fusion-switch off CFG --all | RULE...`: step 1 of the recipe (all fusion off) or chosen rules
off, recorded in the edit history so that `fusion-switch restore CFG` undoes it byte for byte.

Exit status: 0 done (or nothing to change), 2 bad input or a refused rule (nothing written).
"""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "off",
        help="switch all fusion, or chosen rules, off in a fusion_switch.cfg",
        description=(
            'Switch fusion rules off: --all writes "ALL": "off" in both sections (step 1 '
            "of the recipe); RULE names go to their section from the catalogue "
            "(Section:Rule for rules it does not know). The previous file is kept in the "
            "edit history: 'fusion-switch restore CFG' brings it back."
        ),
    )
    add_common(parser)
    parser.add_argument("--all", action="store_true", help="all fusion off (both sections)")
    parser.set_defaults(func=run)


def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cfg", metavar="CFG", help="the fusion_switch.cfg to change")
    parser.add_argument("rules", nargs="*", metavar="RULE", help="rule names")
    parser.add_argument(
        "--catalogue",
        action="append",
        default=[],
        metavar="EXTRA.json",
        help="extra rule catalogue or CANN fusion_config.json (repeatable)",
    )


def catalogue_for(args: argparse.Namespace):
    """As `check` and the editor: built-in + the user's CANN install + --catalogue files."""
    from ..catalogue.cann import load_catalogue_with_cann

    catalogue, problems, _ = load_catalogue_with_cann(list(args.catalogue))
    for problem in problems:
        print(f"fusion-switch: warning: catalogue not loaded: {problem}", file=sys.stderr)
    return catalogue


def switch(args: argparse.Namespace, value: str) -> int:
    """`off RULE...` / `on RULE...`: the shared body."""
    from ..workflow import switching
    from ..workflow.changes import ChangeError, read_cfg, write_change

    catalogue = catalogue_for(args)
    try:
        cfg, unreadable = read_cfg(args.cfg, must_exist=False), None
    except ChangeError as exc:
        cfg, unreadable = None, exc  # said after the names' problems, as it always was
    listed_on = switching.forced_on(cfg.text) if cfg is not None else frozenset()
    resolved = switching.resolve_rules(args.rules, catalogue, value, listed_on)
    for problem in resolved.problems:
        print(f"fusion-switch {value}: {problem}", file=sys.stderr)
    if resolved.problems:
        print(f"fusion-switch {value}: nothing was changed.", file=sys.stderr)
        return 2
    try:
        if cfg is None:
            raise unreadable
        before_errors = switching.errors(cfg.text, catalogue) if cfg.data is not None else []
        try:
            new_text = switching.switched_text(cfg.text, resolved.changes, catalogue)
        except ValueError as exc:
            raise ChangeError(f"{cfg.path}: cannot switch rules: {exc}") from None
        after = guard(cfg.path, new_text, before_errors, catalogue)
        names = ", ".join(f"{r} ({s})" for s, r, _ in resolved.changes)
        version = write_change(
            cfg,
            cfg.encode(new_text),
            who="cli",
            kind=value,
            why=f"{value}: {names}",
            rules=[f"{s}:{r}" for s, r, _ in resolved.changes],
        )
    except ChangeError as exc:
        print(f"fusion-switch {value}: {exc}", file=sys.stderr)
        return 2
    report(cfg.path, version, f"switched {value} {names}")
    say_json(cfg.path, cfg.text, resolved.changes, catalogue, version)
    say_rejected(cfg.path, after)
    return 0


def say_rejected(path, after: list[str]) -> None:
    """Say that the file CANN rejects still is (``after``: its errors, from `guard`; a review:
    "switched off" was printed for a file whose errors make CANN reject it whole, so no switch
    of it takes effect); nothing when the edit mended it (a trailing comma) or it had none."""
    if after:
        print(
            f"fusion-switch: warning: CANN rejects {path} as it is ({after[0]}): no "
            f"switch in it takes effect until that is fixed; see 'fusion-switch check {path}'",
            file=sys.stderr,
        )


def say_json(path, text: str, changes, catalogue, version) -> None:
    """Say that a line-format file was rewritten as JSON for a rule GE reads."""
    from ..workflow import switching

    note = switching.json_note(path, text, changes, catalogue)
    if note and version is not None:
        print(f"fusion-switch: {note}.")


def guard(path, new_text: str, before_errors: list[str], catalogue) -> list[str]:
    """Never write a file that `check` would reject when the original passed it; the changed
    file's errors (only ever those of an original that had some: see `say_rejected`)."""
    from ..workflow import switching
    from ..workflow.changes import ChangeError

    after = switching.errors(new_text, catalogue)
    if after and not before_errors:
        raise ChangeError(
            f"{path}: the changed file would not pass 'fusion-switch check' ({after[0]}); "
            "nothing was written. Please report this as a bug."
        )
    return after


def report(path, version, what: str) -> None:
    if version is None:
        print(f"fusion-switch: {path}: nothing to change ({what} already).")
        return
    print(
        f"fusion-switch: {what} in {path}. The previous file is version {version.number} of "
        f"its history; undo with: fusion-switch restore {path}"
    )


def run(args: argparse.Namespace) -> int:
    from ..workflow import switching
    from ..workflow.changes import ChangeError, read_cfg, write_change

    if args.all == bool(args.rules):
        print("fusion-switch off: give either --all or rule names (not both)", file=sys.stderr)
        return 2
    if not args.all:
        return switch(args, "off")
    try:
        cfg = read_cfg(args.cfg, must_exist=False)
        new_text = switching.all_off(cfg.text)
        version = write_change(
            cfg, cfg.encode(new_text), who="cli", kind="all-off", why="all fusion off"
        )
    except ChangeError as exc:
        print(f"fusion-switch off: {exc}", file=sys.stderr)
        return 2
    report(cfg.path, version, "all fusion off")
    kept = switching.kept_on_by_cann(catalogue_for(args))
    if kept:
        names = " ".join(rule for _, rule in kept)
        print(
            "fusion-switch: note: CANN's own fusion configuration switches on "
            f"{', '.join(f'{r} ({s})' for s, r in kept)}, which beats ALL (FE reads a name "
            "before ALL, and its built-in entries after yours): they stay on. To switch them "
            f"off too: fusion-switch off {cfg.path} {names}"
        )
    return 0
