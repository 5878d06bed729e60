"""Coverage: every op type among the original ops of the fused ops in the real sample graphs
(``_datadump_original_op_names`` with >= 2 names; an original's type from the graph, the fused
op's own type where the original is not in it) and every type the generator emits has a
kernel or is listed in ``KNOWN_GAPS`` with its reason."""

from __future__ import annotations

from collections import Counter

from fusion_switch.diagnose.kernels import KNOWN_GAPS, known_types
from fusion_switch.readers.graph import Graph, load_graph
from fusion_switch.synth.generator import generate_case
from kernel_check import GRAPH_FILES, real_graphs

NO_TASK = {"Data", "Const", "NetOutput"}  # the generator's inputs, weights, graph end: no task


def fused_original_types(graph: Graph) -> Counter[str]:
    """Per op type: how many fused ops of the graph stand (partly) for an op of that type."""
    by_name = {op.name: op for g in graph.all_graphs for op in g.ops}
    counts: Counter[str] = Counter()
    for op in by_name.values():
        names = [n for n in op.original_names if n]
        if len(names) < 2:
            continue
        types = {by_name[n].type for n in names if n in by_name and n != op.name}
        if any(n not in by_name for n in names) or not types:
            types.add(op.type)
        counts.update(types)
    return counts


def real_counts() -> Counter[str]:
    total: Counter[str] = Counter()
    for _path, graph in real_graphs():
        total += fused_original_types(graph)
    return total


def test_real_fused_op_types_are_covered_or_known_gaps():
    counts = real_counts()
    assert counts, "no fused op found in the real graphs"
    uncovered = {t: n for t, n in counts.items() if t not in known_types() and t not in KNOWN_GAPS}
    gaps = {t: n for t, n in counts.items() if t in KNOWN_GAPS}
    print("real fused-op types:", dict(counts.most_common()))
    print("known gaps:", {t: f"{n}x: {KNOWN_GAPS[t]}" for t, n in gaps.items()})
    assert uncovered == {}
    for t, n in gaps.items():  # each gap states how often it occurs
        assert KNOWN_GAPS[t].startswith(f"{n} fused op"), (t, n)
    covered = sum(n for t, n in counts.items() if t in known_types())
    print(f"covered {covered} of {sum(counts.values())} (fused op, type) pairs")


def test_generator_types_are_covered_or_known_gaps(tmp_path):
    case = generate_case(tmp_path / "case", n_ops=35, faults=[], formats="device")
    types: Counter[str] = Counter()
    for path in (case.off_graph, case.on_graph):
        types.update(op.type for op in load_graph(path).ops if op.type not in NO_TASK)
    uncovered = sorted(t for t in types if t not in known_types() and t not in KNOWN_GAPS)
    print("generator types:", dict(types))
    assert "TransData" in types and "LayerNorm" in types  # both sides were read
    assert uncovered == []


def test_known_gaps_are_really_gaps():
    assert sorted(set(KNOWN_GAPS) & known_types()) == []
    assert all(reason.strip() for reason in KNOWN_GAPS.values())


def test_the_real_graphs_are_read_not_skipped():
    """The coverage and attribute tests above iterate these files: none may be missing."""
    names = {path.name for path in GRAPH_FILES}
    assert "ge_proto_00000062_Build.txt" in names
    assert "msit_tdnn_test.om.json" in names
    assert len(real_graphs()) >= 8
