"""Time and peak memory of the issue-12 hostile inputs, beside the figures the issue reported.

Each case runs in a fresh subprocess (peak RSS from `ru_maxrss`, wall time around the reader
call only; the payload itself is part of the peak). "before": the issue's figures, and for the
cfg case main's before this fix, measured the same way. Run:
`.venv/bin/python tests/benchmarks/bench_bad_input.py`. Target: < 500 MB and linear time.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

CASES = {
    "text graph: 10 MB unterminated string": ("text", '"' + "a" * (10 << 20), "1.7 GB"),
    'text graph: 10 MB of \\" escapes': ("text", '"' + '\\"' * (5 << 20) + '"', "1.7 GB"),
    "text graph: 2 MB of octal escapes": ("text", '"' + "\\101" * ((2 << 20) // 4) + '"', "-"),
    "text graph: 10 MB of octal escapes": (
        "text",
        '"' + "\\101" * ((10 << 20) // 4) + '"',
        "~7 min",
    ),
    "dump header: 2 MB, 1M empty outputs": ("dump", 1_000_000, "583 s, 1.8 GB"),
    'cfg: 10 MB of \\" escapes in a key': (
        "cfg",
        '{"Switch": {"GraphFusion": {"' + '\\"' * (5 << 20) + '": "on"}}}',
        "1.1 GB, 7.8 s",
    ),
}

CHILD = textwrap.dedent(
    """
    import json, resource, shutil, sys, tempfile, time, os
    kind, payload = json.loads(sys.stdin.read())
    if kind == "text":
        from fusion_switch.readers.graph_text import parse_graph_text
        lines = ["graph {\\n", '  name: "g"\\n', "  op {\\n", "    name: " + payload + "\\n",
                 "  }\\n", "}\\n"]
        start = time.perf_counter()
        try:
            parse_graph_text(lines, "bench.txt")
            outcome = "read"
        except Exception as error:
            outcome = type(error).__name__ + ": " + str(error)[:70]
    elif kind == "cfg":
        from fusion_switch.cfg import parse
        start = time.perf_counter()
        findings = parse(payload).syntax_findings
        outcome = f"parsed, {len(findings)} syntax findings"
    else:
        from fusion_switch.readers.dump import read_dump
        header = b"\\x32\\x03Add" + b"\\x1a\\x00" * payload
        folder = tempfile.mkdtemp()
        path = os.path.join(folder, "Add.many.1.0.123")
        try:
            with open(path, "wb") as handle:
                handle.write(len(header).to_bytes(8, "little") + header)
            start = time.perf_counter()
            try:
                read_dump(path)
                outcome = "read"
            except Exception as error:
                outcome = type(error).__name__ + ": " + str(error).split(": ", 1)[-1][:70]
        finally:
            shutil.rmtree(folder)  # each run left its 2 MB file in /tmp
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps([wall, peak, outcome]))
    """
)


def main() -> None:
    print(f"{'case':40} {'wall s':>8} {'peak MB':>8}  {'before':>14}  outcome")
    for name, (kind, payload, reference) in CASES.items():
        done = subprocess.run(
            [sys.executable, "-c", CHILD],
            input=json.dumps([kind, payload]),
            capture_output=True,
            text=True,
            check=True,
        )
        wall, peak, outcome = json.loads(done.stdout)
        print(f"{name:40} {wall:8.2f} {peak:8.0f}  {reference:>14}  {outcome}")


if __name__ == "__main__":
    main()
