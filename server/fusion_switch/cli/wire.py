"""`fusion-switch wire FRAMEWORK CFG [--check SCRIPT]`: print the snippet that makes a framework
read this configuration (the variable bisect sets per trial, falling back to the absolute path),
or say whether a script already passes it.

Frameworks: tf1, tf2, torchair, torch_npu (no such option: points to torchair), mindspore,
msit, atc, aoe, ge, acl, mslite; tf / tensorflow and torch / pytorch name two of them each, and
both are shown (or checked). Every option name and its public source are in workflow/wiring.py,
how a script is read in workflow/wiring_scan.py.
Exit status: 0 printed / the script passes this configuration; 1 the script does not (passes
another file, a path nothing expands, only an argument to its own script, or passes it in a
mode where it does not take effect: MindSpore without GE, TorchAir's reduce-overhead); 2 bad
input. Warnings (a relative path, optimization_switch) do not change it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    from ..workflow.wiring import WIRINGS

    parser = subparsers.add_parser(
        "wire",
        help="show how to make a framework read a fusion_switch.cfg",
        description=(
            "Print the code or command-line option that makes FRAMEWORK read CFG "
            f"({', '.join(WIRINGS)}). A wrong option name is silently ignored by every "
            "framework: the names here are checked against the sources printed with them."
        ),
    )
    parser.add_argument(
        "framework", metavar="FRAMEWORK", help=", ".join(WIRINGS) + " (tf, torch: both variants)"
    )
    parser.add_argument("cfg", metavar="CFG", help="the fusion_switch.cfg")
    parser.add_argument("--check", metavar="SCRIPT", help="does this script already pass it?")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..workflow.wiring import WIRINGS, resolve

    wirings = resolve(args.framework)
    if not wirings:
        print(
            f"fusion-switch wire: unknown framework {args.framework!r}; one of: "
            + ", ".join(WIRINGS),
            file=sys.stderr,
        )
        return 2
    path = os.path.abspath(os.path.expanduser(args.cfg))  # "~/x.cfg", quoted: left by the shell
    if not Path(path).is_file():
        print(f"fusion-switch wire: warning: {path} does not exist yet", file=sys.stderr)
    if len(wirings) > 1:
        print(
            f"# '{args.framework}' can mean "
            + " or ".join(f"{w.title} ({w.name})" for w in wirings)
            + ", wired differently: "
            + ("both follow" if args.check is None else "checking each")
            + f"; name one ({', '.join(w.name for w in wirings)}) for it alone"
        )
    if args.check is None:
        for wiring in wirings:
            print_snippet(wiring, path)
        return 0
    try:
        script = Path(args.check).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        print(
            f"fusion-switch wire: cannot read {args.check}: {exc.strerror or exc}", file=sys.stderr
        )
        return 2
    variants = [w for w in wirings if w.supported] or wirings
    return min(check(wiring, script, args.check, path) for wiring in variants)


def print_snippet(wiring, path: str) -> None:
    from ..workflow.trials import CFG_VARIABLE
    from ..workflow.wiring import CONFIG, snippet

    print(f"# {wiring.title}")
    if wiring.supported:
        print(f"# option: {wiring.option}")
    print(f"# source: {wiring.source}")
    if wiring.note:
        print(f"# note: {wiring.note}")
    if wiring.supported and wiring.kind != CONFIG:
        print(
            f"# bisect: `fusion-switch bisect` sets {CFG_VARIABLE} to each trial's copy of the "
            "cfg; elsewhere the path after it is read"
        )
    print(snippet(wiring, path))


def check(wiring, script: str, name: str, path: str) -> int:
    """Say whether ``script`` makes the framework read ``path``: 0 yes, 1 no."""
    from ..workflow.wiring import COMMANDS, snippet
    from ..workflow.wiring_scan import caveats, find_forwarded, find_overrides, find_wiring

    if not wiring.supported:
        print(f"{name}: {wiring.title} cannot read a fusion switch file.")
        print(snippet(wiring, path))
        return 1
    found = find_wiring(wiring, script, path)
    ours = [f for f in found if f.names_this_cfg]
    for f in found:
        which = "this configuration" if f.names_this_cfg else "another file or a variable"
        if f.note and not f.names_this_cfg:
            which = "not this configuration"
        print(f"{name}:{f.line}: passes {wiring.option} ({which}): {f.text}")
        if f.note:
            print(f"{name}:{f.line}: {'warning' if f.names_this_cfg else 'why'}: {f.note}")
    for o in find_overrides(script, wiring.kind):
        print(f"{name}:{o.line}: warning: {o.warning()}: {o.text}")
    if not ours:
        for f in find_forwarded(script, path, COMMANDS):
            print(
                f"{name}:{f.line}: passed to your script ({f.command}), not to "
                f"{wiring.title}: check that it forwards it: {f.text}"
            )
    if not found:
        print(f"{name}: does not pass {wiring.option} ({wiring.title}); add:")
        print(snippet(wiring, path))
        return 1
    if not ours:
        print(f"{name}: passes {wiring.option}, but not visibly {path}; check the value.")
        return 1
    problems = caveats(wiring, script)
    for problem in problems:
        print(f"{name}: warning: {problem}")
    if wiring.note:
        print(f"note: {wiring.note}")
    return 1 if problems else 0
