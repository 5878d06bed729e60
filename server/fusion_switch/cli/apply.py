"""`fusion-switch apply RESULTS CFG [--yes] [--include-unverified]`: switch off the rules a
comparison proved guilty, keeping every other entry of the user's configuration.

RESULTS is a `fusion-switch compare` output folder or its summary.json. Proven means the
per-rule verdict `introduces`; anything else (unverified, heuristic suspects) is applied only
with --include-unverified and labelled so. When CFG is still exactly as our 'off --all' left
it, the rules are switched off in the configuration from before (the recipe's end).
Exit status: 0 applied (or nothing to apply), 1 declined, 2 bad input.
"""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "apply",
        help="switch off the rules a comparison proved guilty",
        description=(
            "Turn off in CFG the rules the comparison in RESULTS proved to introduce the "
            "error (replay verdict 'introduces'). Lists them and asks first."
        ),
    )
    parser.add_argument("results", metavar="RESULTS", help="compare output folder or summary.json")
    parser.add_argument("cfg", metavar="CFG", help="the fusion_switch.cfg to change")
    parser.add_argument("--yes", "-y", action="store_true", help="do not ask (for scripts)")
    parser.add_argument(
        "--include-unverified",
        action="store_true",
        help="also switch off rules the comparison only suspects (not proven by replay)",
    )
    parser.add_argument(
        "--catalogue", action="append", default=[], metavar="EXTRA.json", help="extra catalogue"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..workflow import switching
    from ..workflow.changes import ChangeError, read_cfg, recipe_base, write_change
    from ..workflow.verdicts import SummaryError, load_summary, rule_verdicts
    from .off import catalogue_for, guard, say_json, say_rejected
    from .restore import confirm

    try:
        summary_path, summary = load_summary(args.results)
    except SummaryError as exc:
        print(f"fusion-switch apply: {exc}", file=sys.stderr)
        return 2
    verdicts = rule_verdicts(summary)
    hostile = [v for v in verdicts if not switching.is_rule_name(v.rule)]
    if hostile:  # a damaged or hand-made summary: none of it is applied
        for v in hostile:
            print(
                f"fusion-switch apply: {summary_path} names {v.rule!r} ({v.section}): "
                f"{switching.NOT_A_RULE_NAME}; nothing was changed",
                file=sys.stderr,
            )
        return 2
    chosen = [v for v in verdicts if v.proven or args.include_unverified]
    skipped = [v for v in verdicts if v not in chosen]
    for v in skipped:
        print(
            f"fusion-switch apply: not applied: {v.rule} ({v.section}) is {v.label}; add "
            "--include-unverified to switch it off too",
            file=sys.stderr,
        )
    if not chosen:
        print(f"fusion-switch apply: {summary_path} proves no rule guilty; nothing to apply.")
        return 0
    catalogue = catalogue_for(args)
    try:
        cfg, unreadable = read_cfg(args.cfg, must_exist=False), None
    except ChangeError as exc:
        cfg, unreadable = None, exc  # said where it always was, after the rules' problems
    listed_on = switching.forced_on(cfg.text) if cfg is not None else frozenset()
    allowed = []
    for v in chosen:
        named = [f"{v.section}:{v.rule}"]
        problems = switching.resolve_rules(named, catalogue, "off", listed_on).problems
        for problem in problems:
            print(f"fusion-switch apply: not applied: {problem}", file=sys.stderr)
        if not problems:
            allowed.append(v)
    chosen = allowed
    if not chosen:
        print("fusion-switch apply: no rule left that switching off would change.")
        return 0
    try:
        if cfg is None:
            raise unreadable
        base = recipe_base(cfg)
        text = base[0] if base else cfg.text
        changes = [(v.section, v.rule, "off") for v in chosen]
        try:
            new_text = switching.switched_text(text, changes, catalogue)
        except ValueError as exc:
            raise ChangeError(f"{cfg.path}: cannot switch rules: {exc}") from None
        before_errors = switching.errors(text, catalogue) if text else []
        after = guard(cfg.path, new_text, before_errors, catalogue)
    except ChangeError as exc:
        print(f"fusion-switch apply: {exc}", file=sys.stderr)
        return 2
    print(f"Rules to switch off in {cfg.path}:")
    for v in chosen:
        ops = f", ops {', '.join(v.ops[:3])}" if v.ops else ""
        print(f"  {v.rule} ({v.section}): {v.label}{ops}")
        if v.section_note:
            print(f"    {v.section_note}")
    if base:
        print(
            f"  (in your configuration from before 'off --all', version {base[1].number} of "
            "the history; the all-off file is replaced)"
        )
    if not args.yes and not confirm("Switch these rules off?"):
        print(
            "fusion-switch apply: nothing changed (run with --yes to apply without asking).",
            file=sys.stderr,
        )
        return 1
    names = ", ".join(f"{v.rule} ({v.section})" for v in chosen)
    try:
        version = write_change(
            cfg,
            cfg.encode(new_text),
            who="cli",
            kind="apply",
            why=f"apply {summary_path.name}: {names} off",
            rules=[f"{v.section}:{v.rule}" for v in chosen],
        )
    except ChangeError as exc:
        print(f"fusion-switch apply: {exc}", file=sys.stderr)
        return 2
    if version is None:
        print(f"fusion-switch: {cfg.path}: those rules are already off.")
    elif base:  # a plain restore goes back to the user's own, from before 'off --all'
        print(
            f"fusion-switch: switched off {names} in {cfg.path}, in your configuration from "
            f"before 'off --all' (version {base[1].number}); 'fusion-switch restore {cfg.path}' "
            f"brings that configuration back, and the all-off file is version {version.number}:"
            f" fusion-switch restore {cfg.path} --version {version.number}"
        )
    else:
        print(
            f"fusion-switch: switched off {names} in {cfg.path} (previous file: version "
            f"{version.number}; undo with: fusion-switch restore {cfg.path})"
        )
    say_json(cfg.path, text, changes, catalogue, version)
    say_rejected(cfg.path, after)
    if not base:
        _say_still_all_off(cfg.path, new_text)
    return 0


def _say_still_all_off(path, text: str) -> None:
    """Warn when the result still switches a whole section off: an all-off file edited since
    'off --all' wrote it (re-indented on save) is not taken for the recipe's step 1, whose
    base is matched byte for byte, and the rules went in beside "ALL": "off" (a review)."""
    from ..workflow.switching import sections_all_off

    sections = sections_all_off(text)
    if not sections:
        return
    from ..workflow.history import History, HistoryError

    try:
        before = [v for v in History(path).versions() if v.kind == "all-off"]
    except (HistoryError, OSError):
        before = []
    how = (
        f"fusion-switch restore {path} --version {before[-1].number} (your configuration "
        "from before 'off --all'), then apply again"
        if before
        else f'set the sections\' "ALL" back in {path}'
    )
    print(
        f'fusion-switch apply: note: {path} still has "ALL": "off" in '
        f"{' and '.join(sections)}, so all of that fusion stays off (the file was changed "
        f"since 'off --all' wrote it, so it was not taken for the recipe's step 1). To end the "
        f"recipe on your own configuration: {how}.",
        file=sys.stderr,
    )
