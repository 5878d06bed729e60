"""The fused ops of a GE graph, in every graph of the model (sub-graphs included).

An op is fused when ``_datadump_original_op_names`` lists two or more distinct names (the ops it
replaced), or when it carries a pass name: ``pass_name`` (graph fusion), ``pass_name_ub`` (UB
fusion) or ``_single_op_ub_pass_name`` (UB fusion of one op). Many real graphs record only the
original names (FE's graph-fusion dumps of ResNet-50: 53 Conv+BN+Scale ops, no pass name); such
an op has no known rule. ``_datadump_is_multiop`` marks an op GE built from others; with a single
original name it is an op derived from one op (a quantisation helper, say), not a fusion of
several, and is counted apart (:func:`derived_ops`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from .graph import PASS_NAME, PASS_NAME_UB, SINGLE_OP_UB_PASS_NAME, Graph, Op, _string_list

IS_MULTIOP = "_datadump_is_multiop"


@dataclass(frozen=True)
class FusedOp:
    """One fused op. ``label`` is the op name, prefixed by its graph (``graph/op``) when the same
    name occurs in more than one graph of the model."""

    op: str
    label: str
    type: str
    graph: str
    original_names: tuple[str, ...]
    pass_name: tuple[str, ...]
    pass_name_ub: tuple[str, ...]
    single_op_ub_pass_name: tuple[str, ...]
    multiop: bool

    @property
    def rules(self) -> list[str]:
        """Every pass named on the op, most recent first (UB passes run after graph passes)."""
        names = [*self.pass_name, *self.pass_name_ub, *self.single_op_ub_pass_name]
        return list(dict.fromkeys(reversed([n for n in names if n])))

    @property
    def ub_rules(self) -> list[str]:
        return list(dict.fromkeys(n for n in (*self.pass_name_ub, *self.single_op_ub_pass_name)))

    @property
    def has_pass_name(self) -> bool:
        return bool(self.rules)


@dataclass(frozen=True)
class SubgraphRef:
    """An op (PartitionedCall, If, While, ...) that calls a sub-graph by name."""

    op: str
    type: str
    graph: str
    subgraph: str
    in_file: bool


def _names(op: Op, key: str) -> tuple[str, ...]:
    return tuple(n for n in _string_list(op.attr(key)) if n)


def is_fused_op(op: Op) -> bool:
    if len(set(n for n in op.original_names if n)) >= 2:
        return True
    return any(_names(op, key) for key in (PASS_NAME, PASS_NAME_UB, SINGLE_OP_UB_PASS_NAME))


def _repeated_names(graph: Graph) -> set[str]:
    counts = Counter(op.name for g in graph.all_graphs for op in g.ops)
    return {name for name, n in counts.items() if n > 1}


def fused_ops(graph: Graph) -> list[FusedOp]:
    """Every fused op of every graph of the model, in file order."""
    repeated = _repeated_names(graph)
    out = []
    for g in graph.all_graphs:
        for op in g.ops:
            if not is_fused_op(op):
                continue
            out.append(
                FusedOp(
                    op=op.name,
                    label=f"{g.name}/{op.name}" if op.name in repeated else op.name,
                    type=op.type,
                    graph=g.name,
                    original_names=tuple(dict.fromkeys(n for n in op.original_names if n)),
                    pass_name=_names(op, PASS_NAME),
                    pass_name_ub=_names(op, PASS_NAME_UB),
                    single_op_ub_pass_name=_names(op, SINGLE_OP_UB_PASS_NAME),
                    multiop=op.attr(IS_MULTIOP) is True,
                )
            )
    return out


def derived_ops(graph: Graph) -> list[str]:
    """Ops marked ``_datadump_is_multiop`` that stand for a single original op (not fused)."""
    return [
        op.name
        for g in graph.all_graphs
        for op in g.ops
        if op.attr(IS_MULTIOP) is True and not is_fused_op(op)
    ]


def subgraph_refs(graph: Graph) -> list[SubgraphRef]:
    """Which op calls which sub-graph, and whether that sub-graph is in the file."""
    present = {g.name for g in graph.all_graphs}
    return [
        SubgraphRef(op.name, op.type, g.name, sub, sub in present)
        for g in graph.all_graphs
        for op in g.ops
        for sub in op.subgraph_names
    ]
