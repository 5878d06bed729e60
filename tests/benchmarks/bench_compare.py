"""Benchmark: `fusion-switch compare` against msaccucmp on the same generated case, in one run.

    .venv/bin/python tests/benchmarks/bench_compare.py [--ops 5000] [--keep DIR] [--repeat N]
    .venv/bin/python tests/benchmarks/bench_compare.py --case DIR/case [--repeat N]

Generates a case (5,000 original ops is about 400 MB of dumps, as in DESIGN.md 4; or reuses one
kept earlier with --keep), then measures, each as a separate process: reading every input byte
once, the dumps and the two graphs (the floor), `fusion-switch compare --no-replay` (CSV +
attribution + summary + report, all cores), the same with the replay, and msaccucmp 26.2 (through
tests/compare/oracle.py's dump-header patch, logging as shipped, one process). Each is run --repeat
times, interleaved, and the medians are reported (the machine may be shared). Prints wall time,
peak RSS and PSS of the process tree (psutil, children included), CPU, the ratios, whether the CSVs
agree, the time to the first progress report, and issue 16's budgets with PASS/FAIL: the compare >=
30x faster than msaccucmp on every run (each run of ours against the msaccucmp run beside it, and
the slowest of ours against the fastest msaccucmp), peak memory <= 0.5x msaccucmp's, <= 3x the read
time (its fastest run: a slow spell does not widen the budget); with the replay <= 5x the read
time; first progress within 1 s. A ratio is printed with as
many decimals as it takes for the printed figure to be on the same side of the limit as the exact
one.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "compare"))

SPATIAL = 20  # 20x20 feature maps: ~80 KB of dumps per original op, as the reference case

READ_SCRIPT = """
import os, sys
total = 0
def read(path):
    global total
    with open(path, 'rb') as f:
        while chunk := f.read(1 << 20):
            total += len(chunk)
for root in sys.argv[1:]:
    if os.path.isfile(root):
        read(root)
    for folder, _, files in os.walk(root):
        for name in files:
            read(os.path.join(folder, name))
print(total)
"""

MSACCUCMP_SCRIPT = """
import sys
sys.path.insert(0, {oracle_dir!r})
import oracle
oracle.make_importable()
oracle.patch_dump_parser()
import msaccucmp
sys.argv = ['msaccucmp.py', *sys.argv[1:]]
try:
    msaccucmp.main()
except SystemExit as stop:
    sys.exit(int(stop.code or 0))
"""


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


_PSS_EVERY = 10  # PSS every 10th sample (100 ms): reading smaps costs the job CPU time


def measure(
    command: list[str], log: Path, extra_env: dict[str, str] | None = None, sample: bool = True
) -> tuple[float, int, int, float, int]:
    """(wall seconds, peak RSS bytes of the process tree, exit status, CPU seconds of the
    process tree: user + system, workers included, peak PSS bytes of the tree).

    ``sample=False``: no memory sampling (peaks 0). Sampling walks the process tree every
    10 ms and reads smaps every 100 ms: on two cores that takes CPU from a job that uses both,
    so wall and CPU come from unsampled runs and the peaks from sampled ones (:func:`timed`).

    RSS counts a page shared by several processes once in each (a forked worker shows its
    parent's pages again); PSS splits it among them, so the tree's PSS is the memory the job
    really holds. The budget is judged on RSS, as msaccucmp is one process; PSS is printed
    beside it."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "server"), env.get("PYTHONPATH", "")])
    env.update(extra_env or {})
    cpu = _children_cpu()
    with open(log, "wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
        ps = psutil.Process(proc.pid)
        peak = peak_pss = 0
        samples = 0
        while sample and proc.poll() is None:
            try:
                tree = [ps, *ps.children(recursive=True)]
                peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
                if samples % _PSS_EVERY == 0:
                    pss = sum(p.memory_full_info().pss for p in tree if p.is_running())
                    peak_pss = max(peak_pss, pss)
            except psutil.Error:
                pass
            samples += 1
            time.sleep(0.01)
        proc.wait()
        wall = time.perf_counter() - start
    return wall, peak, proc.returncode, _children_cpu() - cpu, peak_pss


def timed(
    command: list[str],
    log: Path,
    extra_env: dict[str, str] | None,
    sampled: list[tuple],
    reset=lambda: None,
) -> tuple[float, int, int, float, int]:
    """One unsampled run for wall and CPU, one sampled run (kept in ``sampled``) for the
    memory peaks: the run's figures with the peaks of the sampled one. ``reset`` empties the
    run's output folder before each."""
    reset()
    wall, _, status, cpu, _ = measure(command, log, extra_env, sample=False)
    reset()
    memory = measure(command, log, extra_env)
    sampled.append(memory)
    return wall, memory[1], status, cpu, memory[4]


def first_progress(command: list[str], out: Path) -> float:
    """Seconds from start to the first progress line of ``command`` (its --no-progress
    replaced by JSON-lines progress); the run is stopped there."""
    command = [c for c in command if c != "--no-progress"]
    command[command.index("-out") + 1] = str(out)
    command += ["--progress", "jsonl"]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "server"), env.get("PYTHONPATH", "")])
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        while True:
            line = proc.stderr.readline()
            if not line or line.startswith(b"{"):
                break
        return time.perf_counter() - start
    finally:
        proc.kill()
        proc.wait()
        proc.stderr.close()
        shutil.rmtree(out, ignore_errors=True)


