"""`compare` on two statistics trees: per op and tensor, what statistics allow.

The leaves to compare come from :func:`.compare_tree.plan_runs` (the ranks and iteration asked
for); :mod:`..compare.stats_compare` compares the statistics and writes the outputs.
"""

from __future__ import annotations

import argparse
import json
import sys

from .compare_errors import tell_error as _error
from .compare_tree import Plan


def run_statistics(args: argparse.Namespace, plan: Plan) -> int:
    """Two statistics trees: per op and tensor, what statistics allow."""
    from ..compare.stats_compare import NEEDS_TENSORS, compare_stats, rendered_outputs
    from ..diagnose.summary import write_together
    from ..readers.stats import StatsError, is_stats_file, read_stats_csv
    from ..workflow.stats_result import divergence

    pairs = []
    # what was chosen in the trees, and the ranks not compared (a review: stderr only)
    notes = list(plan.notes)
    notes += [f"not compared: {left.why}" for left in plan.unpaired]
    bad = []  # one bad file is said and stops nothing (a review: it stopped every pair)
    refused = []  # a graph and iteration of a rank in several folders: which one is not known
    for pair in plan.selection.pairs:  # type: ignore[attr-defined]
        on_by_key, off_by_key = _by_key(pair.on), _by_key(pair.off)
        for key, on_leaves in on_by_key.items():
            label = " ".join(x for x in (pair.label, _leaf_label(on_leaves[0])) if x)
            off_leaves = off_by_key.pop(key, [])
            if not off_leaves:
                notes.append(f"{label}: only in -m")
                continue
            if len(on_leaves) > 1 or len(off_leaves) > 1:
                # a review: a second fusion-off folder replaced the first, and another
                # server's statistics were compared ("drift: 57 tensors", exit 1)
                why = (_several(on_leaves, "-m"), _several(off_leaves, "-g"))
                refused.append(f"{label}: {'; '.join(w for w in why if w)}")
                continue
            leaf, partner = on_leaves[0], off_leaves[0]
            for csv_on in sorted(leaf.path.glob("*.csv")):
                csv_off = partner.path / csv_on.name
                if not is_stats_file(csv_on):
                    continue
                if not csv_off.is_file():
                    notes.append(f"{label}: {csv_on.name} only in -m")
                    continue
                try:
                    pairs.append((label, read_stats_csv(csv_on), read_stats_csv(csv_off)))
                except StatsError as exc:
                    bad.append(str(exc))
        for leaves in off_by_key.values():
            label = " ".join(x for x in (pair.label, _leaf_label(leaves[0])) if x)
            notes.append(f"{label}: only in -g")
    notes += [f"not compared: {problem}" for problem in refused + bad]
    if not pairs and (bad or refused):
        return _error(f"no statistics file could be compared ({(refused + bad)[0]})")
    if not pairs:
        return _error(
            "the two statistics trees share no graph and iteration; list them with "
            "fusion-switch dumps and pass --iteration I (or all)"
        )
    threshold = 0.01
    result = compare_stats(pairs, threshold)
    result.notes[:0] = notes
    (csv_path, csv_text), (summary_path, summary_text) = rendered_outputs(result, args.out_dir)
    write_together([(csv_path, csv_text), (summary_path, summary_text)])
    summary = json.loads(summary_text)
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
            print(f"first divergence in execution order: {divergence(first)}")
        else:
            print("no statistic drifts past the threshold")
        for note in notes:
            print(f"note: {note}")
        print(f"note: {NEEDS_TENSORS}")
        print(f"\nsummary: {summary_path.resolve()}\ncsv:     {csv_path.resolve()}")
    return 1 if first else 3 if bad or refused or plan.unpaired else 0


def _stats_key(leaf) -> tuple:
    """A statistics leaf within its rank's pair (the pair is one rank: ``LeafPair.rank``)."""
    return (leaf.model, leaf.model_id, leaf.iteration)


def _by_key(leaves) -> dict[tuple, list]:
    found: dict[tuple, list] = {}
    for leaf in leaves:
        found.setdefault(_stats_key(leaf), []).append(leaf)
    return found


def _several(leaves, flag: str) -> str:
    """What makes one side's folders of a graph and iteration several, and how to pick one."""
    if len(leaves) < 2:
        return ""
    times = sorted({leaf.timestamp or "?" for leaf in leaves})
    return (
        f"{len(leaves)} statistics folders under {flag} (time folders {', '.join(times)}: "
        f"re-runs or different processes, which one pairs with the other run's is not known; "
        f"point {flag} at one time folder)"
    )


def _leaf_label(leaf) -> str:
    parts = [
        f"graph {leaf.model_id}" if leaf.model_id is not None else "",
        f"iteration {leaf.iteration}" if leaf.iteration is not None else "",
    ]
    return " ".join(p for p in parts if p)
