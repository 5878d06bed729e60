"""`fusion-switch dumps DIR`: what a dump tree holds, before comparing it.

Every leaf folder of ``{time}/{device_id}/{model}/{model_id}/{iteration}/`` (or MindSpore's
``rank_{id}/{net}/{graph_id}/{iteration}/``) with its kind (tensor dumps, statistics, exception
dumps), file and op counts, data types and bytes; then the ranks and iterations, which compare
needs named (``--rank``, ``--iteration``) when there are several. Exception dumps are listed file
by file: they hold a failing kernel's buffers, with no op name, dtype or shape recorded.
Exit status 0, or 2 when the folder holds no dump files (the message says what was expected).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

MAX_HEADERS = 2000  # tensor files whose headers are read for dtypes, per leaf


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "dumps",
        help="list what a dump tree holds: ranks, models, iterations, ops, dtypes, bytes",
        description=(
            "List the leaves of a dump tree (time/device/model/model id/iteration) with their "
            "kind (tensor, statistics, exception dumps), op and file counts, dtypes and bytes."
        ),
        allow_abbrev=False,
    )
    parser.add_argument("folder", metavar="DIR", help="a dump folder or any folder above it")
    parser.add_argument("--format", choices=("text", "json"), default="text", dest="fmt")
    parser.set_defaults(func=run)


def describe_tree(path: str) -> dict:
    from ..readers.dumptree import scan_dump_tree

    tree = scan_dump_tree(path)
    leaves = [_leaf_details(leaf) for leaf in tree.leaves]
    return {
        "root": str(Path(path).resolve()),
        "kinds": tree.kinds,
        "timestamps": tree.values("timestamp"),
        "ranks": tree.ranks,
        "rank_keys": tree.rank_keys,  # as --rank names them: node0/0 (see DumpLeaf.rank_key)
        "models": tree.values("model"),
        "model_ids": tree.values("model_id"),
        "iterations": tree.iterations,
        "steps": tree.steps,  # step folders above the time folders (MindSpore O2, msprobe)
        "files": sum(leaf["files"] for leaf in leaves),
        "bytes": sum(leaf["bytes"] for leaf in leaves),
        "leaves": leaves,
    }


def _leaf_details(leaf) -> dict:
    out = {
        "path": str(leaf.path.resolve()),
        "kind": leaf.kind,
        "timestamp": leaf.timestamp,
        "rank": leaf.rank,
        "rank_key": leaf.rank_key,
        "step": leaf.step,
        "model": leaf.model,
        "model_id": leaf.model_id,
        "iteration": leaf.iteration,
        "files": leaf.n_files,
        "bytes": leaf.n_bytes,
    }
    if leaf.kind == "tensor":
        out.update(_tensor_details(leaf.path))
    elif leaf.kind == "stats":
        out.update(_stats_details(leaf.path))
    else:
        out.update(_exception_details(leaf.path))
    return out


def _tensor_details(folder: Path) -> dict:
    from ..readers.dump import DumpError, read_dump
    from ..readers.dumpdir import DumpDirError, scan_dump_dir

    try:
        index = scan_dump_dir(folder)
    except DumpDirError as exc:
        return {"ops": 0, "dtypes": [], "problems": [str(exc)]}
    dtypes: Counter[str] = Counter()
    problems: list[str] = []
    files = [p for op in index.op_names for p in index.files_for(op)]
    for path in files[:MAX_HEADERS]:
        try:
            dump = read_dump(path)
        except DumpError as exc:
            problems.append(str(exc))
            continue
        for t in [*dump.inputs, *dump.outputs]:
            dtypes[t.data_type_name if not dump.npy_dtype else str(dump.npy_dtype)] += 1
    out = {"ops": len(index.op_names), "dtypes": sorted(dtypes)}
    if len(files) > MAX_HEADERS:
        out["dtypes_from"] = f"the first {MAX_HEADERS} of {len(files)} files"
    if problems:
        more = len(problems) - 5
        out["problems"] = problems[:5] + ([f"... and {more} more bad file(s)"] if more > 0 else [])
    if index.ignored:
        out["ignored"] = len(index.ignored)
    return out


def _stats_details(folder: Path) -> dict:
    from ..readers.stats import StatsError, is_stats_file, read_stats_csv

    rows = 0
    ops: set[str] = set()
    dtypes: set[str] = set()
    io: Counter[str] = Counter()
    statistics: list[str] = []
    problems = []
    for csv_path in sorted(folder.glob("*.csv")):
        if not is_stats_file(csv_path):  # a damaged statistic.csv is said, not skipped
            continue
        try:
            stats = read_stats_csv(csv_path)
        except StatsError as exc:
            problems.append(str(exc))
            continue
        rows += len(stats.rows)
        ops.update(stats.ops)
        dtypes.update(r.dtype for r in stats.rows if r.dtype)
        io.update(r.io for r in stats.rows)
        statistics = statistics or stats.statistics
    out = {
        "ops": len(ops),
        "rows": rows,
        "io": dict(sorted(io.items())),
        "dtypes": sorted(dtypes),
        "statistics": statistics,
        "note": "statistics only: no tensor data (tensor metrics and replay need tensor dumps)",
    }
    if problems:
        out["problems"] = problems
    return out


def _exception_details(folder: Path) -> dict:
    from ..readers.dump import DumpError
    from ..readers.exception_dump import is_exception_dump_name, read_exception_dump

    files = []
    for path in sorted(folder.iterdir()):
        if not is_exception_dump_name(path.name):
            continue
        try:
            dump = read_exception_dump(path)
        except DumpError as exc:
            files.append({"file": path.name, "problem": str(exc)})
            continue
        files.append(
            {
                "file": path.name,
                "kernel": dump.name.kernel or None,
                "stream_id": dump.name.stream_id,
                "task_id": dump.name.task_id,
                "time": dump.name.time,
                "core_type": dump.name.core_type or None,
                "core_id": dump.name.core_id,
                "version": dump.version,
                "dump_time": dump.dump_time,
                "op_name": dump.op_name or None,
                "buffers": [b.size for b in dump.buffers],
                "dtypes": sorted({b.dtype for b in dump.buffers}),
                "description": dump.describe(),
            }
        )
    return {
        "ops": 0,
        "dtypes": [],
        "exception_files": files,
        "note": (
            "exception dumps: a failing kernel's argument buffers and tiling data, no op name, "
            "no dtype or shape recorded; nothing to compare"
        ),
    }


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def print_tree(listing: dict, stream) -> None:
    w = stream.write
    leaves = listing["leaves"]
    w(
        f"{listing['root']}: {len(leaves)} dump folders ({', '.join(listing['kinds'])}), "
        f"{listing['files']} files, {_size(listing['bytes'])}\n"
    )
    plain = [str(r) for r in listing["ranks"]] == listing["rank_keys"]
    for name, key in (
        ("timestamps", "timestamps"),
        ("ranks (device ids)", "ranks") if plain else ("ranks", "rank_keys"),
        ("models", "models"),
        ("model ids", "model_ids"),
        ("iterations", "iterations"),
        ("steps", "steps"),
    ):
        if listing[key]:
            w(f"  {name}: {', '.join(map(str, listing[key]))}\n")
    for leaf in leaves:
        where = ", ".join(
            f"{label} {leaf[key]}"
            for label, key in (
                ("step", "step"),
                ("time", "timestamp"),
                ("rank", "rank_key"),
                ("model", "model"),
                ("model id", "model_id"),
                ("iteration", "iteration"),
            )
            if leaf[key] is not None
        )
        w(f"\n{where or leaf['path']}  [{_KIND_NAMES[leaf['kind']]}]\n  {leaf['path']}\n")
        w(f"  {leaf['files']} files, {_size(leaf['bytes'])}")
        if leaf["kind"] != "exception":
            w(f", {leaf['ops']} ops")
        if leaf.get("rows") is not None:
            w(f", {leaf['rows']} rows ({', '.join(f'{v} {k}' for k, v in leaf['io'].items())})")
        if leaf.get("dtypes"):
            w(f", dtypes {', '.join(leaf['dtypes'])}")
        if leaf.get("dtypes_from"):
            w(f" (from {leaf['dtypes_from']})")
        w("\n")
        if leaf.get("statistics"):
            w(f"  statistics: {', '.join(leaf['statistics'])}\n")
        for item in leaf.get("exception_files", []):
            w(f"  {item['file']}: {item.get('description') or item.get('problem')}\n")
        if leaf.get("note"):
            w(f"  note: {leaf['note']}\n")
        for problem in leaf.get("problems", []):
            w(f"  problem: {problem}\n")
    if len(listing["rank_keys"]) > 1 or len(listing["iterations"]) > 1:
        w(
            "\ncompare needs --rank R|all and --iteration I for a tree with several ranks or "
            "iterations\n"
        )
    if len(listing["steps"]) > 1:
        w("compare needs --step S for a tree with several steps\n")


_KIND_NAMES = {"tensor": "tensor dumps", "stats": "statistics", "exception": "exception dumps"}


def run(args: argparse.Namespace) -> int:
    from ..readers.dumptree import DumpTreeError

    try:
        listing = describe_tree(args.folder)
    except DumpTreeError as exc:
        print(f"fusion-switch dumps: error: {exc}", file=sys.stderr)
        return 2
    try:
        if args.fmt == "json":
            json.dump(listing, sys.stdout, indent=1)
            sys.stdout.write("\n")
        else:
            print_tree(listing, sys.stdout)
        sys.stdout.flush()
    except BrokenPipeError:
        from .quiet_stdout import quiet_stdout

        quiet_stdout()
    return 0