def byte_compile() -> None:
    """Write fusion_switch's bytecode, as pip does when it installs the package: with
    PYTHONDONTWRITEBYTECODE set (as on this machine) every run would otherwise compile our
    sources again (~0.2 s of each start) while numpy and msaccucmp load compiled code."""
    import compileall

    compileall.compile_dir(REPO / "server" / "fusion_switch", quiet=1, force=False)


def median_run(runs: list[tuple]) -> tuple[float, int, int, float, int]:
    """(median wall, median peak RSS, worst exit status, median CPU, median peak PSS) of
    repeated runs."""
    return (
        statistics.median(r[0] for r in runs),
        int(statistics.median(r[1] for r in runs)),
        max(r[2] for r in runs),
        statistics.median(r[3] for r in runs),
        int(statistics.median(r[4] for r in runs)),
    )


def honest(value: float, limit: float, passed: bool, unit: str = "x") -> str:
    """``value`` printed so that rounding never puts it on the other side of ``limit``."""
    for digits in range(1, 7):
        text = f"{value:.{digits}f}"
        shown = float(text)
        if (shown >= limit) == (value >= limit) and (shown <= limit) == (value <= limit):
            break
    return f"{text}{unit} {'PASS' if passed else 'FAIL'}"


class ReusedCase:
    """A case generated earlier (``--keep DIR``): its paths and truth, read back."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.on_graph = next((root / "fusion_on").glob("ge_proto_*.json"))
        self.off_graph = next((root / "fusion_off").glob("ge_proto_*.json"))
        self.on_dump = self._leaf(root / "fusion_on" / "dump")
        self.off_dump = self._leaf(root / "fusion_off" / "dump")
        self.truth = json.loads((root / "truth.json").read_text())
        self.n_original_ops = self.truth.get("n_original_ops", 0)
        self.n_fused_ops = self.truth.get("n_fused_ops", 0)
        self.dump_bytes = sum(
            os.path.getsize(os.path.join(d, f))
            for part in ("fusion_on", "fusion_off")
            for d, _, files in os.walk(root / part / "dump")
            for f in files
        )

    @staticmethod
    def _leaf(folder: Path) -> Path:
        while True:
            subs = sorted(p for p in folder.iterdir() if p.is_dir())
            if not subs:
                return folder
            folder = subs[-1]


def csv_agreement(ours: Path, theirs: Path) -> str:
    from fusion_switch.compare.result_csv import read_result_csv

    h1, rows1 = read_result_csv(ours)
    h2, rows2 = read_result_csv(theirs)
    if h1 != h2:
        return f"headers differ: {h1} vs {h2}"
    if len(rows1) != len(rows2):
        return f"row counts differ: {len(rows1)} vs {len(rows2)}"
    first = h1.index("CosineSimilarity")
    last = h1.index("CompareFailReason") if "CompareFailReason" in h1 else len(h1)
    std = h1.index("StandardDeviation") if "StandardDeviation" in h1 else -1
    ti = h1.index("TensorIndex")
    worst = 0.0
    for a, b in zip(rows1, rows2, strict=True):
        if a[ti] != b[ti]:
            return f"row order differs at {a[ti]} vs {b[ti]}"
        for k in range(first, last):
            if k == std or a[k] == b[k]:
                continue
            try:
                x, y = float(a[k]), float(b[k])
            except ValueError:
                return f"{a[ti]} {h1[k]}: {a[k]!r} vs {b[k]!r}"
            if math.isnan(x) and math.isnan(y):
                continue
            rel = abs(x - y) / max(abs(y), 1e-6)
            worst = max(worst, rel)
    return f"identical rows ({len(rows1)}), worst relative metric difference {worst:.2e}"


def compiled_parts() -> str:
    """Which C extensions this install has: without them the same outputs come slower."""
    from fusion_switch.compare import metrics, result_csv
    from fusion_switch.diagnose import noise
    from fusion_switch.readers import dumpdir, graph_model, protowire

    kernel = "in use" if metrics.kernel_in_use() else "NOT in use (numpy path)"
    wire = "built" if protowire._wire is not None else "NOT built (Python loop)"
    rounding = "in use" if noise.compiled_in_use() else "NOT in use (numpy path)"
    sizes = "built" if dumpdir._files is not None else "NOT built (stat'ed one by one)"
    attrs = "built" if graph_model._attr_check is not None else "NOT built (Python loop)"
    rows = "built" if result_csv._csv_rows is not None else "NOT built (the csv module)"
    return (
        f"metrics kernel {kernel}; dump header scan {wire}; replay rounding {rounding}; "
        f"file-size prefetch {sizes}; attribute-map check {attrs}; CSV row renderer {rows}"
    )


def compare_arguments(case, out: Path, graph_folders: bool = False) -> list[str]:
    """`compare` with msaccucmp's flags: both tools take the same command line. With
    ``graph_folders`` -f/-cf name the folders holding the graphs (our extension: the graph that
    names the dumped ops is picked)."""
    on, off = case.on_graph, case.off_graph
    if graph_folders:
        on, off = on.parent, off.parent
    return [
        *("compare", "-m", str(case.on_dump), "-g", str(case.off_dump)),
        *("-f", str(on), "-cf", str(off), "-out", str(out)),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=5000, help="original ops (default 5000)")
    parser.add_argument("--fault", default="wrong_epsilon")
    parser.add_argument("--keep", default=None, help="generate into DIR and keep it")
    parser.add_argument("--skip-msaccucmp", action="store_true")
    parser.add_argument("--case", default=None, help="reuse a case kept with --keep (its case/)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each, medians (3)")
    parser.add_argument(
        "--spatial",
        type=int,
        default=SPATIAL,
        help=f"feature maps SxS ({SPATIAL}: ~80 KB of dumps per op; 224 with --channels 64: "
        "activations of a real network's size, dump files of ~38 MB)",
    )
    parser.add_argument("--channels", type=int, default=16, help="channels per layer (16)")
    args = parser.parse_args()
    repeat = max(1, args.repeat)

    from fusion_switch.synth.generator import generate_case

    byte_compile()

    if args.case:
        root = Path(tempfile.mkdtemp(prefix="bench-compare-"))
        case = ReusedCase(Path(args.case))
        origin = f"reused from {args.case}"
    else:
        root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-compare-"))
    try:
        if not args.case:
            t0 = time.perf_counter()
            case = generate_case(
                root / "case",
                n_ops=args.ops,
                faults=[args.fault],
                spatial=args.spatial,
                channels=args.channels,
                graph_text=False,
            )
            origin = f"generated in {time.perf_counter() - t0:.1f} s in {root}"
        mb = case.dump_bytes / 1e6
        print(
            f"case: {case.n_original_ops} original ops, {case.n_fused_ops} fusion-on ops, "
            f"{mb:.0f} MB of dumps ({origin})"
        )
        print(
            f"machine: {os.cpu_count()} cpus, Python {sys.version.split()[0]}, "
            f"load average {os.getloadavg()[0]:.1f}; medians of {repeat} run(s) each"
        )
        print(f"compiled parts: {compiled_parts()}")
        dumps = [str(case.root / "fusion_on" / "dump"), str(case.root / "fusion_off" / "dump")]
        # every input byte (issue 16): the dumps and the two graphs
        graphs = [str(case.on_graph), str(case.off_graph)]
        read_command = [sys.executable, "-c", READ_SCRIPT, *dumps, *graphs]
        ours_out, theirs_out = root / "ours", root / "msaccucmp"
        ours_command = [
            *(sys.executable, "-m", "fusion_switch"),
            *compare_arguments(case, ours_out),
            "--no-progress",
        ]
        plain_out = root / "plain"
        plain_command = [
            *(sys.executable, "-m", "fusion_switch"),
            *compare_arguments(case, plain_out),
            "--no-progress",
            "--no-replay",
        ]
        folders_out = root / "folders"
        folders_command = [  # -f/-cf as the graph folders users get from DUMP_GE_GRAPH
            *(sys.executable, "-m", "fusion_switch"),
            *compare_arguments(case, folders_out, graph_folders=True),
            "--no-progress",
            "--no-replay",
        ]
        numpy_out = root / "numpy"
        numpy_command = [*plain_command[:-3], str(numpy_out), *plain_command[-2:]]
        assert plain_command[-3] == str(plain_out)
        theirs_command = None
        if not args.skip_msaccucmp:
            theirs_out.mkdir(exist_ok=True)
            script = MSACCUCMP_SCRIPT.format(oracle_dir=str(REPO / "tests" / "compare"))
            theirs_command = [sys.executable, "-c", script, *compare_arguments(case, theirs_out)]
        runs: dict[str, list[tuple]] = {
            "read": [],
            "plain": [],
            "numpy": [],
            "folders": [],
            "ours": [],
            "theirs": [],
        }
        numpy_only = {"FUSION_SWITCH_METRICS": "numpy"}  # the same run without the kernel
        # the floor is reading from the page cache (issue 16): one untimed read fills it
        subprocess.run(read_command, stdout=subprocess.DEVNULL, check=False)
        sampled: dict[str, list[tuple]] = {name: [] for name in runs}

        def emptied(folder: Path):
            return lambda: shutil.rmtree(folder, ignore_errors=True)

        def no_csv() -> None:
            for old in theirs_out.glob("result_*.csv"):
                old.unlink()

        for _ in range(repeat):  # interleaved, so a busy spell on the machine hits all three
            runs["read"].append(timed(read_command, root / "read.log", None, sampled["read"]))
            runs["plain"].append(
                timed(plain_command, root / "plain.log", None, sampled["plain"], emptied(plain_out))
            )
            runs["numpy"].append(
                timed(
                    numpy_command,
                    root / "numpy.log",
                    numpy_only,
                    sampled["numpy"],
                    emptied(numpy_out),
                )
            )
            runs["folders"].append(
                timed(
                    folders_command,
                    root / "folders.log",
                    None,
                    sampled["folders"],
                    emptied(folders_out),
                )
            )
            runs["ours"].append(
                timed(ours_command, root / "ours.log", None, sampled["ours"], emptied(ours_out))
            )
            if theirs_command is not None:
                runs["theirs"].append(
                    timed(theirs_command, root / "msaccucmp.log", None, sampled["theirs"], no_csv)
                )
        read = median_run(runs["read"])
        plain = median_run(runs["plain"])
        numpy_plain = median_run(runs["numpy"])
        folders = median_run(runs["folders"])
        ours = median_run(runs["ours"])
        theirs = median_run(runs["theirs"]) if runs["theirs"] else None

        def row(name: str, m: tuple | None) -> None:
            if m is None:
                return
            print(
                f"  {name:<26} {m[0]:9.2f} s   peak RSS {m[1] / 2**20:8.1f} MB   "
                f"PSS {m[4] / 2**20:8.1f} MB   exit {m[2]}   (CPU {m[3]:.2f} s)"
            )

        print(
            "\nwall time and peak memory (process tree; CPU = user + system, all processes; "
            "wall and CPU from unsampled runs, the peaks from a sampled run after each):"
        )
        row("read every input once", read)
        row("compare --no-replay", plain)
        row("  the same, numpy metrics", numpy_plain)
        row("  the same, -f/-cf folders", folders)
        row("compare (with the replay)", ours)
        row("msaccucmp 26.2", theirs)
        if repeat > 1:
            print(
                "  runs (wall s): "
                + "; ".join(
                    f"{name} {', '.join(f'{r[0]:.2f}' for r in items)}"
                    for name, items in runs.items()
                    if items
                )
            )
            print(
                "  the sampled runs' walls (s): "
                + "; ".join(
                    f"{name} {', '.join(f'{r[0]:.2f}' for r in items)}"
                    for name, items in sampled.items()
                    if items
                )
            )
        verdict = (
            (ours_out / "summary.json").read_text() if (ours_out / "summary.json").exists() else ""
        )
        if verdict:
            top = json.loads(verdict)["suspects"][:1]
            truth = case.truth["faults"][0]
            print(f"\nverdict: {top[0]['rule'] if top else 'none'} (injected: {truth['rule']})")
        kernel_csv = sorted(plain_out.glob("result_*.csv"))
        numpy_csv = sorted(numpy_out.glob("result_*.csv"))
        if kernel_csv and numpy_csv:
            same = kernel_csv[-1].read_bytes() == numpy_csv[-1].read_bytes()
            print(f"CSV with the kernel vs numpy metrics: {'identical' if same else 'DIFFERENT'}")
        folders_csv = sorted(folders_out.glob("result_*.csv"))
        if kernel_csv and folders_csv:
            same = kernel_csv[-1].read_bytes() == folders_csv[-1].read_bytes()
            print(f"CSV with graph folders vs files: {'identical' if same else 'DIFFERENT'}")
        # the floor is the least time reading the bytes takes: its fastest run, sampled ones
        # included. A median floor a slow spell inflated printed "3x: 1.8x PASS" in the
        # thirty-fourth round (runs 0.20, 0.59, 0.50 s beside sampled runs of 0.18-0.20 s)
        floor = min(r[0] for r in [*runs["read"], *sampled["read"]])
        print(
            "\nbudgets (issue 16; the compare itself is measured --no-replay; the read floor is "
            f"the fastest of its runs, {floor:.2f} s):"
        )
        slowdown = plain[0] / floor
        print(f"  within 3x of reading the bytes:   {honest(slowdown, 3, slowdown <= 3)}")
        with_replay = ours[0] / floor
        print(f"  with the replay within 5x of it:  {honest(with_replay, 5, with_replay <= 5)}")
        added = ours[0] / plain[0] - 1
        print(f"  the replay adds (issue 11: 20%):  {100 * added:.0f}% of the compare's wall")
        first = first_progress(ours_command, root / "first")
        print(f"  first progress within 1 s:        {honest(first, 1, first <= 1, ' s')}")
        if theirs is not None:
            for label, name, target in (("", "plain", 30), (" (with the replay)", "ours", None)):
                mine = runs[name]
                pairs = [t[0] / o[0] for o, t in zip(mine, runs["theirs"], strict=True)]
                worst = min(t[0] for t in runs["theirs"]) / max(o[0] for o in mine)
                speedup = min(min(pairs), worst)
                verdict = (
                    honest(speedup, target, speedup >= target) if target else f"{speedup:.1f}x"
                )
                print(f"  >= 30x faster than msaccucmp{label}: {verdict}")
                print(
                    f"    (run by run: {', '.join(f'{r:.1f}x' for r in pairs)}; slowest of "
                    f"ours vs fastest msaccucmp {worst:.1f}x)"
                )
            for label, m in (("", plain), (" (with the replay)", ours)):
                share = m[1] / theirs[1]
                memory = honest(share, 0.5, share <= 0.5)
                print(
                    f"  peak memory <= 0.5x msaccucmp's{label}: {memory} ({m[1] / 2**20:.1f} MB "
                    f"vs {theirs[1] / 2**20:.1f} MB RSS; PSS {m[4] / 2**20:.1f} MB = "
                    f"{m[4] / max(1, theirs[4]):.2f}x)"
                )
            ours_csv = sorted(ours_out.glob("result_*.csv"))
            theirs_csv = sorted(theirs_out.glob("result_*.csv"))
            if ours_csv and theirs_csv:
                agreement = csv_agreement(ours_csv[-1], theirs_csv[-1])
                print(f"  same CSV as msaccucmp:            {agreement}")
            else:
                print("  same CSV as msaccucmp:            a CSV is missing (see the .log files)")
        return 0
    finally:
        if not args.keep or args.case:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
