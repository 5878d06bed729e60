"""`fusion-switch on CFG RULE...`: switch chosen rules back on (explicit "on" beats "ALL": "off"),
recorded in the edit history. Exit status: 0 done, 2 bad input (nothing written)."""

from __future__ import annotations

import argparse
import sys

from .off import add_common, switch


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "on",
        help="switch chosen rules on in a fusion_switch.cfg",
        description=(
            "Switch fusion rules on, each in its section from the catalogue (Section:Rule "
            "for rules it does not know). Undo with 'fusion-switch restore CFG'."
        ),
    )
    add_common(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not args.rules:
        print("fusion-switch on: name at least one rule", file=sys.stderr)
        return 2
    return switch(args, "on")
