"""`fusion-switch` command line: one module per sub-command, each with `register(subparsers)`.

A sub-command module defines `register(subparsers) -> None`, adding its parser and setting
`func=run` where `run(args) -> int` returns the exit status.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING

from .. import __version__

if TYPE_CHECKING:
    import argparse

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


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser with every sub-command, or with `only` that one (`main` when the command
    line names one: help and errors read the same, and the other modules are not imported,
    so `fusion-switch serve` starts without them)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="fusion-switch",
        description="Editor and command-line companion for CANN fusion anomaly detection.",
    )
    parser.add_argument("--version", action="version", version=f"fusion-switch {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS if only is None else (only,):
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


# What editors run: straight to the language server, without building an option parser
# (importing and building argparse's is ~10 ms of every start of the server; issue 16).
EDITOR_SERVE = (["serve"], ["serve", "--stdio"])


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    if list(words) in EDITOR_SERVE:
        from .serve import serve_stdio

        return _interruptible(serve_stdio)
    parser = build_parser(words[0] if words and words[0] in SUBCOMMANDS else None)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    return _interruptible(lambda: args.func(args))


def _interruptible(run) -> int:
    try:
        return int(run() or 0)
    except KeyboardInterrupt:
        print("fusion-switch: interrupted", file=sys.stderr)
        return 130
