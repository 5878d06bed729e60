"""Rebuild the sub-graph of original ops a fused op stands for, from the fusion-off graph.

A fused op of the fusion-on graph lists its original ops in ``_datadump_original_op_names``; its
outputs say which original tensor they stand for (``_datadump_origin_name`` /
``_datadump_origin_output_index`` on each output desc: a fused Conv may keep an original op's
name and still stand for ``BatchNorm:0``). The original ops' own edges come from the fusion-off
graph. Each fusion-on input is mapped to the original tensor it carries through its producer's
output desc (walking through GE-inserted TransData/Cast ops that carry no origin), so that it
can stand in for that tensor at the sub-graph's boundary.

Tensors are named ``"op:index"`` with fusion-off op names throughout.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..readers.graph_model import LOCAL_TYPES, NO_TASK_TYPES, ref_name

PASS_THROUGH_TYPES = frozenset({"TransData", "Cast", "TransDataRNN"})


def outputs_of(values: dict[str, Any], name: str) -> dict[str, Any]:
    """The entries of ``values`` (keyed ``op:index``) that are op ``name``'s outputs."""
    return {k: v for k, v in values.items() if ref_name(k)[0] == name}


@dataclass
class GraphIndex:
    """Ops of one graph by name, and original name -> op name (msaccucmp's merge map)."""

    ops: dict[str, Any]
    order: dict[str, int]
    origin_to_op: dict[str, str]

    @classmethod
    def of(cls, graph: Any) -> GraphIndex:
        """``graph.ops`` indexed; a partial view of a graph (:class:`.on_view.OnGraphView`)
        gives each op's position in the whole graph as ``positions``."""
        ops: dict[str, Any] = {}
        order: dict[str, int] = {}
        origin: dict[str, str] = {}
        listed = getattr(graph, "ops", []) or []
        positions = getattr(graph, "positions", None) or range(len(listed))
        for position, op in zip(positions, listed, strict=True):
            ops[op.name] = op
            order[op.name] = position
            for name in op.msaccucmp_original_names if op.has_original_names else [op.name]:
                if name:
                    origin.setdefault(name, op.name)
        return cls(ops, order, origin)

    def off_name(self, original: str) -> str | None:
        """The op of this graph that stands for original op ``original``."""
        if original in self.origin_to_op:
            return self.origin_to_op[original]
        return original if original in self.ops else None


@dataclass
class Subgraph:
    """What a replay of one fused op needs to know about its original ops."""

    fused: Any  # the fusion-on Op
    members: list[Any]  # fusion-off Ops to compute, execution order
    boundary: dict[str, int]  # original tensor -> fused op input index
    outputs: list[tuple[int, str]]  # (fused output index, original tensor it stands for)
    absent: list[str] = field(default_factory=list)  # original names the fusion-off graph lacks
    # per fused input: the fusion-on ops whose output dump may show what it read (its producer,
    # then through views GE runs without a task, never dumped, the op behind them)
    sources: dict[int, list[tuple[str, int]]] = field(default_factory=dict)

    @property
    def member_names(self) -> set[str]:
        return {m.name for m in self.members}


