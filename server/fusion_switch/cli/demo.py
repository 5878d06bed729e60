"""`fusion-switch demo`: the whole workflow on bundled samples and a generated case, in seconds.

1. Checks the bundled `fusion_switch.cfg` samples (among them CANN's own documentation sample,
   which has a trailing comma) and prints each diagnostic the way an editor shows it: position,
   code, message, the source line and a caret under the range.
2. Generates a realistic fusion-on / fusion-off case with an injected fault, compares it,
   prints the verdict and the report path, and writes a `fusion_switch.cfg` that switches the
   guilty rule off (checked again, so it is known to be accepted).
Exit status 0 when the top suspect is the injected rule, 1 otherwise, 2 on bad options.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import TextIO

from .compare import blocking_file

SAMPLES = Path(__file__).resolve().parents[1] / "demo_samples"


def register(subparsers: argparse._SubParsersAction) -> None:
    from ..synth.faults import FAULT_KINDS

    parser = subparsers.add_parser(
        "demo",
        help="check sample configs, then generate, compare and explain a faulty case",
        description="Run the whole fusion-switch workflow on samples and a generated case.",
        allow_abbrev=False,
    )
    parser.add_argument(
        "--out", default=None, metavar="DIR", help="where to write the case (default: temp dir)"
    )
    parser.add_argument(
        "--fault",
        default="dropped_scale",
        choices=sorted(FAULT_KINDS),
        help="fault to inject (default: dropped_scale, which cosine similarity alone misses)",
    )
    parser.add_argument(
        "--ops", type=_positive_int, default=100, help="original ops in the network (at least 1)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-progress", action="store_true", help="no progress on stderr")
    parser.set_defaults(func=run)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} ops: give at least 1")
    return value


def caret_lines(text: str, start: int, end: int) -> tuple[int, int, str, str]:
    """(1-based line, 1-based column, source line, caret line) for a span, as editors show."""
    start = max(0, min(start, len(text)))
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", start)
    if line_end < 0:
        line_end = len(text)
    line_no = text.count("\n", 0, start) + 1
    source = text[line_start:line_end].rstrip("\r").expandtabs(1)
    col = start - line_start
    width = max(1, min(end, line_end) - start)
    return line_no, col + 1, source, " " * col + "^" + "~" * (width - 1)


def check_samples(stream) -> int:
    """Print the diagnostics of every bundled sample; returns the number of findings."""
    from ..cfg import Context, analyse

    total = 0
    ctx = Context()
    for path in sorted(SAMPLES.glob("*.cfg")):
        text = path.read_text(encoding="utf-8")
        findings = analyse(text, ctx).findings
        total += len(findings)
        stream.write(f"\n{path.name}: {len(findings) or 'no'} problem(s)\n")
        for f in findings:
            line, col, source, caret = caret_lines(text, f.span.start, f.span.end)
            stream.write(f"  {line}:{col}: {f.severity} [{f.code}] {f.message}\n")
            stream.write(f"   {line:>4} | {source}\n        | {caret}\n")
    return total


def guilty_cfg(rule: str, section: str) -> str:
    """A fusion_switch.cfg that switches one rule off, in the layout CANN's docs use."""
    from ..catalogue import SECTIONS
    from ..cfg import format_document, parse

    data = {"Switch": {s: ({rule: "off"} if s == section else {}) for s in SECTIONS}}
    text = json.dumps(data)
    return format_document(parse(text)) or text + "\n"


