"""`fusion-switch doctor [FOLDER] [--target T] [--cfg CFG]`: what to check before a fusion
investigation, one line each (ok / problem / info) with the fix for a problem: Python and
packages, the CANN install and the catalogue in force, the target and whether UB fusion applies,
the cfg here (valid? wired into a script?), dump settings, free disk for a full dump.
Exit status: 0 no problem, 1 at least one problem, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "doctor",
        help="check the environment before a fusion investigation",
        description="One screen of checks before a fusion investigation, each with its fix.",
    )
    parser.add_argument("folder", nargs="?", default=".", help="the training folder (default: .)")
    parser.add_argument("--target", help="--soc_version or product (e.g. Ascend910B1)")
    parser.add_argument("--cfg", help="the fusion_switch.cfg (default: every *.cfg in FOLDER)")
    parser.add_argument("--format", choices=("text", "json"), default="text", dest="fmt")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..workflow.doctor import PROBLEM, run_checks

    folder = Path(args.folder)
    if not folder.is_dir():
        print(f"fusion-switch doctor: {folder}: no such folder", file=sys.stderr)
        return 2
    cfg = Path(args.cfg).expanduser() if args.cfg else None  # "~/x.cfg", quoted
    if cfg is not None and not cfg.is_file():
        print(f"fusion-switch doctor: {cfg}: no such file", file=sys.stderr)
        return 2
    checks = run_checks(folder.resolve(), args.target, cfg)
    if args.fmt == "json":
        json.dump([c.to_json() for c in checks], sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        width = max(len(c.topic) for c in checks)
        for c in checks:
            line = f"{c.status:<8} {c.topic:<{width}}  {c.detail}"
            if c.fix:
                line += f"\n{'':<8} {'':<{width}}  fix: {c.fix}"
            print(line)
    return 1 if any(c.status == PROBLEM for c in checks) else 0