class NotReconstructible(Exception):
    """The fused op's original sub-graph cannot be rebuilt; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def origin_of_output(op: Any, index: int, off: GraphIndex) -> str | None:
    """The original (fusion-off) tensor output ``index`` of fusion-on ``op`` stands for."""
    descs = op.output_descs
    desc = descs[index] if index < len(descs) else None
    name = desc.origin_name if desc is not None else ""
    out_index = desc.origin_output_index if desc is not None else None
    if name:
        mapped = off.off_name(name)
        if mapped is None:
            return None
        return f"{mapped}:{index if out_index is None else out_index}"
    if not op.has_original_names:
        mapped = off.off_name(op.name)
        return f"{mapped}:{index}" if mapped else None
    originals = [n for n in op.original_names if n]
    if len(set(originals)) == 1:
        mapped = off.off_name(originals[0])
        return f"{mapped}:{index}" if mapped else None
    if not originals and op.type not in PASS_THROUGH_TYPES and op.name in off.ops:
        return f"{op.name}:{index}"  # a GE-inserted op (Aipp...) present in both graphs
    return None


def origin_of_input(ref: str, on: GraphIndex, off: GraphIndex) -> str | None:
    """The original tensor a fusion-on input reference ``"producer:idx"`` carries."""
    seen: set[str] = set()
    while ref and ref not in seen:
        seen.add(ref)
        src, idx = ref_name(ref)
        producer = on.ops.get(src)
        if producer is None:
            mapped = off.off_name(src)
            return f"{mapped}:{idx}" if mapped else None
        found = origin_of_output(producer, idx, off)
        if found is not None:
            return found
        if producer.type in PASS_THROUGH_TYPES and producer.data_inputs:
            ref = producer.data_inputs[0]
            continue
        return None
    return None


def is_fused(op: Any) -> bool:
    """A fusion-on op made by fusion (pass name, or standing for other original ops)."""
    return op.type not in NO_TASK_TYPES and bool(op.is_fused)


def fused_ops(on_graph: Any) -> list[Any]:
    return [op for op in getattr(on_graph, "ops", []) or [] if is_fused(op)]


def build_subgraph(fused: Any, on: GraphIndex, off: GraphIndex) -> Subgraph:
    """The original sub-graph of ``fused``; raises NotReconstructible with the reason."""
    names = list(dict.fromkeys(n for n in fused.original_names if n))
    if not names:
        names = [fused.name]
    members, absent = [], []
    for name in names:
        mapped = off.off_name(name)
        if mapped is None:
            absent.append(name)
            continue
        op = off.ops[mapped]
        if op.type in NO_TASK_TYPES:
            continue  # folded constants are parameters, read where they are consumed
        others = _stands_also_for(op)
        if others:  # its kernel computes its type's function, not all of what it stands for
            raise NotReconstructible(
                f"sub-graph not reconstructible: the fusion-off graph fused its original op "
                f"{name} too, into {op.name} (a {op.type} that stands also for "
                f"{', '.join(others[:4])}{_passes_of(op)}): that fusion was left on in the "
                "fusion-off run, so nothing there computed the original ops one by one "
                "(switch its rule off too for that run and dump again)"
            )
        if all(m.name != op.name for m in members):
            members.append(op)
    if not members:
        raise NotReconstructible(
            "sub-graph not reconstructible: none of its original ops "
            f"({', '.join(names[:4])}) is an op with a task in the fusion-off graph"
        )
    members.sort(key=lambda m: off.order.get(m.name, 0))
    boundary: dict[str, int] = {}
    for position, ref in enumerate(fused.data_inputs):
        origin = origin_of_input(ref, on, off)
        if origin is not None:
            boundary.setdefault(origin, position)
    outputs = []
    for k in range(max(1, len(fused.output_descs))):
        origin = origin_of_output(fused, k, off)
        if origin is None:
            raise NotReconstructible(
                f"sub-graph not reconstructible: output {k} names no original tensor "
                "(no _datadump_origin_name)"
            )
        outputs.append((k, origin))
    sources = {p: _sources(ref, on) for p, ref in enumerate(fused.data_inputs)}
    return Subgraph(fused, members, boundary, outputs, absent, sources)


def _stands_also_for(op: Any) -> list[str]:
    """The original ops other than itself a fusion-off op stands for (a fusion that run kept
    on): ``_datadump_original_op_names`` naming more than the op."""
    names = [n for n in getattr(op, "original_names", None) or () if n]
    return list(dict.fromkeys(n for n in names if n != op.name)) if names else []


def _passes_of(op: Any) -> str:
    """``", by RULE, ..."`` for an op carrying pass names (empty otherwise)."""
    names = getattr(op, "pass_names", None) or []
    return f", by {', '.join(names)}" if names else ""


def _sources(ref: str, on: GraphIndex) -> list[tuple[str, int]]:
    """``ref``'s producer, then, while that is a view (:data:`LOCAL_TYPES`), the op behind it."""
    found = [ref_name(ref)]
    while (op := on.ops.get(found[-1][0])) is not None and op.type in LOCAL_TYPES:
        if not op.data_inputs or len(found) > 16:
            break
        found.append(ref_name(op.data_inputs[0]))
    return found


def producers(members: Iterable[Any]) -> set[str]:
    return {m.name for m in members}