def _write_own_file(path: Path, text: str) -> None:
    """``text`` into ``path``, never through a symbolic link (ELOOP then)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


def run(args: argparse.Namespace) -> int:
    from ..cfg import Context, analyse
    from ..synth.generator import generate_case
    from .compare import Progress, run_comparison
    from .verdict_text import print_verdict

    if args.out and blocking_file(Path(args.out)):
        print(
            f"fusion-switch demo: error: --out {args.out}: {blocking_file(Path(args.out))} "
            "is a file, not a folder; give a folder (it is created when missing)",
            file=sys.stderr,
        )
        return 2
    out = stdout = sys.stdout
    started = time.monotonic()
    out.write("== 1. Checking the bundled fusion_switch.cfg samples ==\n")
    check_samples(stdout)

    root = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="fusion-switch-demo-"))
    out.write(f"\n== 2. Generating a case with a '{args.fault}' fault in {root} ==\n")
    try:
        case = generate_case(root / "case", n_ops=args.ops, faults=[args.fault], seed=args.seed)
    except ValueError as exc:
        print(f"fusion-switch demo: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        where = exc.filename or root
        print(
            f"fusion-switch demo: error: cannot write the case into {where}: "
            f"{exc.strerror or exc}; pick another --out folder",
            file=sys.stderr,
        )
        return 2
    truth = case.truth["faults"][0]
    out.write(
        f"{case.n_original_ops} original ops -> {case.n_fused_ops} fusion-on ops, "
        f"{case.dump_bytes / 1e6:.1f} MB of dumps\n"
        f"injected: {truth['description']}\n"
        f"          in {truth['op']}, built by {truth['rule']} ({truth['section']})\n"
    )
    out.write("\n== 3. Comparing fusion on with fusion off ==\n")
    out.write(
        f"fusion-switch compare -m {case.on_dump} -g {case.off_dump} -f {case.on_graph} "
        f"-cf {case.off_graph} -out {root / 'result'}\n\n"
    )
    compare_args = SimpleNamespace(
        on_dump=str(case.on_dump),
        off_dump=str(case.off_dump),
        on_graph=str(case.on_graph),
        off_graph=str(case.off_graph),
        out_dir=str(root / "result"),
        algorithms=None,
        max_cmp_size=0,
        threshold=[],
        workers=None,
        fusion_result=None,
    )
    progress = Progress(sys.stderr, enabled=not args.no_progress)
    status, outputs = run_comparison(compare_args, progress, stdout)
    if outputs is None:
        return status if status != 1 else 2
    print_verdict(outputs.summary, stdout)
    suspects = outputs.summary["suspects"]
    if not suspects:
        return _undecided_outcome(outputs.summary, truth, out)
    top = suspects[0]
    # in the generated case's folder, which is the demo's own: --out may be a folder holding
    # the user's fusion_switch.cfg, or a link to one (a review: the demo overwrote it)
    cfg_path = root / "case" / "fusion_switch.cfg"
    text = guilty_cfg(top["rule"], top["section"])
    try:
        _write_own_file(cfg_path, text)
    except OSError as exc:
        print(
            f"fusion-switch demo: error: cannot write {cfg_path}: {exc.strerror or exc}; "
            "pick another --out folder",
            file=sys.stderr,
        )
        return 2
    problems = [f for f in analyse(text, Context()).findings if f.severity == "error"]
    out.write(f"\n== 4. {cfg_path} switches the suspect off ==\n{text}")
    out.write("check: " + ("no errors\n" if not problems else f"{len(problems)} error(s)\n"))
    hit = top["rule"] == truth["rule"] and truth["op"] in top["ops"]
    out.write(
        f"\n{'OK' if hit else 'MISS'}: the top suspect {top['rule']} "
        f"{'is' if hit else 'is not'} the injected rule {truth['rule']} "
        f"({time.monotonic() - started:.1f} s)\n"
    )
    return 0 if hit and not problems else 1


def _undecided_outcome(summary: dict, truth: dict, out: TextIO) -> int:
    """No rule proven: right when the replay proves the injected op wrong and leaves its
    passes undecided, the injected rule among them (a fault a single-op UB compile could have
    made as well: bisect splits them); otherwise the demo missed."""
    undecided = [r["rule"] for r in summary.get("rules") or [] if r.get("verdict") == "undecided"]
    op = next((f for f in summary.get("fused_ops") or [] if f.get("op") == truth["op"]), {})
    if truth["rule"] in undecided and op.get("verdict") == "introduces":
        out.write(
            f"\nOK: the replay proves {truth['op']} wrong and cannot split "
            f"{' and '.join(undecided)} (the injected rule {truth['rule']} among them): "
            "bisect splits them\n"
        )
        return 0
    out.write("\nno suspect found: the demo expected one\n")
    return 1
