"""`fusion-switch` command line: one module per sub-command, each with `register(subparsers)`.

A sub-command module defines `register(subparsers) -> None`, adding its parser and setting
`func=run` where `run(args) -> int` returns the exit status.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .. import __version__

SUBCOMMANDS = (
    "serve",
    "check",
    "compare",
    "passes",
    "dumps",
    "demo",
    "off",
    "on",
    "apply",
    "restore",
    "wire",
    "doctor",
    "bisect",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fusion-switch",
        description="Editor and command-line companion for CANN fusion anomaly detection.",
    )
    parser.add_argument("--version", action="version", version=f"fusion-switch {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("fusion-switch: interrupted", file=sys.stderr)
        return 130
