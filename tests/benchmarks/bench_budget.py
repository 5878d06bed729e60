"""Benchmark: `compare --memory-budget` with the replay on, peak memory against the budget.

    .venv/bin/python tests/benchmarks/bench_budget.py [--case DIR/case] [--keep DIR]
        [--budgets 300M,600M,1G] [--repeat 2] [--skip-msaccucmp]

Without ``--case`` it generates a case with activations of a real network's size (224x224
feature maps, 64 channels, ~100 original ops, dump files of up to ~38 MB; as
``bench_compare.py --spatial 224 --channels 64 --ops 100``). For each budget, and without one,
it runs `compare` with the replay and `--no-replay`, each ``--repeat`` times with the process
tree's RSS sampled every 10 ms (workers and the replay's process included), and prints wall,
the highest peak, where the replay ran (beside the comparison or after it, from summary.json,
or not at all when not even after it did it fit) and whether the peak stayed within the
budget, beside msaccucmp's run on the same case. The verdict must be the same under every
budget (for a replay the budget left out: the same as with ``--no-replay``). Last, the
budget model's estimates for the case beside one more unbounded run: the replay process's own
peak, and the rows counted against those the comparison made.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from bench_compare import (
    MSACCUCMP_SCRIPT,
    REPO,
    ReusedCase,
    byte_compile,
    compare_arguments,
    measure,
)
from fusion_switch.workflow.sizes import parse_size

sys.path.insert(0, str(REPO / "tests"))
from process_peaks import children_peaks

AFTER = "replay: run after the comparison"
NOT_RUN = "replay: not run"


def _verdict(out: Path) -> tuple[str, list, str]:
    """(verdict, suspects, where the replay ran) of a run's summary.json."""
    summary = json.loads((out / "summary.json").read_text())
    notes = summary.get("inputs", {}).get("notes", [])
    where = "after" if any(n.startswith(AFTER) for n in notes) else "beside"
    if any(n.startswith(NOT_RUN) for n in notes):
        where = "not run"  # not even after the comparison did it fit: unverified
    suspects = [(s["rule"], s["verdict"]) for s in summary["suspects"]]
    return summary["verdict"], suspects, where


def _model(case, root: Path) -> list[str]:
    """The budget model's estimates for ``case`` beside one unbounded run with the replay on
    two workers (the replay's process then the comparing process's only child)."""
    from fusion_switch.compare.engine import CompareRequest, discover
    from fusion_switch.compare.result_csv import read_result_csv
    from fusion_switch.compare.worker_memory import ROW_BYTES
    from fusion_switch.diagnose.replay_budget import replay_bytes

    paths = (case.on_dump, case.off_dump, case.on_graph, case.off_graph)
    inputs = discover(CompareRequest(*map(str, paths), str(root / "model")))
    replay = replay_bytes(inputs.on_graph, inputs.on_dir, case.off_graph)
    rows = inputs.comparing_bound.rows  # as the plan and the replay's fit count them
    out = root / "peaks"
    shutil.rmtree(out, ignore_errors=True)
    command = [
        *(sys.executable, "-m", "fusion_switch"),
        *compare_arguments(case, out),
        *("--no-progress", "--workers", "2"),
    ]
    children = children_peaks(command)
    made = len(read_result_csv(next(out.glob("result_*.csv")))[1])
    mb = 1 << 20
    if len(children) == 1:
        peak = f"peak {children[0] / mb:.0f} MiB ({children[0] / replay:.2f}x)"
    else:
        peak = f"children's peaks {[round(c / mb) for c in children]} MiB"
    return [
        "budget model against one unbounded run with the replay (--workers 2):",
        f"  replay process: estimated {replay / mb:.0f} MiB, {peak}",
        f"  rows: counted {rows:,} ({rows * ROW_BYTES / mb:.0f} MiB), made {made:,}",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", default=None, help="reuse a case kept by a benchmark (case/)")
    parser.add_argument("--keep", default=None, help="generate into DIR and keep it")
    parser.add_argument("--budgets", default="300M,600M,1G")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--ops", type=int, default=100)
    parser.add_argument("--skip-msaccucmp", action="store_true")
    args = parser.parse_args()
    budgets = [b.strip() for b in args.budgets.split(",") if b.strip()]
    byte_compile()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-budget-"))
    if args.case:
        case = ReusedCase(Path(args.case))
    else:
        from fusion_switch.synth.generator import generate_case

        case = generate_case(
            root / "case",
            n_ops=args.ops,
            faults=["wrong_epsilon"],
            spatial=224,
            channels=64,
            graph_text=False,
        )
    try:
        print(
            f"case: {case.n_original_ops} original ops, {case.n_fused_ops} fusion-on ops, "
            f"{case.dump_bytes / 1e6:.0f} MB of dumps; {max(1, args.repeat)} sampled run(s) each"
        )
        rows = []
        reference, unproven = None, None
        for budget in [None, *budgets]:
            for replay in (True, False):
                out = root / "out"
                command = [
                    *(sys.executable, "-m", "fusion_switch"),
                    *compare_arguments(case, out),
                    "--no-progress",
                    *(["--memory-budget", budget] if budget else []),
                    *([] if replay else ["--no-replay"]),
                ]
                walls, peaks, statuses = [], [], set()
                for _ in range(max(1, args.repeat)):
                    shutil.rmtree(out, ignore_errors=True)
                    wall, peak, status, _, _ = measure(command, root / "run.log")
                    walls.append(wall)
                    peaks.append(peak)
                    statuses.add(status)
                if statuses - {0, 1, 3}:  # 2: the comparison failed
                    print(f"compare exited {sorted(statuses)}: see {root / 'run.log'}")
                    return 2
                verdict, suspects, where = _verdict(out)
                if budget is None:
                    if replay:
                        reference = (verdict, suspects)
                    else:
                        unproven = (verdict, suspects)
                # a replay the budget left out gives what --no-replay gives
                expected = unproven if where == "not run" else reference
                same = (verdict, suspects) == expected if replay else None
                rows.append((budget, replay, min(walls), max(walls), max(peaks), where, same))
        theirs = None
        if not args.skip_msaccucmp:
            out = root / "msaccucmp"
            out.mkdir(exist_ok=True)
            script = MSACCUCMP_SCRIPT.format(oracle_dir=str(REPO / "tests" / "compare"))
            command = [sys.executable, "-c", script, *compare_arguments(case, out)]
            theirs = measure(command, root / "msaccucmp.log")
        mb = 1 << 20
        print(
            "\nbudget    run          wall (s)     peak RSS of the tree   replay   "
            "within budget   verdict as unbounded (not run: as --no-replay)"
        )
        for budget, replay, low, high, peak, where, same in rows:
            limit = parse_size(budget) if budget else None
            within = "-" if limit is None else ("PASS" if peak <= limit else "FAIL")
            print(
                f"{budget or 'none':8s}  {'replay' if replay else '--no-replay':11s}  "
                f"{low:5.2f}-{high:5.2f}  {peak / mb:8.0f} MiB"
                f"{'':12s} {where if replay else '-':8s} {within:14s}  "
                f"{'-' if same is None else ('same' if same else 'DIFFERENT')}"
            )
        if theirs is not None:
            print(
                f"{'msaccucmp 26.2':21s}  {theirs[0]:5.2f}        {theirs[1] / mb:8.0f} MiB"
                f"   (exit {theirs[2]})"
            )
        print("\n" + "\n".join(_model(case, root)))
        failed = any((r[0] and r[4] > parse_size(r[0])) or r[6] is False for r in rows)
        return 1 if failed else 0
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
