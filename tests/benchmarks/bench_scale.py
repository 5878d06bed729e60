"""Benchmark: how `fusion-switch compare` scales with the model size and with the ranks (issue 16).

    .venv/bin/python tests/benchmarks/bench_scale.py [--curve 500,1000,2000,5000,10000,20000]
        [--ranks 1,2,4] [--rank-ops 1000] [--keep DIR] [--skip-cluster]

1. Linearity: generates a case per size in ``--curve`` (original ops; ~80 KB of dumps per op, as
   bench_compare.py) and runs `compare` on all cores once per size (plus the read floor, reading
   every dump byte once). Prints ops, MB, wall, wall per 1,000 fusion-on ops and peak RSS of
   the process tree: linear means a flat "per 1k ops" column.
2. Scaling table: ``R`` ranks of ``--rank-ops`` ops each (one generated case per rank, as a
   multi-rank dump tree holds one rank pair per rank), each rank pair compared in one process
   (`--workers 1`), on the process pool (all cores) and on a Dask LocalCluster of two workers
   (`--scheduler local --workers 2`), one rank pair after the other. Prints ranks x ops x MB
   against wall and peak RSS for each.

Each measurement is one separate process tree (psutil, workers included); the machine load is
printed first, since the machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench_compare import READ_SCRIPT, SPATIAL, compare_arguments, measure


def _sizes(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def _ours(case, out: Path, *extra: str) -> list[str]:
    return [
        *(sys.executable, "-m", "fusion_switch"),
        *compare_arguments(case, out),
        "--no-progress",
        *extra,
    ]


def _generate(root: Path, ops: int, seed: int):
    from fusion_switch.synth.generator import generate_case

    return generate_case(root, n_ops=ops, seed=seed, spatial=SPATIAL, graph_text=False)


def curve(root: Path, sizes: list[int]) -> None:
    print("\n1. time per op from the smallest to the largest case (all cores):")
    print(
        f"  {'ops':>7} {'fused':>6} {'MB':>7} {'read s':>7} {'wall s':>7} {'s/1k ops':>9}"
        f" {'RSS MB':>7}"
    )
    for ops in sizes:
        folder = root / f"curve-{ops}"
        case = _generate(folder / "case", ops, seed=1)
        dumps = [str(folder / "case" / side / "dump") for side in ("fusion_on", "fusion_off")]
        read = measure([sys.executable, "-c", READ_SCRIPT, *dumps], folder / "read.log")
        ours = measure(_ours(case, folder / "out"), folder / "ours.log")
        per_k = ours[0] / case.n_fused_ops * 1000
        print(
            f"  {case.n_original_ops:>7} {case.n_fused_ops:>6} {case.dump_bytes / 1e6:>7.0f} "
            f"{read[0]:>7.2f} {ours[0]:>7.2f} {per_k:>9.3f} {ours[1] / 2**20:>7.0f}"
            + ("" if ours[2] in (0, 1) else f"  exit {ours[2]}")
        )
        shutil.rmtree(folder, ignore_errors=True)


def scaling(root: Path, ranks: list[int], rank_ops: int, cluster: bool) -> None:
    modes = [("one process", ("--workers", "1")), ("process pool", ())]
    if cluster:
        modes.append(("LocalCluster x2", ("--scheduler", "local", "--workers", "2")))
    print(f"\n2. ranks x ops x MB against wall and peak RSS ({rank_ops} ops per rank):")
    print(f"  {'ranks':>5} {'ops':>7} {'MB':>7}  " + "  ".join(f"{m:>22}" for m, _ in modes))
    cases = [
        _generate(root / f"rank{r}" / "case", rank_ops, seed=100 + r) for r in range(max(ranks))
    ]
    for count in ranks:
        chosen = cases[:count]
        cells = []
        for label, extra in modes:
            wall, peak = 0.0, 0
            for number, case in enumerate(chosen):
                out = root / f"out-{label.replace(' ', '')}-{number}"
                run = measure(_ours(case, out, *extra), root / "scale.log")
                wall, peak = wall + run[0], max(peak, run[1])
                shutil.rmtree(out, ignore_errors=True)
            cells.append(f"{wall:8.2f} s {peak / 2**20:6.0f} MB")
        ops = sum(c.n_original_ops for c in chosen)
        mb = sum(c.dump_bytes for c in chosen) / 1e6
        print(f"  {count:>5} {ops:>7} {mb:>7.0f}  " + "  ".join(f"{c:>22}" for c in cells))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--curve", default="500,1000,2000,5000,10000,20000", type=_sizes)
    parser.add_argument("--ranks", default="1,2,4", type=_sizes)
    parser.add_argument("--rank-ops", type=int, default=1000)
    parser.add_argument("--skip-cluster", action="store_true", help="no Dask LocalCluster runs")
    parser.add_argument("--keep", default=None, help="work in DIR and keep it")
    args = parser.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-scale-"))
    root.mkdir(parents=True, exist_ok=True)
    print(
        f"machine: {os.cpu_count()} cpus, Python {sys.version.split()[0]}, load average "
        f"{os.getloadavg()[0]:.1f} at {time.strftime('%H:%M:%S')}"
    )
    try:
        if args.curve:
            curve(root, args.curve)
        if args.ranks:
            scaling(root, args.ranks, args.rank_ops, not args.skip_cluster)
        print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
