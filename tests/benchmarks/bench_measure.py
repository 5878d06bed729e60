"""Benchmark: the measure stage of this tree against an older revision's, side by side, in one run.

    .venv/bin/python tests/benchmarks/bench_measure.py [--old REV] [--case DIR/case | --ops N]
                                                       [--repeat N]

The measure stage is what runs per tensor pair (issue 16): read both dumps, align them, the
ten metrics, the result rows; plus what the pool and the write stage add per row (pickling the
rows back, unpickling them, their CSV cells). Each run is a separate process on one core that
discovers and pairs the case first (not timed), then times the stage over every chunk by CPU
time (the machine may be shared: wall time would measure the neighbours). The old revision is
exported with ``git archive`` and its C extensions compiled as setup.py compiles them. Runs
alternate old/new; the minimum and the median of each are printed, with the ratio against the
sixth round's budget (new <= 0.6x the CPU at 778e9d0) and whether both wrote the same CSV rows.

``--case`` reuses a case kept by bench_compare.py ``--keep`` (its ``case/``); otherwise one is
generated (5,000 original ops is about 400 MB of dumps).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SPATIAL = 20  # as bench_compare.py: ~80 KB of dumps per original op
BUDGET = 0.6  # issue 16, sixth round: the stage at <= 0.6x its CPU at 778e9d0

# Runs in a fresh process with PYTHONPATH at one revision's server/ folder.
STAGE_SCRIPT = """
import csv, gc, hashlib, io, json, pickle, sys, time
from fusion_switch.compare.discover import CompareRequest, discover
from fusion_switch.compare.engine import pair
from fusion_switch.compare.runners import run_here
from fusion_switch.compare.result_csv import cells
on_dump, off_dump, on_graph, off_graph, out = sys.argv[1:6]
request = CompareRequest(on_dump, off_dump, on_graph, off_graph, out, workers=1)
inputs = discover(request)
plan = pair(inputs)
gc.disable()  # as the job: engine.run_compare pauses the collector
start = time.process_time()
rows = [row for result in run_here(plan.job, plan.chunks) for row in result.rows]
measured = time.process_time()
back = pickle.loads(pickle.dumps(rows, protocol=pickle.HIGHEST_PROTOCOL))
text = io.StringIO()
csv.writer(text).writerows(cells(row, inputs.algorithms) for row in back)
done = time.process_time()
print(json.dumps({
    "rows": len(rows),
    "measure": measured - start,
    "rows_out": done - measured,
    "csv": hashlib.sha256(text.getvalue().encode()).hexdigest(),
}))
"""

EXTENSIONS = [  # (source, module path, flags): as setup.py builds them
    ("compare/_kernel.c", "compare/_kernel", ["-O3", "-ffp-contract=off", "-fno-trapping-math"]),
    ("readers/_wire.c", "readers/_wire", ["-O2"]),
    ("readers/_header.c", "readers/_header", ["-O2"]),
]


def export(revision: str | None, into: Path) -> Path:
    """``server/`` of ``revision`` (None: this working tree) with its extensions compiled."""
    into.mkdir(parents=True)
    if revision is None:
        shutil.copytree(REPO / "server", into / "server", ignore=shutil.ignore_patterns("*.so"))
    else:
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", revision, "server"],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    package = into / "server" / "fusion_switch"
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        sys.exit("bench_measure: needs a C compiler to build both revisions' extensions")
    include = sysconfig.get_paths()["include"]
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    for source, module, flags in EXTENSIONS:
        if (package / source).exists():
            target = str(package / (module + suffix))
            command = [compiler, *flags, "-shared", "-fPIC", f"-I{include}"]
            subprocess.run(
                [*command, str(package / source), "-o", target],
                check=True,
                capture_output=True,
            )
    return into / "server"


def run_stage(server: Path, case, out: Path) -> dict:
    paths = (case.on_dump, case.off_dump, case.on_graph, case.off_graph, out)
    done = subprocess.run(
        [sys.executable, "-c", STAGE_SCRIPT, *map(str, paths)],
        env={**os.environ, "PYTHONPATH": str(server)},
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
    )
    if done.returncode != 0:
        sys.exit(f"bench_measure: the stage failed with {server}:\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


class ReusedCase:
    def __init__(self, root: Path) -> None:
        self.on_graph = next((root / "fusion_on").glob("ge_proto_*.json"))
        self.off_graph = next((root / "fusion_off").glob("ge_proto_*.json"))
        self.on_dump = root / "fusion_on" / "dump"
        self.off_dump = root / "fusion_off" / "dump"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old", default="main", help="the revision to compare with (main)")
    parser.add_argument("--case", default=None, help="reuse a case (bench_compare.py --keep)")
    parser.add_argument("--ops", type=int, default=5000, help="original ops of a generated case")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each, interleaved (5)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-measure-"))
    try:
        if args.case:
            case = ReusedCase(Path(args.case))
        else:
            from fusion_switch.synth.generator import generate_case

            case = generate_case(work / "case", n_ops=args.ops, spatial=SPATIAL, graph_text=False)
        old = export(args.old, work / "old")
        new = export(None, work / "new")
        runs: dict[str, list[dict]] = {"old": [], "new": []}
        for _ in range(max(1, args.repeat)):
            for label, server in (("old", old), ("new", new)):
                runs[label].append(run_stage(server, case, work / "out"))
        rows = {label: {run["rows"] for run in done} for label, done in runs.items()}
        print(
            f"measure stage, {rows['new']} rows, {args.repeat} interleaved runs each, one core, "
            f"CPU seconds (load average now {os.getloadavg()[0]:.1f}):"
        )
        print(f"  {'':46}{'min':>8}{'median':>8}")
        summary = {}
        parts = (("measure", "read+align+metrics+rows"), ("rows_out", "pickle+CSV cells"))
        for key, title in parts:
            for label in ("old", "new"):
                values = [run[key] for run in runs[label]]
                summary[(key, label)] = min(values)
                who = f"{label} ({args.old if label == 'old' else 'this tree'})"
                print(f"  {who:<21} {title:<24}{min(values):8.3f}{statistics.median(values):8.3f}")
        totals = {
            label: summary[("measure", label)] + summary[("rows_out", label)]
            for label in ("old", "new")
        }
        ratio = totals["new"] / totals["old"]
        verdict = "PASS" if ratio <= BUDGET else "FAIL"
        print(
            f"  stage CPU, minimums: {totals['new']:.3f} s vs {totals['old']:.3f} s = "
            f"{ratio:.2f}x (budget <= {BUDGET:.2f}x) {verdict}"
        )
        same = {run["csv"] for done in runs.values() for run in done}
        answer = "yes" if len(same) == 1 else "NO"
        print(f"  CSV rows identical across revisions and runs: {answer}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
