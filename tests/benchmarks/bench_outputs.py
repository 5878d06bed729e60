"""Benchmark: the single-core ends of a comparison (issue 16, fifth round), this tree against a
reference revision, side by side in one run.

    .venv/bin/python tests/benchmarks/bench_outputs.py [--ref REV] [--case DIR/case] [--repeat N]

Two parts, each interleaving the two trees (the machine may be shared: minimums and medians
are printed, and the load average before and after):

1. In one process, after one comparison of the case: the diagnose stage's steps on the same
   outcome with each tree's ``diagnose`` modules (``attribute``, ``build_summary``,
   ``render_report``, the JSON text), CPU seconds; the dump tree walk (``select_pairs``);
   and whether both trees give byte-identical ``summary.json`` and ``report.html`` text.
2. ``compare --no-replay`` as the user runs it, one process per run: wall, CPU of the process
   and its children, peak RSS of the largest process, and the CSV bytes compared.

The reference revision is checked out with ``git worktree add --detach`` into a temporary
folder (removed at the end), with this tree's built C extensions copied in. The case defaults
to /tmp/bench5k/case (``bench_compare.py --ops 5000 --keep DIR`` makes one).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def import_tree(server: Path) -> dict:
    """Import fusion_switch from ``server`` as its own module tree; the modules this uses."""
    for name in [n for n in sys.modules if n == "fusion_switch" or n.startswith("fusion_switch.")]:
        del sys.modules[name]
    sys.path.insert(0, str(server))
    try:
        names = ("diagnose.attribution", "diagnose.summary", "diagnose.report")
        tree = {n.split(".")[-1]: importlib.import_module(f"fusion_switch.{n}") for n in names}
        tree["selection"] = importlib.import_module("fusion_switch.readers.dump_selection")
    finally:
        sys.path.remove(str(server))
    return tree


def in_process(case: Path, ref_server: Path, repeat: int) -> None:
    old, new = import_tree(ref_server), import_tree(REPO / "server")
    from fusion_switch.compare.engine import CompareRequest, run_compare

    request = CompareRequest(
        on_dump=case / "fusion_on" / "dump",
        off_dump=case / "fusion_off" / "dump",
        on_graph=next((case / "fusion_on").glob("ge_proto_*.json")),
        off_graph=next((case / "fusion_off").glob("ge_proto_*.json")),
        out_dir=Path(tempfile.mkdtemp(prefix="bench_outputs_")),
    )
    outcome = run_compare(request)
    shutil.rmtree(request.out_dir, ignore_errors=True)
    rows = list(outcome.rows)
    gc.collect()
    gc.disable()  # as in the job and write_outputs
    times: dict[str, list[float]] = {}
    texts: dict[str, tuple[str, str]] = {}

    def timed(label: str, call, *args, **kwargs):
        start = time.process_time()
        result = call(*args, **kwargs)
        times.setdefault(label, []).append(time.process_time() - start)
        return result

    for _ in range(repeat):
        for tag, tree in (("ref", old), ("this", new)):
            found = timed(f"{tag} attribute", tree["attribution"].attribute, rows, outcome.on_graph)
            summary = timed(
                f"{tag} build_summary",
                tree["summary"].build_summary,
                found,
                inputs={"on_dump": str(request.on_dump)},
                counts={},
                report_path="/report.html",
            )
            page = timed(f"{tag} render_report", tree["report"].render_report, summary)
            text = timed(f"{tag} summary JSON", json.dumps, summary, separators=(",", ":"))
            texts[tag] = (text, page)
            timed(
                f"{tag} dump tree walk",
                tree["selection"].select_pairs,
                request.on_dump,
                request.off_dump,
            )
    gc.enable()
    steps = ("attribute", "build_summary", "render_report", "summary JSON", "dump tree walk")
    print(f"\n1. in one process, CPU seconds over {repeat} runs each (min / median)")
    print(f"   {'step':16} {'reference':>18} {'this tree':>18}  ratio of minimums")
    for step in steps:
        ref, this = times[f"ref {step}"], times[f"this {step}"]
        print(
            f"   {step:16} {min(ref):8.4f} / {statistics.median(ref):7.4f} "
            f"{min(this):8.4f} / {statistics.median(this):7.4f}  {min(ref) / min(this):5.2f}x"
        )
    total_ref = sum(min(times[f"ref {s}"]) for s in steps[:4])
    total_this = sum(min(times[f"this {s}"]) for s in steps[:4])
    print(f"   {'diagnose steps':16} {total_ref:8.4f} {'':9} {total_this:8.4f}")
    same = texts["ref"] == texts["this"]
    print(f"   summary.json and report.html text identical: {'yes' if same else 'NO'}")


def _run(server: Path, case: Path, out: Path) -> tuple[float, float, int]:
    """(wall s, CPU s of the process and its children, peak RSS KB of the largest)."""
    shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, "-m", "fusion_switch", "compare"]
    command += ["-m", str(case / "fusion_on" / "dump"), "-g", str(case / "fusion_off" / "dump")]
    command += ["-f", str(next((case / "fusion_on").glob("ge_proto_*.json")))]
    command += ["-cf", str(next((case / "fusion_off").glob("ge_proto_*.json")))]
    command += ["-out", str(out), "--no-progress", "--no-replay"]
    env = {**os.environ, "PYTHONPATH": str(server)}
    start = time.perf_counter()
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, cwd=tempfile.gettempdir())
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode not in (0, 1):
        raise SystemExit(f"compare exited with {child.returncode} ({server})")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def whole_runs(case: Path, ref_server: Path, repeat: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench_outputs_runs_"))
    results: dict[str, list[tuple[float, float, int]]] = {"ref": [], "this": []}
    try:
        for _ in range(repeat):
            for tag, server in (("ref", ref_server), ("this", REPO / "server")):
                results[tag].append(_run(server, case, work / tag))
        csv = [next((work / tag).glob("result_*.csv")).read_bytes() for tag in ("ref", "this")]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n2. compare --no-replay, {repeat} runs each, interleaved (min / median)")
    print(f"   {'':10} {'wall s':>15} {'CPU s':>15} {'peak RSS MB':>12}")
    for tag, label in (("ref", "reference"), ("this", "this tree")):
        walls, cpus, rss = zip(*results[tag], strict=True)
        print(
            f"   {label:10} {min(walls):6.2f} / {statistics.median(walls):5.2f} "
            f"{min(cpus):6.2f} / {statistics.median(cpus):5.2f} {max(rss) / 1024:12.0f}"
        )
    print(f"   CSV bytes identical: {'yes' if csv[0] == csv[1] else 'NO'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", default="HEAD~3", help="reference revision (default HEAD~3)")
    parser.add_argument("--case", type=Path, default=Path("/tmp/bench5k/case"))
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    if not (args.case / "fusion_on" / "dump").is_dir():
        print(f"{args.case}: no case; make one with bench_compare.py --ops 5000 --keep DIR")
        return 2
    for path in args.case.rglob("*"):  # into the page cache (the machine's DAMON evicts it)
        if path.is_file():
            path.read_bytes()
    folder = Path(tempfile.mkdtemp(prefix="bench_outputs_ref_")) / "tree"
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", str(folder), args.ref],
        check=True,
        capture_output=True,
    )
    try:
        for built in (REPO / "server").rglob("*.so"):
            shutil.copy2(built, folder / built.relative_to(REPO))
        print(f"reference {args.ref} vs this tree; case {args.case}; load {os.getloadavg()}")
        in_process(args.case, folder / "server", args.repeat)
        whole_runs(args.case, folder / "server", args.repeat)
        print(f"\nload average at the end: {os.getloadavg()}")
    finally:
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "remove", "--force", str(folder)],
            check=False,
            capture_output=True,
        )
        shutil.rmtree(folder.parent, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
