"""`fusion-switch check FILE...`: the editor's diagnostics on the command line, for CI.

Text output is `file:line:col: severity code: message` (1-based line and column, column in
characters), the form compilers print and editors' "compilation" modes jump to. JSON output is
a list with one entry per file: `{"file", "diagnostics": [{code, severity, range, message,
data}]}` where range uses LSP conventions (0-based line, UTF-16 `character`).
Exit status: 2 when a file cannot be read or an option is wrong, else 1 when any error-severity
finding was reported, else 0.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from bisect import bisect_right
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..cfg.model import Finding

_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029]")


def one_line(message: str) -> str:
    """Messages may quote the file's own bytes; keep each finding on one output line."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", message)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "check",
        help="check fusion_switch.cfg files and print their diagnostics",
        description="Check fusion switch configuration files the way the editor does.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="configuration files to check")
    parser.add_argument(
        "--target", default="", help="soc_version or product the files are for (e.g. 'Atlas 350')"
    )
    parser.add_argument("--format", choices=("text", "json"), default="text", dest="fmt")
    parser.add_argument(
        "--catalogue",
        action="append",
        default=[],
        metavar="EXTRA.json",
        help="extra rule catalogue or CANN fusion_config.json, or a CANN install folder "
        "(repeatable; later files win)",
    )
    parser.set_defaults(func=run)


class _Positions:
    """Line/column of offsets in one text (lines end at \\n, \\r\\n or \\r, as in LSP)."""

    def __init__(self, text: str) -> None:
        from ..cfg.lines import line_starts

        self.text = text
        self.starts = line_starts(text)

    def line_col(self, offset: int) -> tuple[int, int]:
        """0-based line and 0-based column in code points."""
        offset = min(max(offset, 0), len(self.text))
        line = bisect_right(self.starts, offset) - 1
        return line, offset - self.starts[line]

    def lsp(self, offset: int) -> dict:
        line, col = self.line_col(offset)
        start = self.starts[line]
        prefix = self.text[start : start + col]
        units = len(prefix.encode("utf-16-le", "surrogatepass")) // 2
        return {"line": line, "character": units}


def decode(data: bytes) -> tuple[str, Finding | None]:
    """The text of a file (a UTF-8 BOM dropped, as editors do) and, when it is not valid
    UTF-8, an error finding at the first bad byte: CANN's JSON parser rejects such a file."""
    from ..cfg.model import Finding, Span

    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):  # shown as it is, but CANN reads bytes
        text = data.decode("utf-16", "replace")
        return text, Finding(
            code="json-syntax",
            severity="error",
            span=Span(0, min(1, len(text))),
            message="UTF-16 text: CANN reads the file as UTF-8 bytes and rejects it. Save the "
            "file as UTF-8.",
        )
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        offset = len(data[: exc.start].decode("utf-8", "replace"))
        text = data.decode("utf-8", "replace")
        finding = Finding(
            code="json-syntax",
            severity="error",
            span=Span(offset, offset + 1),
            message=(
                f"not valid UTF-8 (byte 0x{data[exc.start]:02x}); CANN rejects the whole file. "
                "Save the file as UTF-8."
            ),
        )
        return text, finding


def _context(args: argparse.Namespace):
    from ..catalogue import known_target_names, resolve_target
    from ..catalogue.cann import load_catalogue_with_cann
    from ..cfg.model import Context

    # as in the editor: built-in + the user's CANN install (a folder given with --catalogue,
    # else ASCEND_* / the usual locations) + extra files
    catalogue, errors, _ = load_catalogue_with_cann(list(args.catalogue))
    for error in errors:
        print(f"fusion-switch: warning: catalogue not loaded: {error}", file=sys.stderr)
    target = None
    if args.target:
        target = resolve_target(args.target)
        if target is None:
            print(
                f"fusion-switch: unknown target {args.target!r}; known targets: "
                + ", ".join(known_target_names()),
                file=sys.stderr,
            )
            return None
    return Context(catalogue=catalogue, target=target)


def run(args: argparse.Namespace) -> int:
    from ..cfg import analyse

    ctx = _context(args)
    if ctx is None:
        return 2
    unreadable = False
    any_error = False
    report: list[dict] = []
    for name in args.files:
        try:
            data = Path(name).read_bytes()
        except OSError as exc:
            reason = exc.strerror or str(exc)
            print(f"fusion-switch: cannot read {name}: {reason}", file=sys.stderr)
            report.append({"file": name, "error": f"cannot read: {reason}", "diagnostics": []})
            unreadable = True
            continue
        text, encoding_problem = decode(data)
        findings = list(analyse(text, ctx).findings)
        if encoding_problem is not None:
            findings.insert(0, encoding_problem)
        findings.sort(key=lambda f: (f.span.start, f.span.end))
        any_error = any_error or any(f.severity == "error" for f in findings)
        positions = _Positions(text)
        if args.fmt == "text":
            for f in findings:
                line, col = positions.line_col(f.span.start)
                print(f"{name}:{line + 1}:{col + 1}: {f.severity} {f.code}: {one_line(f.message)}")
        else:
            report.append(
                {
                    "file": name,
                    "diagnostics": [
                        {
                            "code": f.code,
                            "severity": f.severity,
                            "range": {
                                "start": positions.lsp(f.span.start),
                                "end": positions.lsp(f.span.end),
                            },
                            "message": f.message,
                            "data": f.data,
                        }
                        for f in findings
                    ],
                }
            )
    if args.fmt == "json":
        json.dump(report, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    if unreadable:
        return 2
    return 1 if any_error else 0
