"""`fusion-switch wire FRAMEWORK CFG [--check SCRIPT]`: print the snippet that makes a framework
read this configuration (absolute path), or say whether a script already passes it.

Frameworks: tf1, tf2, torchair, torch_npu (no such option: points to torchair), mindspore,
atc, aoe, ge, acl, mslite. Every option name and its public source are in workflow/wiring.py.
Exit status: 0 printed / the script passes this configuration; 1 the script does not (or passes
another file); 2 bad input.
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
    parser.add_argument("framework", metavar="FRAMEWORK", help=", ".join(WIRINGS))
    parser.add_argument("cfg", metavar="CFG", help="the fusion_switch.cfg")
    parser.add_argument("--check", metavar="SCRIPT", help="does this script already pass it?")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..workflow.wiring import WIRINGS, find_wiring, resolve, snippet

    wiring = resolve(args.framework)
    if wiring is None:
        print(
            f"fusion-switch wire: unknown framework {args.framework!r}; one of: "
            + ", ".join(WIRINGS),
            file=sys.stderr,
        )
        return 2
    path = os.path.abspath(os.path.expanduser(args.cfg))  # "~/x.cfg", quoted: left by the shell
    if not Path(path).is_file():
        print(f"fusion-switch wire: warning: {path} does not exist yet", file=sys.stderr)
    if args.check is None:
        print(f"# {wiring.title}")
        if wiring.supported:
            print(f"# option: {wiring.option}")
        print(f"# source: {wiring.source}")
        if wiring.note:
            print(f"# note: {wiring.note}")
        print(snippet(wiring, path))
        return 0
    try:
        script = Path(args.check).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        print(
            f"fusion-switch wire: cannot read {args.check}: {exc.strerror or exc}", file=sys.stderr
        )
        return 2
    if not wiring.supported:
        print(f"{args.check}: {wiring.title} cannot read a fusion switch file.")
        print(snippet(wiring, path))
        return 1
    found = find_wiring(wiring, script, path)
    if not found:
        print(f"{args.check}: does not pass {wiring.option} ({wiring.title}); add:")
        print(snippet(wiring, path))
        return 1
    ours = [f for f in found if f.names_this_cfg]
    for f in found:
        which = "this configuration" if f.names_this_cfg else "another file or a variable"
        if f.note and not f.names_this_cfg:
            which = "not this configuration"
        print(f"{args.check}:{f.line}: passes {wiring.option} ({which}): {f.text}")
        if f.note:
            print(f"{args.check}:{f.line}: {'warning' if f.names_this_cfg else 'why'}: {f.note}")
    if not ours:
        print(f"{args.check}: passes {wiring.option}, but not visibly {path}; check the value.")
        return 1
    if wiring.note:
        print(f"note: {wiring.note}")
    return 0
