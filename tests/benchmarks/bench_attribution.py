"""Benchmark: which rule broke accuracy? Replay verdicts vs the row heuristic vs lowest cosine.

    .venv/bin/python tests/benchmarks/bench_attribution.py [--quick] [--large] [--keep DIR]

Generates cases across fault kind x topology (device/host formats, network size) x missing
evidence (none, producer dumps behind Cast, a random 30% of fusion-off dumps, a truncated dump)
x dtype (the float32 conv path, the float16 MLP path), plus faults on one path, a clean case and
custom ops no kernel covers. For each case it runs the comparison once and attributes it three
ways, printing per case and in total:

- guilty: injected rules named / injected rules (the replay counts only ``introduces``; a
  truncated dump of the guilty op is expected to leave it unverified: counted apart);
- innocent: rules named that were not injected;
- coverage: fused ops replayed / fused ops;
- added time: the replay's wall time over the comparison without it (engine + summary);

for the replay, the old heuristic (every suspect it lists: ``applySuspects`` turned them all off)
and "lowest cosine first" (msaccucmp's ordering: the rules of the fused op whose output cosine is
lowest). ``--large`` adds a 5,000-op case for the time budget (replay <= 20% of compare).

    .venv/bin/python tests/benchmarks/bench_attribution.py --cost CASE [--old REV] [--repeat N]

``--cost`` measures what the replay costs on one case kept by ``bench_compare.py --keep DIR``
(``DIR/case``), for this tree and an older revision side by side, runs interleaved (the machine
is shared: load averages are printed, medians reported): ``compare`` and ``compare --no-replay``
as the user runs them (wall, CPU of the process tree, peak RSS), and inside one process after
one comparison: the replay alone (``replay_outcome``) and the diagnose stage
(``write_outputs``) with and without the replay, each with the fusion-off graph unread again.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "server"))

from fusion_switch.compare.engine import CompareRequest, run_compare  # noqa: E402
from fusion_switch.diagnose.noise import CHANNEL_FACTOR  # noqa: E402
from fusion_switch.diagnose.summary import write_outputs  # noqa: E402
from fusion_switch.synth.generator import generate_case  # noqa: E402

SINGLE = [
    "wrong_epsilon",  # fp32, graph part of a graph+UB op
    "dropped_relu",  # fp32, UB part of the same op
    "dropped_scale",  # fp32, invisible to cosine
    "wrong_perm",  # fp32, transpose
    "fp16_saturation",  # fp32 softmax fed by fp16, few clipped elements
    "wrong_axis",  # fp32 softmax
    "dropped_bias",  # fp16, graph part of MatMul+BiasAdd+Gelu
    "approx_gelu",  # fp16, subtle, UB part
]
GAPS = ["none", "producers", "random", "truncated"]
TOPOLOGIES = [("device", 140), ("host", 240)]


def cases(quick: bool) -> list[dict]:
    out = []
    for kind in SINGLE:
        for gaps in GAPS:
            for formats, n_ops in TOPOLOGIES:
                out.append({"faults": [kind], "gaps": gaps, "formats": formats, "n_ops": n_ops})
    for pair in (
        ["wrong_epsilon", "dropped_scale@3"],  # second fault behind the first, same path
        ["dropped_bias", "wrong_epsilon@3"],
        ["approx_gelu", "dropped_relu@4"],
        ["dropped_scale", "wrong_perm@4"],
    ):
        for gaps in ("none", "producers"):
            out.append({"faults": pair, "gaps": gaps, "formats": "device", "n_ops": 240})
    out.append({"faults": [], "gaps": "none", "formats": "device", "n_ops": 240})
    out.append({"faults": [], "gaps": "random", "formats": "host", "n_ops": 240})
    out.append({"faults": ["dropped_scale"], "custom_ops": True, "n_ops": 140})
    out.append({"faults": ["wrong_epsilon"], "custom_ops": True, "gaps": "producers", "n_ops": 240})
    if quick:
        picked = [c for c in out if c.get("formats", "device") == "device" and c["n_ops"] <= 140]
        return picked[::3][:10] + [c for c in out if c.get("custom_ops")][:1]
    return out


def _lowest_cosine_rules(summary: dict) -> set[str]:
    fused = {r["op"] for r in summary.get("fused_ops", [])}
    rows = [o for o in summary.get("ops", []) if o["op"] in fused and o.get("cosine") is not None]
    if not rows:
        return set()
    worst = min(rows, key=lambda o: o["cosine"])
    return set(worst.get("rules") or [])


def run_case(spec: dict, folder: Path, seed: int) -> dict:
    case = generate_case(
        folder / "case",
        n_ops=spec["n_ops"],
        faults=spec["faults"],
        seed=seed,
        formats=spec.get("formats", "device"),
        gaps=spec.get("gaps", "none"),
        custom_ops=spec.get("custom_ops", False),
        graph_text=False,
    )
    injected = {f["rule"] for f in case.truth["faults"]}
    truncated = spec.get("gaps") == "truncated"
    t0 = time.perf_counter()
    outcome = run_compare(
        CompareRequest(case.on_dump, case.off_dump, case.on_graph, case.off_graph, folder / "o")
    )
    t1 = time.perf_counter()
    plain = write_outputs(outcome, folder / "plain", replay=False).summary
    t2 = time.perf_counter()
    replayed = write_outputs(outcome, folder / "replay").summary
    t3 = time.perf_counter()
    base = (t1 - t0) + (t2 - t1)
    named = {s["rule"] for s in replayed["suspects"] if s.get("verdict") == "introduces"}
    heuristic = {s["rule"] for s in plain["suspects"]}
    lowest = _lowest_cosine_rules(replayed)
    replay = replayed["replay"]
    first_rule = case.truth["faults"][0]["rule"] if case.truth["faults"] else None
    expected_unverified = {first_rule} if truncated and first_rule else set()
    return {
        "label": "+".join(spec["faults"]) or "clean",
        "gaps": spec.get("gaps", "none") + ("+custom" if spec.get("custom_ops") else ""),
        "formats": spec.get("formats", "device"),
        "n_ops": case.n_original_ops,
        "injected": injected,
        "provable": injected - expected_unverified,
        "replay": named,
        "heuristic": heuristic,
        "lowest": lowest,
        "coverage": replay["coverage"],
        "fused": replay["fused_ops"],
        "replayed": replay["replayed"],
        "added": (t3 - t2 - 0.0) / base if base else math.nan,
        "base_s": base,
        "replay_s": t3 - t2,
        "missing": bool(replayed.get("evidence_missing")),
        "channel_flagged": len(replayed.get("channel_disagreements") or []),
        "unrounded": [  # verdicts of the ops the unrounded replay scored lower
            r["verdict"]
            for r in replayed["fused_ops"]
            if (r.get("evidence") or {}).get("unrounded_replay", {}).get("used")
        ],
        "channel_right": max(
            (
                o["channel_score"] or 0.0
                for r in replayed["fused_ops"]
                if r["verdict"] in ("clean", "propagates")
                for o in r["outputs"]
            ),
            default=0.0,
        ),
    }


def _fmt_set(found: set[str], injected: set[str]) -> str:
    return f"{len(found & injected)}/{len(injected)} +{len(found - injected)}"


STAGES_SCRIPT = """
import gc, json, os, sys, time
from pathlib import Path
from fusion_switch.compare.engine import CompareRequest, run_compare
from fusion_switch.diagnose.replay_job import replay_outcome
from fusion_switch.diagnose.summary import write_outputs
from fusion_switch.readers.graph import deferred_graph

