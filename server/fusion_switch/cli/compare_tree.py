"""`compare` on dump trees: which leaves, which graph, one run per rank, statistics dumps.

Kept out of :mod:`.compare` (the single comparison and its output) so that the choice of inputs
reads in one place: the ranks and iteration asked for (:mod:`..readers.dump_selection` refuses to
guess), a graph picked from a folder by the ops it shares with the dump, ``--rank all`` as one
comparison per rank into ``OUT/rank_R/`` plus ``OUT/ranks_summary.json``, and two statistics
trees compared with :mod:`..compare.stats_compare`.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

RANKS_SUMMARY = "ranks_summary.json"


@dataclass
class Plan:
    kind: str  # "tensor" | "stats"
    runs: list[tuple[str, argparse.Namespace]] = field(default_factory=list)
    selection: object = None


def _error(message: str) -> int:
    print(f"fusion-switch compare: error: {message}", file=sys.stderr)
    return 2


def _note(message: str) -> None:
    print(f"fusion-switch compare: note: {message}", file=sys.stderr)


@cache
def _graph_name(path: str) -> str | None:
    from ..readers.graph import GraphError, load_graph

    if not path or not Path(path).is_file():
        return None
    try:
        return load_graph(path).name or None
    except (GraphError, OSError):
        return None


def plan_runs(args: argparse.Namespace) -> Plan | int:
    """The comparisons to run, or an exit status after an error message."""
    from ..readers.dump_selection import select_pairs
    from ..readers.dumpdir import DumpDirError, scan_dump_dir
    from ..readers.dumptree import DumpTreeError, NoDumpsError
    from ..readers.graph import GraphError
    from ..readers.graph_folder import graph_candidates, pick_graph

    rank, iteration = getattr(args, "rank", None), getattr(args, "iteration", None)
    if not (Path(args.on_dump).is_dir() and Path(args.off_dump).is_dir()):
        return Plan("tensor", [("", args)])  # the single comparison reports the bad path
    try:
        selection = select_pairs(
            args.on_dump,
            args.off_dump,
            rank,
            iteration,
            # read only when a tree holds several models to choose from by the graph's name
            graph_names=(lambda: _graph_name(args.on_graph), lambda: _graph_name(args.off_graph)),
        )
    except NoDumpsError:
        return Plan("tensor", [("", args)])  # no dump files: the comparison says so, as before
    except DumpTreeError as exc:
        return _error(str(exc))
    leaves_on, leaves_off = (len(tree.leaves) for tree in selection.trees)
    for note in selection.notes:
        _note(note)
    if selection.kind == "stats":
        return Plan("stats", selection=selection)
    if iteration == "all":
        return _error("--iteration all is for statistics dumps; tensor dumps compare one iteration")
    plan = Plan("tensor", selection=selection)
    several = len(selection.pairs) > 1
    for pair in selection.pairs:
        ns = copy.copy(args)
        on_leaf, off_leaf = pair.on[0], pair.off[0]
        if leaves_on > 1 or several:
            ns.on_dump = str(on_leaf.path)
        if leaves_off > 1 or several:
            ns.off_dump = str(off_leaf.path)
        if several or leaves_on > 1 or leaves_off > 1:
            _note(f"{pair.label or 'comparing'}: -m {on_leaf.path} with -g {off_leaf.path}")
        for attr, flag, leaf in (("on_graph", "-f", on_leaf), ("off_graph", "-cf", off_leaf)):
            folder = getattr(ns, attr)
            if folder and Path(folder).is_dir() and graph_candidates(folder):
                try:
                    ops = scan_dump_dir(leaf.path).op_names
                    picked, why = pick_graph(folder, ops, flag)
                except (GraphError, DumpDirError) as exc:
                    return _error(str(exc))
                _note(why)
                setattr(ns, attr, str(picked))
        if several:
            ns.out_dir = str(Path(args.out_dir) / f"rank_{pair.rank}")
        plan.runs.append((pair.label, ns))
    return plan


def run_per_rank(args: argparse.Namespace, plan: Plan, runner) -> int:
    """``--rank all``: one comparison per rank, then a line per rank and a combined summary."""
    results = []
    worst = 0
    for label, ns in plan.runs:
        print(f"== {label}: results in {ns.out_dir}", file=sys.stderr)
        status, outputs = runner(ns)
        summary = outputs.summary if outputs is not None else {}
        suspects = summary.get("suspects", [])
        results.append(
            {
                "rank": label.removeprefix("rank "),
                "status": status,
                "out_dir": str(Path(ns.out_dir).resolve()),
                "verdict": summary.get("verdict", "not compared (see the error above)"),
                "suspects": [
                    {"rule": s["rule"], "section": s["section"], "score": s["score"]}
                    for s in suspects[:5]
                ],
            }
        )
        worst = max(worst, status)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    combined = {"ranks": results, "exit_status": worst}
    (out / RANKS_SUMMARY).write_text(json.dumps(combined, indent=1) + "\n", encoding="utf-8")
    if args.fmt == "json":
        json.dump(combined, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        for r in results:
            top = r["suspects"][0] if r["suspects"] else None
            blame = f"  top suspect {top['rule']} [{top['section']}]" if top else ""
            print(f"rank {r['rank']}: {r['verdict']}{blame}\n   {r['out_dir']}")
        print(f"summary of all ranks: {(out / RANKS_SUMMARY).resolve()}")
    return worst


def run_statistics(args: argparse.Namespace, plan: Plan) -> int:
    """Two statistics trees: per op and tensor, what statistics allow."""
    from ..compare.stats_compare import NEEDS_TENSORS, compare_stats, write_outputs
    from ..readers.stats import StatsError, looks_like_stats_csv, read_stats_csv

    pairs = []
    notes = []
    try:
        for pair in plan.selection.pairs:  # type: ignore[attr-defined]
            off_by_key = {_stats_key(leaf): leaf for leaf in pair.off}
            for leaf in pair.on:
                key = _stats_key(leaf)
                partner = off_by_key.pop(key, None)
                label = " ".join(x for x in (pair.label, _leaf_label(leaf)) if x)
                if partner is None:
                    notes.append(f"{label}: only in -m")
                    continue
                for csv_on in sorted(leaf.path.glob("*.csv")):
                    csv_off = partner.path / csv_on.name
                    if looks_like_stats_csv(csv_on) and csv_off.is_file():
                        pairs.append((label, read_stats_csv(csv_on), read_stats_csv(csv_off)))
            notes += [f"{_leaf_label(leaf)}: only in -g" for leaf in off_by_key.values()]
    except StatsError as exc:
        return _error(str(exc))
    if not pairs:
        return _error(
            "the two statistics trees share no graph and iteration; list them with "
            "fusion-switch dumps and pass --iteration I (or all)"
        )
    threshold = 0.01
    result = compare_stats(pairs, threshold)
    result.notes[:0] = notes
    csv_path, summary_path = write_outputs(result, args.out_dir)
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    counts = summary["counts"]
    first = summary["first_divergence"]
    if args.fmt == "json":
        json.dump(summary, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print(
            f"compared the statistics of {counts['compared']} tensors in {counts['ops']} ops "
            f"({', '.join(summary['statistics'])}; drift = relative difference > {threshold:g})"
        )
        for status in ("drift", "nan_inf", "dtype", "shape", "only_on", "only_off"):
            if counts.get(status):
                print(f"  {status}: {counts[status]} tensors")
        if first:
            rel = ", ".join(
                f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}"
                for k, v in first["relative_difference"].items()
            )
            print(
                f"first divergence in execution order: {first['op']} ({first['type']}) "
                f"{first['tensor']} [{first['leaf']}]: {first['status']} ({rel})"
            )
        else:
            print("no statistic drifts past the threshold")
        for note in notes:
            print(f"note: {note}")
        print(f"note: {NEEDS_TENSORS}")
        print(f"\nsummary: {summary_path.resolve()}\ncsv:     {csv_path.resolve()}")
    return 1 if first else 0


def _stats_key(leaf) -> tuple:
    return (leaf.model, leaf.model_id, leaf.iteration)


def _leaf_label(leaf) -> str:
    parts = [
        f"graph {leaf.model_id}" if leaf.model_id is not None else "",
        f"iteration {leaf.iteration}" if leaf.iteration is not None else "",
    ]
    return " ".join(p for p in parts if p)
