"""`fusion-switch passes GRAPH`: every fused op with its original ops, grouped by fusion pass.

What precision_tool's "list by pass" shows, from an atc graph JSON or a ge_proto_*.txt: for each
pass (most ops first) its section (GraphFusion / UBFusion: from fusion_result.json when given or
found next to the graph, else the op's pass_name_ub / _single_op_ub_pass_name, else the
catalogue) and the ops it produced, each with its original ops and all of its passes (most
recent first). Exit status 0, or 2 when the graph cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "passes",
        help="list the fused ops of a graph by fusion pass",
        description="List every fused op of a graph with its original ops and fusion passes.",
        allow_abbrev=False,
    )
    parser.add_argument("graph", metavar="GRAPH", help="atc graph JSON or ge_proto_*_Build.txt")
    parser.add_argument("--format", choices=("text", "json"), default="text", dest="fmt")
    parser.add_argument(
        "--fusion-result",
        "--fusion_result",
        dest="fusion_result",
        default=None,
        metavar="JSON",
        help="fusion_result.json naming each rule's section (default: one next to the graph)",
    )
    parser.set_defaults(func=run)


def list_passes(graph, fusion_result: dict | None = None) -> dict:
    """{"graph", "soc_version", "passes": [{"rule", "section", "section_source", "ops": [...]}],
    "fused_ops": n} ordered by number of ops, then name."""
    from ..catalogue import builtin_catalogue
    from ..diagnose.attribution import rule_section

    catalogue = builtin_catalogue()
    by_rule: dict[str, dict] = {}
    fused = 0
    for op in graph.ops:
        rules = list(dict.fromkeys(reversed(op.pass_names)))
        if not rules:
            continue
        fused += 1
        originals = list(dict.fromkeys(n for n in op.original_names if n)) or [op.name]
        entry = {"op": op.name, "type": op.type, "original_ops": originals, "passes": rules}
        for rule in rules:
            if rule not in by_rule:
                section, source = rule_section(rule, op, fusion_result, catalogue)
                by_rule[rule] = {
                    "rule": rule,
                    "section": section,
                    "section_source": source,
                    "in_catalogue": catalogue.get(rule) is not None,
                    "ops": [],
                }
            by_rule[rule]["ops"].append(entry)
    passes = sorted(by_rule.values(), key=lambda r: (-len(r["ops"]), r["rule"]))
    path = str(getattr(graph, "path", "") or "")
    path = str(Path(path).resolve()) if path else ""
    return {
        "graph": path,
        "name": graph.name or Path(path).name or "graph",
        "soc_version": graph.soc_version,
        "fused_ops": fused,
        "passes": passes,
    }


def print_passes(listing: dict, stream) -> None:
    w = stream.write
    target = f", target {listing['soc_version']}" if listing.get("soc_version") else ""
    w(
        f"{listing['name']}: {listing['fused_ops']} fused ops, {len(listing['passes'])} "
        f"passes{target}\n"
    )
    for p in listing["passes"]:
        unknown = "" if p["in_catalogue"] else "  (not in the catalogue)"
        w(f"\nPassName: {p['rule']}  [{p['section']}]  {len(p['ops'])} ops{unknown}\n")
        for op in p["ops"]:
            others = [r for r in op["passes"] if r != p["rule"]]
            w(f"  {op['op']} ({op['type']})\n")
            w(f"      original: {', '.join(op['original_ops'])}\n")
            if others:
                w(f"      also: {', '.join(others)}\n")


def run(args: argparse.Namespace) -> int:
    from ..diagnose.attribution import find_fusion_result, load_fusion_result
    from ..readers.graph import GraphError, load_graph

    try:
        graph = load_graph(args.graph)
    except (GraphError, OSError) as exc:
        print(f"fusion-switch passes: error: {exc}", file=sys.stderr)
        return 2
    path = Path(args.fusion_result) if args.fusion_result else find_fusion_result(args.graph)
    table = None
    if path is not None:
        try:
            table = load_fusion_result(path)
        except (OSError, ValueError) as exc:
            if args.fusion_result:  # asked for: an error
                print(
                    f"fusion-switch passes: error: --fusion-result: {exc}",
                    file=sys.stderr,
                )
                return 2
            # found next to the graph: the listing still works from the graph and catalogue
            print(
                f"fusion-switch passes: warning: fusion_result.json ignored: {exc}; sections "
                "come from the graph and the catalogue",
                file=sys.stderr,
            )
            path = None
    listing = list_passes(graph, table)
    listing["fusion_result"] = str(Path(path).resolve()) if path else None
    try:
        if args.fmt == "json":
            json.dump(listing, sys.stdout, indent=1)
            sys.stdout.write("\n")
        else:
            print_passes(listing, sys.stdout)
        sys.stdout.flush()
    except BrokenPipeError:
        from .compare import quiet_stdout

        quiet_stdout()
    return 0