on_dump, off_dump, on_graph, off_graph, out = map(Path, sys.argv[1:6])
outcome = run_compare(CompareRequest(on_dump, off_dump, on_graph, off_graph, out / "o"))

def cpu():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system

def timed(name, fn):
    outcome.off_graph = deferred_graph(off_graph, outcome.off_graph.name)  # unread again
    wall, used = time.perf_counter(), cpu()
    fn()
    figures[name] = (time.perf_counter() - wall, cpu() - used)

def replay_alone():
    gc.disable()  # as write_outputs does: the comparison's heap is large
    try:
        replay_outcome(outcome, None, [])
    finally:
        gc.enable()

figures = {}
timed("replay alone", replay_alone)
timed("diagnose --no-replay", lambda: write_outputs(outcome, out / "plain", replay=False))
timed("diagnose with replay", lambda: write_outputs(outcome, out / "replay"))
print(json.dumps(figures))
"""


def _tree_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(source: Path, args: list[str]) -> tuple[float, float, int, str]:
    """(wall s, CPU s of the process tree, peak RSS bytes of the tree, stdout) of one run."""
    import psutil

    env = {**os.environ, "PYTHONPATH": str(source / "server")}
    used, start = _tree_cpu(), time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    ps, peak = psutil.Process(proc.pid), 0
    while proc.poll() is None:
        try:
            tree = [ps, *ps.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.02)
    wall = time.perf_counter() - start
    out = proc.stdout.read().decode() if proc.stdout else ""
    return wall, _tree_cpu() - used, peak, out


def _share_compiled_parts(tree: Path, old_tree: Path) -> list[str]:
    """A fresh worktree has no built extension: it would run the Python fallbacks and look
    slower for it. Copy this tree's build of each extension whose C source is the same in both
    (else say that the old tree runs without it)."""
    notes = []
    for built in sorted((tree / "server").rglob("*.so")):
        relative = built.relative_to(tree)
        source = tree / relative.parent / (built.name.split(".")[0] + ".c")
        old_source = old_tree / source.relative_to(tree)
        same = source.is_file() and old_source.is_file()
        if same and source.read_bytes() == old_source.read_bytes():
            shutil.copy2(built, old_tree / relative)
            notes.append(f"old tree: {relative.name} copied from this tree (same C source)")
            continue
        notes.append(f"old tree: {relative.name} NOT built (its C source differs or is absent)")
    return notes


def cost(case_dir: Path, old: str, repeat: int) -> int:
    """Replay and diagnose stage, this tree against ``old``; see the module docstring."""
    sys.path.insert(0, str(REPO / "tests" / "benchmarks"))
    from bench_compare import ReusedCase

    case = ReusedCase(case_dir)
    work = Path(tempfile.mkdtemp(prefix="bench-replay-cost-"))
    old_tree = work / "old-tree"
    subprocess.run(["git", "worktree", "add", "--detach", "-q", str(old_tree), old], cwd=REPO)
    for note in _share_compiled_parts(REPO, old_tree):
        print(note)
    trees = {f"old {old}": old_tree, "this tree": REPO}
    figures: dict[tuple[str, str], list[tuple[float, float, int]]] = {}
    loads = [os.getloadavg()[0]]
    paths = [case.on_dump, case.off_dump, case.on_graph, case.off_graph]
    try:
        for _ in range(max(1, repeat)):
            for label, tree in trees.items():
                out = work / "out"
                for name, extra in (("compare", []), ("compare --no-replay", ["--no-replay"])):
                    shutil.rmtree(out, ignore_errors=True)
                    args = ["-m", "fusion_switch", "compare", "-m", str(case.on_dump)]
                    args += ["-g", str(case.off_dump), "-f", str(case.on_graph)]
                    args += ["-cf", str(case.off_graph), "-out", str(out), "--no-progress"]
                    wall, used, peak, _ = _run(tree, [*args, *extra])
                    figures.setdefault((label, name), []).append((wall, used, peak))
                shutil.rmtree(out, ignore_errors=True)
                out.mkdir()
                stage_args = ["-c", STAGES_SCRIPT, *map(str, paths), str(out)]
                *_, printed = _run(tree, stage_args)
                for name, (wall, used) in json.loads(printed.strip().splitlines()[-1]).items():
                    figures.setdefault((label, name), []).append((wall, used, 0))
                loads.append(os.getloadavg()[0])
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(old_tree)], cwd=REPO)
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"case {case_dir}: {case.n_original_ops} original ops, {case.dump_bytes / 1e6:.0f} MB; "
        f"{os.cpu_count()} cpus; load average (1 min) during the runs "
        f"{min(loads):.1f}-{max(loads):.1f}; medians of {repeat} interleaved run(s)"
    )
    header = f"{'':<22} {'measurement':<22} {'wall s':>8} {'CPU s':>8} {'peak RSS':>9}"
    print(f"{header}  runs (wall/CPU s)")
    med = {}
    for (label, name), runs in figures.items():
        wall = statistics.median(r[0] for r in runs)
        used = statistics.median(r[1] for r in runs)
        peak = statistics.median(r[2] for r in runs)
        med[(label, name)] = (wall, used)
        rss = f"{peak / 2**20:6.0f} MB" if peak else ""
        each = ", ".join(f"{r[0]:.2f}/{r[1]:.2f}" for r in runs)
        print(f"{label:<22} {name:<22} {wall:8.2f} {used:8.2f} {rss:>9}  {each}")
    for label in trees:
        with_r, without = med[(label, "compare")], med[(label, "compare --no-replay")]
        print(
            f"{label}: the replay adds {with_r[0] - without[0]:.2f} s wall "
            f"({100 * (with_r[0] / without[0] - 1):.0f}%, budget <= 20%) and "
            f"{with_r[1] - without[1]:.2f} s CPU to compare"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cost", type=Path, help="a kept case: measure the replay's cost")
    parser.add_argument("--old", default="main", help="with --cost: revision to compare with")
    parser.add_argument("--repeat", type=int, default=3, help="with --cost: runs of each")
    parser.add_argument("--quick", action="store_true", help="11 small cases")
    parser.add_argument("--large", action="store_true", help="add one 5,000-op case (timing)")
    parser.add_argument("--keep", type=Path, help="keep the generated cases in this folder")
    args = parser.parse_args(argv)
    if args.cost:
        return cost(args.cost, args.old, args.repeat)
    specs = cases(args.quick)
    if args.large:
        specs.append({"faults": ["wrong_epsilon"], "gaps": "none", "n_ops": 5000})
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-attr-"))
    results = []
    header = (
        f"{'#':>3} {'case':<30} {'gaps':<16} {'fmt':<6} {'ops':>5} | {'replay':>8} "
        f"{'heur.':>8} {'lowcos':>8} | {'cover':>6} {'added':>6}"
    )
    print("per case: guilty named/injected +innocent named (replay counts 'introduces' only)")
    print(header)
    print("-" * len(header))
    try:
        for i, spec in enumerate(specs):
            folder = root / f"c{i:03d}"
            r = run_case(spec, folder, seed=i)
            results.append(r)
            print(
                f"{i:>3} {r['label'][:30]:<30} {r['gaps']:<16} {r['formats']:<6} {r['n_ops']:>5} | "
                f"{_fmt_set(r['replay'], r['provable']):>8} "
                f"{_fmt_set(r['heuristic'], r['injected']):>8} "
                f"{_fmt_set(r['lowest'], r['injected']):>8} | "
                f"{100 * r['coverage']:>5.1f}% {100 * r['added']:>5.1f}%",
                flush=True,
            )
            if not args.keep:
                shutil.rmtree(folder, ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    _totals(results)
    return 0


def _totals(results: list[dict]) -> None:
    injected = sum(len(r["injected"]) for r in results)
    provable = sum(len(r["provable"]) for r in results)
    fused = sum(r["fused"] for r in results)
    replayed = sum(r["replayed"] for r in results)

    def row(name: str, key: str, against: str) -> str:
        found = sum(len(r[key] & r[against]) for r in results)
        innocent = sum(len(r[key] - r["injected"]) for r in results)
        cases_ok = sum(1 for r in results if r[against] <= r[key] and not r[key] - r["injected"])
        total = sum(len(r[against]) for r in results)
        return (
            f"{name:<26} {found:>4}/{total:<4} guilty named   {innocent:>4} innocent named   "
            f"{cases_ok:>3}/{len(results)} cases exactly right"
        )

    print()
    print(f"totals over {len(results)} cases ({injected} injected rules, {provable} provable)")
    print(row("replay (introduces)", "replay", "provable"))
    print(row("old heuristic", "heuristic", "injected"))
    print(row("lowest cosine first", "lowest", "injected"))
    print(
        f"replay coverage: {replayed}/{fused} fused ops ({100 * replayed / max(1, fused):.1f}%); "
        f"unverified by design: custom ops, truncated dumps"
    )
    flagged = sum(r["channel_flagged"] for r in results)
    print(
        f"check per channel: {flagged} fused op(s) left unverified by it; largest channel score "
        f"of an op the replay found right {max(r['channel_right'] for r in results):.3g} "
        f"(tolerance {CHANNEL_FACTOR:g} x the op's, at least {CHANNEL_FACTOR:g})"
    )
    unrounded = [v for r in results for v in r["unrounded"]]
    print(
        f"unrounded replay: scored lower than the replay for {len(unrounded)} fused op(s) "
        f"({', '.join(f'{v} {unrounded.count(v)}' for v in sorted(set(unrounded))) or 'none'})"
    )
    added = sorted(r["added"] for r in results)
    median = added[len(added) // 2]
    biggest = max(results, key=lambda r: r["n_ops"])
    print(
        f"added time (replay / compare without it): median {100 * median:.1f}%, "
        f"largest case ({biggest['n_ops']} ops) {100 * biggest['added']:.1f}% "
        f"({biggest['replay_s']:.2f} s over {biggest['base_s']:.2f} s); budget <= 20% at 5,000 ops"
    )


if __name__ == "__main__":
    sys.exit(main())
