"""Which pass of a multi-pass fused op introduced its error: localisation by replay variants.

A fused op is often built by several passes (a graph pass folds Conv+BatchNorm, then a UB pass
adds the Relu tail). Naming every pass when one is guilty turns an innocent rule off. So for a
flagged op (never on innocent ones: there the variants tie at the noise floor), each original
op's step is altered in turn - skipped (its output taken as its first input), an attribute set
to another legal value, the fp16 range applied - and the op whose variant explains the real
output (score within the tolerance) is the one that went wrong. It is mapped to the pass that
absorbed it: an elementwise or activation tail belongs to the UB pass (``pass_name_ub``), the
rest (BatchNorm/scale/bias folding, the main op) to the graph passes. When the evidence cannot
decide - no variant explains the output, or the explaining ops belong to different passes -
the verdict is "undecided between A and B": neither is counted as proven, and bisection
(re-running with one rule switched off) is the way to split them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .evidence import MissingEvidence
from .noise import FP16_MAX, coarser, score
from .replay_kernels import Unverifiable, out_dtype
from .subgraph import ref_name

TAIL_TYPES = frozenset(
    {
        "Relu", "Relu6", "LeakyRelu", "Sigmoid", "Tanh", "Gelu", "FastGelu", "Swish", "Elu",
        "Add", "Sub", "Mul", "RealDiv", "Eltwise", "Maximum", "Minimum", "Cast", "Muls", "Adds",
        "PRelu", "HardSwish", "Mish",
    }
)  # fmt: skip
ALTERNATIVE_TYPES = {"Gelu": "FastGelu", "FastGelu": "Gelu", "Relu": "Relu6", "Relu6": "Relu"}
EPSILONS = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 0.0)
MAX_VARIANTS_PER_OP = 32


def owners(members: list[Any], graph_rules: list[str], ub_rule: str | None) -> dict[str, tuple]:
    """Member name -> the rules that absorbed it (a tuple: several graph passes share ops)."""
    names = [m.name for m in members]
    if ub_rule and graph_rules:
        tail: list[str] = []
        for m in reversed(members[1:]):
            if m.type not in TAIL_TYPES:
                break
            tail.append(m.name)
        return {n: (ub_rule,) if n in tail else tuple(graph_rules) for n in names}
    if ub_rule:
        return {n: (ub_rule,) for n in names}
    return {n: tuple(graph_rules) for n in names}


def _variants(member: Any) -> Iterator[tuple[str, Callable | None, tuple | None]]:
    """(description, output change, attribute change) for one original op: an output change
    maps (inputs, outputs) to new outputs (None: not applicable); an attribute change is a
    (key, value) pair the op is replayed with."""

    def skip(inputs, outputs):
        first = inputs[0] if inputs else None
        if first is None or first.size != outputs[0].size:
            return None
        return [np.asarray(first, dtype=np.float64).reshape(outputs[0].shape), *outputs[1:]]

    def fp16_range(inputs, outputs):
        return [np.clip(o, -FP16_MAX, FP16_MAX) for o in outputs]

    yield "skipped (output = its first input)", skip, None
    yield "fp16 range applied to its output", fp16_range, None
    if member.type in ALTERNATIVE_TYPES:
        other = ALTERNATIVE_TYPES[member.type]
        yield f"computed as {other}", None, ("type", other)
    attrs = member.attrs or {}
    if isinstance(attrs.get("epsilon"), float):
        for eps in EPSILONS:
            if abs(eps - attrs["epsilon"]) > 1e-12:
                yield f"epsilon {eps:g}", None, ("epsilon", eps)
    rank = (len(member.input_descs[0].shape) if member.input_descs else 0) or 4
    for key in ("axes", "axis", "split_dim"):
        value = attrs.get(key)
        if isinstance(value, list) and len(value) == 1 and isinstance(value[0], int):
            for axis in range(rank):
                if axis != value[0] % rank:
                    yield f"{key} [{axis}]", None, (key, [axis])
        elif isinstance(value, int) and not isinstance(value, bool):
            for axis in range(rank):
                if axis != value % rank:
                    yield f"{key} {axis}", None, (key, axis)
    perm = attrs.get("perm")
    if isinstance(perm, list) and 1 < len(perm) <= 5:
        for other in itertools.islice(itertools.permutations(range(len(perm))), 130):
            if list(other) != perm:
                yield f"perm {list(other)}", None, ("perm", list(other))


def localise(replayer: Any, sub: Any, result: Any) -> dict | None:
    """Name the pass whose original op explains the flagged op's output, or say undecided."""
    fused = sub.fused
    ub_rule = fused.attr("pass_name_ub") if hasattr(fused, "attr") else None
    ub_rule = ub_rule if isinstance(ub_rule, str) and ub_rule else None
    graph_rules = [r for r in result.rules if r != ub_rule and r not in _single_op_ub(fused)]
    if not graph_rules and not ub_rule:
        graph_rules = list(result.rules)
    owned = owners(sub.members, graph_rules, ub_rule)
    candidates = list(dict.fromkeys(r for rules in owned.values() for r in rules))
    if len(candidates) <= 1:
        return {"guilty": candidates, "method": "one pass built every original op"}
    try:
        plan, _ = replayer.gather(sub)
        base_values = replayer.evaluate(sub, plan)
    except (Unverifiable, MissingEvidence):  # read once already: cannot fail differently
        return {"undecided": candidates, "method": "variants could not be replayed"}
    explained: list[tuple[str, str, float]] = []
    base = result.score or 0.0
    for member in sub.members:
        best: tuple[float, str] | None = None
        own: tuple | BaseException | None = None  # its run in the unchanged replay
        for number, (label, change, attr) in enumerate(_variants(member)):
            if number >= MAX_VARIANTS_PER_OP:
                break
            if own is None:
                own = _own_run(replayer, sub, (plan, base_values), member)
            variant_score = _try(replayer, sub, (plan, base_values), member, change, attr, own)
            if variant_score is not None and (best is None or variant_score < best[0]):
                best = (variant_score, label)
        if best is not None and best[0] <= result.tolerance:
            explained.append((member.name, best[1], best[0]))
    guilty = list(dict.fromkeys(r for name, _, _ in explained for r in owned[name]))
    detail = [
        {"original_op": name, "variant": label, "score": float(f"{s:.4g}")}
        for name, label, s in explained
    ]
    if len(guilty) == 1:
        return {
            "guilty": guilty,
            "innocent": [r for r in candidates if r not in guilty],
            "explained_by": detail,
            "method": "replay variants",
            "score_before": float(f"{base:.4g}"),
        }
    return {
        "undecided": guilty or candidates,
        "explained_by": detail,
        "method": "replay variants",
        "hint": "undecided: bisect (switch one of these rules off and re-run) to split them",
    }


