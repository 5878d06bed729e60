"""Benchmark: how `fusion-switch compare` scales with the model size and with the ranks (issue 16).

    .venv/bin/python tests/benchmarks/bench_scale.py [--curve 500,1000,2000,5000,10000,20000]
        [--ranks 1,2,4] [--rank-ops 1000] [--keep DIR] [--skip-cluster]

1. Linearity: generates a case per size in ``--curve`` (original ops; ~80 KB of dumps per op, as
   bench_compare.py) and runs `compare` on all cores once per size (plus the read floor, reading
   every dump byte once). Prints ops, MB, wall, wall per 1,000 fusion-on ops and peak RSS of
   the process tree: linear means a flat "per 1k ops" column.
2. Scaling table: a dump tree of ``R`` ranks of ``--rank-ops`` ops each (one generated case,
   hard-linked as every rank), compared with `compare --rank all`: the ranks in turn in one
   process (`--workers 1`), side by side (one process per rank, all cores) and on a Dask
   LocalCluster of two workers (`--scheduler local --workers 2`, one cluster for all ranks).
   Prints ranks x ops x MB against wall and peak RSS for each.

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


def _rank_tree(root: Path, case, ranks: int) -> dict[str, Path]:
    """A dump tree per side holding ``ranks`` ranks, each a hard-linked copy of ``case``'s dump
    (one graph pair serves every rank, as for the ranks of one data-parallel job)."""
    trees = {}
    for side in ("on", "off"):
        leaf = Path(getattr(case, f"{side}_dump"))
        tree = root / f"tree-{side}"
        for rank in range(ranks):
            # dump/<time>/<device>/<model>/<model id>/<iteration>
            target = tree / leaf.parents[3].name / str(rank) / leaf.parents[1].name / "1" / "0"
            target.mkdir(parents=True)
            for f in leaf.iterdir():
                os.link(f, target / f.name)
        trees[side] = tree
    return trees


def scaling(root: Path, ranks: list[int], rank_ops: int, cluster: bool) -> None:
    modes = [
        ("in turn, 1 process", ("--workers", "1")),
        ("side by side", ()),
    ]
    if cluster:
        modes.append(("LocalCluster x2", ("--scheduler", "local", "--workers", "2")))
    print(
        f"\n2. `compare --rank all` on R ranks of {rank_ops} ops: wall and peak RSS of the "
        "process tree"
    )
    print(f"  {'ranks':>5} {'ops':>7} {'MB':>7}  " + "  ".join(f"{m:>22}" for m, _ in modes))
    case = _generate(root / "rank-case" / "case", rank_ops, seed=100)
    for count in ranks:
        folder = root / f"ranks-{count}"
        trees = _rank_tree(folder, case, count)
        cells = []
        for label, extra in modes:
            out = folder / f"out-{label.replace(' ', '').replace(',', '')}"
            command = [
                *(sys.executable, "-m", "fusion_switch", "compare"),
                *("-m", str(trees["on"]), "-g", str(trees["off"])),
                *("-f", str(case.on_graph), "-cf", str(case.off_graph)),
                *("-out", str(out), "--rank", "all", "--no-progress", *extra),
            ]
            wall, peak, status, _ = measure(command, folder / "scale.log")
            note = "" if status in (0, 1) else f" exit {status}"
            cells.append(f"{wall:8.2f} s {peak / 2**20:6.0f} MB{note}")
        ops = count * case.n_original_ops
        mb = count * case.dump_bytes / 1e6
        print(f"  {count:>5} {ops:>7} {mb:>7.0f}  " + "  ".join(f"{c:>22}" for c in cells))
        shutil.rmtree(folder, ignore_errors=True)


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
