"""`fusion-switch passes GRAPH|FUSION_RESULT`: the fused ops of a graph, or the rules that fired.

Given a graph (atc graph JSON or ``ge_proto_*.txt``): every fused op of every graph of the model
(sub-graphs included) with its original ops, grouped by fusion pass, most ops first. A pass's
section (GraphFusion / UBFusion) comes from fusion_result.json when given or found next to the
graph, else the op's pass_name_ub / _single_op_ub_pass_name, else the catalogue. Fused ops that
carry no pass name (only ``_datadump_original_op_names``) are listed under rule "unknown", with
the rules they may come from when fusion_result.json and the catalogue's patterns narrow it down
(always marked "inferred").

Given a fusion_result.json (any layout CANN writes): the rules that took effect, with their
counts per session and graph and in total.

Exit status 0, or 2 when the file cannot be read or is something else (message says what).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

UNKNOWN = "unknown"
MAX_INFERRED = 3  # more candidates than this say nothing useful


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "passes",
        help="list the fused ops of a graph by fusion pass, or the rules a fusion_result fired",
        description=(
            "List every fused op of a graph with its original ops and fusion passes, or the "
            "fusion rules that took effect according to a fusion_result.json."
        ),
        allow_abbrev=False,
    )
    parser.add_argument(
        "graph",
        metavar="GRAPH|FUSION_RESULT",
        help="atc graph JSON, ge_proto_*_Build.txt, or fusion_result.json",
    )
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


# ----------------------------------------------------------------------------- graphs


def list_passes(graph, fusion_result=None) -> dict:
    """{"graph", "name", "soc_version", "fused_ops", "fused_without_pass_name", "graphs",
    "passes": [{"rule", "section", "section_source", "in_catalogue", "ops"}], ...} ordered by
    number of ops, then name. ``fusion_result``: a FusionResult, or the old {rule: {...}} table."""
    from ..catalogue import builtin_catalogue
    from ..diagnose.attribution import rule_section
    from ..readers.fused_ops import derived_ops, fused_ops, subgraph_refs

    catalogue = builtin_catalogue()
    table = _section_table(fusion_result)
    by_rule: dict[str, dict] = {}
    fused = fused_ops(graph)
    without = 0
    for f in fused:
        entry = {
            "op": f.label,
            "type": f.type,
            "original_ops": list(f.original_names) or [f.op],
            "passes": f.rules,
        }
        if f.graph != graph.name:
            entry["graph"] = f.graph
        rules = f.rules
        if not rules:
            without += 1
            entry["inferred"] = infer_rules(f.type, fusion_result, catalogue)
            rules = [UNKNOWN]
        op = graph.op(f.op) if f.graph == graph.name else _op_in(graph, f.graph, f.op)
        for rule in rules:
            if rule not in by_rule:
                by_rule[rule] = _pass_entry(rule, op, table, catalogue, rule_section)
            by_rule[rule]["ops"].append(entry)
    passes = sorted(by_rule.values(), key=lambda r: (-len(r["ops"]), r["rule"]))
    path = str(getattr(graph, "path", "") or "")
    path = str(Path(path).resolve()) if path else ""
    return {
        "graph": path,
        "name": graph.name or Path(path).name or "graph",
        "soc_version": graph.soc_version,
        "fused_ops": len(fused),
        "fused_without_pass_name": without,
        "derived_ops": len(derived_ops(graph)),
        "graphs": [
            {"name": g.name, "ops": len(g.ops), "root": g is graph} for g in graph.all_graphs
        ],
        "subgraph_references": [
            {"op": r.op, "type": r.type, "subgraph": r.subgraph, "in_file": r.in_file}
            for r in subgraph_refs(graph)
        ],
        "passes": passes,
    }


def _op_in(graph, graph_name: str, op_name: str):
    for g in graph.all_graphs:
        if g.name == graph_name:
            return g.op(op_name)
    return None


def _pass_entry(rule, op, table, catalogue, rule_section) -> dict:
    if rule == UNKNOWN:
        section, source = "", "no pass name on the op (only _datadump_original_op_names)"
        known = False
    else:
        section, source = rule_section(rule, op, table, catalogue)
        known = catalogue.get(rule) is not None
    return {
        "rule": rule,
        "section": section,
        "section_source": source,
        "in_catalogue": known,
        "ops": [],
    }


def _section_table(fusion_result) -> dict | None:
    """The {rule: {"section", "effect_times"}} view rule_section() reads."""
    if fusion_result is None or isinstance(fusion_result, dict):
        return fusion_result
    table: dict[str, dict] = {}
    for (section, rule), n in fusion_result.totals().items():
        table.setdefault(rule, {"section": section, "effect_times": n})
    return table


_PATTERN = re.compile(r"pattern matches ([^.]*)\.")


def infer_rules(op_type: str, fusion_result, catalogue) -> list[str]:
    """Rules that may have produced a fused op of ``op_type`` with no pass name: those that
    took effect in fusion_result.json and whose catalogue pattern names the op type. Empty when
    there is no fusion_result, no candidate, or too many to be useful."""
    if fusion_result is None or isinstance(fusion_result, dict) or not op_type:
        return []
    found = []
    for section, rule in fusion_result.fired():
        known = catalogue.get(rule, section)
        m = _PATTERN.search(known.description) if known is not None else None
        if m and op_type in [t.strip() for t in m.group(1).split(",")]:
            found.append(rule)
    found = list(dict.fromkeys(found))
    return found if len(found) <= MAX_INFERRED else []


def print_passes(listing: dict, stream) -> None:
    w = stream.write
    target = f", target {listing['soc_version']}" if listing.get("soc_version") else ""
    graphs = listing.get("graphs") or []
    subs = f", {len(graphs) - 1} sub-graphs" if len(graphs) > 1 else ""
    w(
        f"{listing['name']}: {listing['fused_ops']} fused ops, "
        f"{sum(p['rule'] != UNKNOWN for p in listing['passes'])} passes{target}{subs}\n"
    )
    if listing.get("fused_without_pass_name"):
        w(
            f"{listing['fused_without_pass_name']} fused ops carry no pass name (only "
            "_datadump_original_op_names): listed under rule 'unknown'\n"
        )
    if listing.get("derived_ops"):
        w(
            f"{listing['derived_ops']} ops marked _datadump_is_multiop stand for one original op "
            "each: derived, not fused, not listed\n"
        )
    for p in listing["passes"]:
        unknown = "" if p["in_catalogue"] or p["rule"] == UNKNOWN else "  (not in the catalogue)"
        section = f"  [{p['section']}]" if p["section"] else ""
        w(f"\nPassName: {p['rule']}{section}  {len(p['ops'])} ops{unknown}\n")
        for op in p["ops"]:
            others = [r for r in op["passes"] if r != p["rule"]]
            where = f" in {op['graph']}" if op.get("graph") else ""
            w(f"  {op['op']} ({op['type']}){where}\n")
            w(f"      original: {', '.join(op['original_ops'])}\n")
            if others:
                w(f"      also: {', '.join(others)}\n")
            if op.get("inferred"):
                w(
                    f"      inferred (not recorded): {' or '.join(op['inferred'])} "
                    "(took effect in fusion_result.json, pattern names this op type)\n"
                )


# ----------------------------------------------------------------------------- fusion_result


def list_fired(result) -> dict:
    """The rules of a FusionResult: per graph, and totals (fired ones first)."""
    graphs = []
    for session, graph in result.graphs():
        rules = [
            {
                "rule": r.name,
                "section": r.section,
                "effect_times": r.effect_times,
                "match_times": r.match_times,
                "repository_hit_times": r.repository_hit_times,
            }
            for r in result.records
            if (r.session, r.graph) == (session, graph)
        ]
        graphs.append({"session": session, "graph": graph, "rules": rules})
    matches = result.match_totals()
    totals = [
        {"rule": rule, "section": sec, "effect_times": n, "match_times": matches[(sec, rule)]}
        for (sec, rule), n in result.totals().items()
    ]
    totals.sort(key=lambda t: (-t["effect_times"], t["section"], t["rule"]))
    return {
        "fusion_result": str(result.path.resolve()),
        "layout": result.layout,
        "graphs": graphs,
        "fired": [{"section": s, "rule": r} for s, r in result.fired()],
        "totals": totals,
    }


def print_fired(listing: dict, stream) -> None:
    w = stream.write
    fired = listing["fired"]
    w(
        f"{listing['fusion_result']}: layout {listing['layout']}, {len(listing['graphs'])} "
        f"graphs, {len(listing['totals'])} rules listed, {len(fired)} took effect\n"
    )
    for g in listing["graphs"]:
        took = [r for r in g["rules"] if r["effect_times"] > 0]
        session = f"session {g['session']} " if g["session"] else ""
        w(f"\n{session}graph {g['graph']}: {len(took)} of {len(g['rules'])} rules took effect\n")
        for r in took:
            w(f"  {r['rule']}  [{r['section']}]  {_counts(r)}\n")
    w("\nTotal (rules that took effect):\n")
    for t in listing["totals"]:
        if t["effect_times"] > 0:
            w(f"  {t['rule']}  [{t['section']}]  {_counts(t)}\n")


def _counts(r: dict) -> str:
    text = f"effect {r['effect_times']}"
    if r.get("match_times") is not None:
        text += f", match {r['match_times']}"
    if r.get("repository_hit_times") is not None:
        text += f", repository hits {r['repository_hit_times']}"
    return text


# ----------------------------------------------------------------------------- command


def _emit(listing: dict, printer, fmt: str) -> None:
    try:
        if fmt == "json":
            json.dump(listing, sys.stdout, indent=1)
            sys.stdout.write("\n")
        else:
            printer(listing, sys.stdout)
        sys.stdout.flush()
    except BrokenPipeError:
        from .quiet_stdout import quiet_stdout

        quiet_stdout()


def _error(message: str) -> int:
    print(f"fusion-switch passes: error: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    from ..diagnose.attribution import find_fusion_result
    from ..readers.fusion_result import FusionResultError, read_fusion_result
    from ..readers.graph import GraphError, load_graph
    from ..readers.graph_kind import sniff_graph

    if Path(args.graph).is_dir():
        return _error(
            f"{args.graph} is a folder; pass a graph file (ge_proto_*_Build.txt or atc JSON) or "
            "a fusion_result.json (fusion-switch dumps lists dump folders)"
        )
    try:
        kind = sniff_graph(args.graph)
    except OSError as exc:
        return _error(f"{args.graph}: cannot read: {exc.strerror or exc}")
    if kind.kind == "fusion_result":
        try:
            result = read_fusion_result(args.graph)
        except FusionResultError as exc:
            return _error(str(exc))
        _emit(list_fired(result), print_fired, args.fmt)
        return 0
    try:
        graph = load_graph(args.graph)
    except (GraphError, OSError) as exc:
        return _error(str(exc))
    path = Path(args.fusion_result) if args.fusion_result else find_fusion_result(args.graph)
    result = None
    if path is not None:
        try:
            result = read_fusion_result(path)
        except FusionResultError as exc:
            if args.fusion_result:  # asked for: an error
                return _error(f"--fusion-result: {exc}")
            # found next to the graph: the listing still works from the graph and catalogue
            print(
                f"fusion-switch passes: warning: fusion_result.json ignored: {exc}; sections "
                "come from the graph and the catalogue",
                file=sys.stderr,
            )
            path = None
    listing = list_passes(graph, result)
    listing["fusion_result"] = str(Path(path).resolve()) if path else None
    _emit(listing, print_passes, args.fmt)
    return 0