def _single_op_ub(fused: Any) -> set[str]:
    value = fused.attr("_single_op_ub_pass_name") if hasattr(fused, "attr") else None
    if isinstance(value, list):
        return {str(v) for v in value}
    return {value} if isinstance(value, str) and value else set()


_INAPPLICABLE = (Unverifiable, MissingEvidence, ValueError, TypeError, IndexError, ArithmeticError)


def _own_run(replayer: Any, sub: Any, planned: tuple, target: Any) -> tuple | BaseException:
    """(inputs, outputs) of ``target``'s kernel in the unchanged replay, or what the run
    raised. Run once for all of its variants: each ran it again (issue 16: a Conv2D on a
    real network's activation takes a tenth of a second), and an attribute variant ran it
    besides its own run."""
    plan, base_values = planned
    try:
        return replayer.rerun(sub, plan, (base_values, target))
    except _INAPPLICABLE as error:
        return error


def _same_bits(changed: list, outputs: list) -> bool:
    """Whether ``changed`` holds the very bits of ``outputs`` (compared a block at a time:
    no temporary of an activation's size)."""
    if len(changed) != len(outputs):
        return False
    for a, b in zip(changed, outputs, strict=True):
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a is b:
            continue
        if a.dtype.itemsize not in (1, 2, 4, 8) or not (
            a.flags.c_contiguous and b.flags.c_contiguous
        ):
            return False  # not proven the same: the variant runs
        unsigned = np.dtype(f"u{a.dtype.itemsize}")
        x, y = a.reshape(-1).view(unsigned), b.reshape(-1).view(unsigned)
        for start in range(0, x.size, _BLOCK):
            if not np.array_equal(x[start : start + _BLOCK], y[start : start + _BLOCK]):
                return False
    return True


_BLOCK = 1 << 16


def _worst(replayer: Any, sub: Any, values: dict) -> float | None:
    """The worst score of the fused outputs replayed as ``values`` (None: one is missing or
    has another size)."""
    worst = 0.0
    for k, origin in sub.outputs:
        real = replayer.real_output(sub, k)
        replay = values.get(origin)
        if replay is None or replay.size != real.size:
            return None
        worst = max(worst, score(real, replay, _dtype(replayer, sub, k, origin)))
    return worst


def _try(replayer: Any, sub: Any, planned: tuple, target: Any, change, attr, own) -> float | None:
    """The replay score with one change applied to ``target``: to its outputs (``change``) or
    to an attribute it is run with (``attr``). None: not applicable (shape change, kernel
    refusal), or no bit of ``target``'s outputs changed: the unchanged replay is the flagged
    score, above the tolerance, so such a variant explains nothing. ``own``: ``target``'s run
    in the unchanged replay (:func:`_own_run`) that every variant starts from."""
    if isinstance(own, BaseException):
        return None  # the kernel refused its inputs: each variant's run would raise it again
    inputs, outputs = own
    plan, base_values = planned
    try:
        if attr is not None:
            changed = replayer.kernels.run(_altered(target, attr), inputs)
        else:
            changed = change(inputs, outputs)
        if changed is None or _same_bits(changed, outputs):
            return None
        values = replayer.evaluate(
            sub, plan, reuse=(base_values, target), outputs_only=True, replaced=changed
        )
        return _worst(replayer, sub, values)
    except _INAPPLICABLE:
        return None


def _altered(target: Any, attr: tuple) -> Any:
    if attr[0] == "type":
        return _WithAttrs(target, target.attrs, attr[1])
    return _WithAttrs(target, {**(target.attrs or {}), attr[0]: attr[1]})


def _dtype(replayer: Any, sub: Any, k: int, origin: str) -> str:
    name, index = ref_name(origin)
    return coarser(out_dtype(replayer.off.ops[name], index), out_dtype(sub.fused, k))


class _WithAttrs:
    """An op seen with other attribute values (everything else delegated)."""

    def __init__(self, op: Any, attrs: dict, op_type: str | None = None) -> None:
        self._op = op
        self.attrs = attrs
        self.type = op_type or op.type

    def __getattr__(self, name: str) -> Any:
        return getattr(self._op, name)
