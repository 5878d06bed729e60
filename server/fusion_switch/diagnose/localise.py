"""Which pass of a multi-pass fused op introduced its error: localisation by replay variants.

A fused op is often built by several passes (a graph pass folds Conv+BatchNorm, then a UB pass
adds the Relu tail). Naming every pass when one is guilty turns an innocent rule off. So for a
flagged op (never on innocent ones: there the variants tie at the noise floor), each original
op's step is altered in turn - skipped (its output taken as its first input), an attribute set
to another legal value, the fp16 range applied - and the op whose variant explains the real
output (score within the tolerance, and a tenth of the replay's or less) is the one that went
wrong. It is mapped to the passes that may have absorbed it (:func:`owners`): an activation
tail belongs to the UB pass (``pass_name_ub``), an arithmetic tail op to it and to any graph
pass that may have folded it, the rest (BatchNorm/scale/bias folding, the main op) to the
graph passes; a single-op UB compile or a second UB pass shares every op. When the evidence
cannot decide - no variant explains the output, or the explaining op may be more than one
pass's - the verdict is "undecided between A and B": neither is counted as proven, and
bisection (re-running with one rule switched off) is the way to split them.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .evidence import MissingEvidence
from .json_numbers import json_number
from .noise import FP16_MAX, coarser, round_to, score
from .replay_kernels import Unverifiable, out_dtype
from .replay_noise import output_channels
from .rules import rule_patterns, ub_section_rules
from .subgraph import outputs_of, ref_name

TAIL_TYPES = frozenset(
    {
        "Relu", "Relu6", "LeakyRelu", "Sigmoid", "Tanh", "Gelu", "FastGelu", "Swish", "Elu",
        "Add", "Sub", "Mul", "RealDiv", "Eltwise", "Maximum", "Minimum", "Cast", "Muls", "Adds",
        "PRelu", "HardSwish", "Mish", "AddV2", "AddN", "Div", "Square", "Sqrt", "Rsqrt", "Exp",
        "ClipByValue", "AscendQuant", "AscendDequant",
    }
)  # fmt: skip
# what graph passes fold into the main op (a bias, a scale, arithmetic on its output): a graph
# rule whose catalogue pattern is unknown may have absorbed these; an activation it is not taken
# to have absorbed unless its pattern names it (activations are fused by the UB passes)
FOLDED_TYPES = frozenset(
    {
        "Add", "AddV2", "AddN", "Sub", "Mul", "Muls", "Adds", "RealDiv", "Div", "BiasAdd",
        "Maximum", "Minimum", "Eltwise", "Cast", "ClipByValue", "AscendQuant", "AscendDequant",
    }
)  # fmt: skip
ALTERNATIVE_TYPES = {"Gelu": "FastGelu", "FastGelu": "Gelu", "Relu": "Relu6", "Relu6": "Relu"}
EPSILONS = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 0.0)
MAX_VARIANTS_PER_OP = 32
MAX_SKIPPED_INPUTS = 3
SKIPPED_FIRST, SKIPPED_INPUT = "skipped (output = its first input)", "skipped (output = its input "
EXPLAINED_DROP = 10.0  # a variant explains the output at a tenth of the replay's score or less
AXIS_KEYS = ("axes", "axis", "split_dim")
TRANSPOSE_TYPES = frozenset({"Transpose", "TransposeD", "ConfusionTransposeD"})
# ops whose output is certainly no multiple of their input when that input is scaled (or that
# add what the scale did not touch): a scale of an op before them does not reach the output.
# Only those: a type left out counts as keeping the multiple, which can only leave more passes
# undecided (a second review: a float Cast counted here let the epsilon variant prove again)
SCALE_BREAKING = frozenset(
    {
        "Sigmoid", "Tanh", "Gelu", "FastGelu", "FastGeluV2", "Swish", "Elu", "Relu6", "Mish",
        "HardSwish", "HardSigmoid", "Softplus", "Erf", "Exp", "Log", "SoftmaxV2", "Softmax",
        "LogSoftmaxV2", "LogSoftmax", "ClipByValue", "Adds", "LayerNorm", "LayerNormV3", "Sin",
        "Cos", "BiasAdd",
    }
)  # fmt: skip
ADDITIVE = frozenset({"Add", "AddV2", "AddN", "Sub", "Eltwise", "ConcatV2", "ConcatD", "Concat"})


def owners(
    members: list[Any],
    graph_rules: list[str],
    ub_rule: str | None,
    patterns: Callable[[str], frozenset[str] | None] = lambda rule: None,
) -> dict[str, tuple]:
    """Member name -> the rules that may have absorbed it (several: the evidence cannot tell
    them apart). A UB pass owns the elementwise or activation tail, a graph pass the rest;
    a tail op is the UB pass's alone only where no graph pass could have absorbed it: each
    graph rule's catalogue pattern (``patterns(rule)``) leaves its type out, or, where the
    pattern is unknown, it is an activation, not arithmetic a graph pass folds
    (:data:`FOLDED_TYPES`) (a review: a Mul AConv2dMulFusion folded, dropped, was blamed on the
    UB pass of the Relu; so was a bias Add MatMulBiasAddFusionPass folded).
    A UB pass given no op of the tail (it absorbed a type not in :data:`TAIL_TYPES`: a residual
    AddV2, a quantisation) shares every op."""
    names = [m.name for m in members]
    if ub_rule and graph_rules:
        tail: list[str] = []
        for m in reversed(members[1:]):
            if m.type not in TAIL_TYPES:
                break
            tail.append(m.name)
        if not tail:
            return {n: (*graph_rules, ub_rule) for n in names}
        types = {m.name: m.type for m in members}
        owned = {}
        for n in names:
            if n not in tail:
                owned[n] = tuple(graph_rules)
                continue
            could = [
                r
                for r in graph_rules
                if ((p := patterns(r)) is None and types[n] in FOLDED_TYPES)
                or (p is not None and types[n] in p)
            ]
            owned[n] = (*could, ub_rule)
        return owned
    if ub_rule:
        return {n: (ub_rule,) for n in names}
    return {n: tuple(graph_rules) for n in names}


def _variants(member: Any) -> Iterator[tuple[str, Callable | None, tuple | None]]:
    """(description, output change, attribute change) for one original op: an output change
    maps (inputs, outputs) to new outputs (None: not applicable); an attribute change is a
    (key, value) pair the op is replayed with."""

    def skip(k):  # a binary op left out passes either input through (a review: a gate Mul)
        def change(inputs, outputs):
            kept = inputs[k] if len(inputs) > k else None
            if kept is None or kept.size != outputs[0].size:
                return None
            return [np.asarray(kept, dtype=np.float64).reshape(outputs[0].shape), *outputs[1:]]

        return change

    def fp16_range(inputs, outputs):
        return [_clipped(o, FP16_MAX) for o in outputs]

    yield SKIPPED_FIRST, skip(0), None
    for k in range(1, min(len(member.data_inputs), MAX_SKIPPED_INPUTS)):
        yield f"{SKIPPED_INPUT}{k})", skip(k), None
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


def _clipped(values: np.ndarray, bound: float) -> np.ndarray:
    """``np.clip(values, -bound, bound)``; ``values`` itself when no value is beyond the
    bound (most activations: then nothing of an activation's size is allocated)."""
    if values.size == 0:
        return values
    high, low = np.fmax.reduce(values, axis=None), np.fmin.reduce(values, axis=None)
    if np.isnan(high) or (high <= bound and low >= -bound):  # NaN stays NaN in a clip
        return values
    return np.clip(values, -bound, bound)


def localise(
    replayer: Any,
    sub: Any,
    result: Any,
    between: Callable[[], None] | None = None,
    *,
    ub_rules: frozenset[str] = frozenset(),
) -> dict | None:
    """Name the pass whose original op explains the flagged op's output, or say undecided.
    ``between``: called after each variant is scored (the replay's child answers the waiting
    parent there, issue 16). ``ub_rules``: the rules fusion_result.json puts in UBFusion, for
    a fused op that names its UB pass in ``pass_name`` only (as real graphs do)."""
    fused = sub.fused
    ub_rule = fused.attr("pass_name_ub") if hasattr(fused, "attr") else None
    ub_rule = ub_rule if isinstance(ub_rule, str) and ub_rule else None
    in_ub = [r for r in result.rules if r in ub_rules or r in ub_section_rules()]
    if ub_rule is None:
        ub_rule = in_ub[0] if len(in_ub) == 1 else None
    single = _single_op_ub(fused)
    graph_rules = [r for r in result.rules if r != ub_rule and r not in single]
    if not graph_rules and not ub_rule:
        graph_rules = list(result.rules)
    owned = owners(sub.members, graph_rules, ub_rule, rule_patterns().get)
    shared = single | (set(in_ub) - {ub_rule} if ub_rule else set())
    if shared:  # a single-op UB compile, or a second UB pass: any op may be theirs (a review)
        owned = {n: tuple(dict.fromkeys((*rules, *sorted(shared)))) for n, rules in owned.items()}
    candidates = list(dict.fromkeys(r for rules in owned.values() for r in rules))
    if len(candidates) <= 1:
        return {"guilty": candidates, "method": "one pass built every original op"}
    try:
        plan, _ = replayer.gather(sub)
        base_values = replayer.evaluate(sub, plan)
    except (Unverifiable, MissingEvidence):  # read once already: cannot fail differently
        return {"undecided": candidates, "method": "variants could not be replayed"}
    undecided, scaled_by = _uninformative(replayer, sub, base_values, result.tolerance, owned)
    if undecided is not None:
        return undecided
    explained: list[tuple[str, str, float]] = []
    base = result.score or 0.0
    drop = base > result.tolerance  # always so for a flagged op (see _scores)
    # explained: within the tolerance and far below where the replay stood, not nudged under
    # it (a review: a BatchNorm's epsilon variant moved a score of 1.3 to 0.8 and named its
    # pass, where the other pass's constant was off by 1.3e-5), and in every channel
    limit = (min(result.tolerance, base / EXPLAINED_DROP), result.channel_tolerance)
    for member in sub.members:
        best: tuple[float, str] | None = None
        variants = list(itertools.islice(_variants(member), MAX_VARIANTS_PER_OP))
        scores = _scores(replayer, sub, (plan, base_values), member, variants, drop, limit)
        for (label, _, _), variant_score in zip(variants, scores, strict=True):
            if variant_score is not None and (best is None or variant_score < best[0]):
                best = (variant_score, label)
            if between is not None:
                between()
        if best is not None and best[0] <= limit[0]:
            explained.append((member.name, best[1], best[0]))
    guilty = list(dict.fromkeys(r for name, _, _ in explained for r in owned[name]))
    if explained:  # a wrong constant of the ops that scale the output fits it as well
        guilty += [r for r in scaled_by if r not in guilty]
    for name in _alike(sub, explained):  # ops whose fault gives the same bits
        guilty += [r for r in owned[name] if r not in guilty]
    detail = [
        {"original_op": name, "variant": label, "score": json_number(s, 4)}
        for name, label, s in explained
    ]
    if len(guilty) == 1:
        return {
            "guilty": guilty,
            "innocent": [r for r in candidates if r not in guilty],
            "explained_by": detail,
            "method": "replay variants",
            "score_before": json_number(base, 4),
        }
    return {
        "undecided": guilty or candidates,
        "explained_by": detail,
        "method": "replay variants",
        "hint": "undecided: bisect (switch one of these rules off and re-run) to split them",
    }


def _alike(sub: Any, explained: list[tuple[str, str, float]]) -> list[str]:
    """The original ops whose own fault gives the same bits as an explaining variant:
    - after a Transpose skipped or permuted, every op after it (one writing its tile in the
      other order gives that on a square tensor);
    - beside a binary op skipped to input k, the ops inside that made its other inputs (a
      second review: a BatchNorm that wrote zeros, the identity of an Add, gave the Add's
      output = its other input bit for bit, and proved the UB pass of the Add)."""
    names = [m.name for m in sub.members]
    found: list[str] = []
    for name, label, _ in explained:
        member = sub.members[names.index(name)]
        kept = _skipped_input(label)
        if label.startswith("perm") or (kept is not None and member.type in TRANSPOSE_TYPES):
            found += names[names.index(name) + 1 :]
        if kept is not None:
            others = [ref for k, ref in enumerate(member.data_inputs) if k != kept]
            found += [ref_name(ref)[0] for ref in others if ref_name(ref)[0] in names]
    return list(dict.fromkeys(found))


def _skipped_input(label: str) -> int | None:
    """The input a skip variant passes through (None: not a skip)."""
    if label == SKIPPED_FIRST:
        return 0
    if label.startswith(SKIPPED_INPUT):
        return int(label[len(SKIPPED_INPUT) :].rstrip(")"))
    return None


def _uninformative(
    replayer: Any, sub: Any, base_values: dict, tolerance: float, owned: dict[str, tuple]
) -> tuple[dict | None, list[str]]:
    """Undecided, before any variant, when the output cannot tell the passes apart (a review,
    forty-first round; each gave the innocent graph pass "proven"):
    - every output holds one value: anything that makes the op constant explains it;
    - every output is its replay times some number: a wrong constant in any op whose scale
      reaches the output gives that (an epsilon variant, a near-uniform scale of each channel,
      "explained" a UB tail's constant 4.6% low), so the owners of all those ops share it;
      where they are one pass's, it is returned to stand beside the variants (second item)."""
    outputs = []
    for k, origin in sub.outputs:
        real, replay = replayer.real_output(sub, k), base_values.get(origin)
        if replay is None or replay.size != real.size:
            return None, []
        outputs.append((k, origin, real.reshape(-1), np.asarray(replay).reshape(-1)))
    if all(real.size and real.min() == real.max() for _, _, real, _ in outputs):
        return {
            "undecided": list(dict.fromkeys(r for rules in owned.values() for r in rules)),
            "method": "the output holds one value: any op made constant gives it",
            "hint": "undecided: bisect (switch one of these rules off and re-run) to split them",
        }, []
    dtypes = [_dtype(replayer, sub, k, origin) for k, origin, _, _ in outputs]
    if all(score(o[2], o[3], d) <= tolerance for o, d in zip(outputs, dtypes, strict=True)):
        return None, []  # the replay fits as it is: no scale to speak of
    factors = []
    for (_, _, real, replay), dtype in zip(outputs, dtypes, strict=True):
        with np.errstate(all="ignore"):
            norm = float(np.dot(replay, replay))
            factor = float(np.dot(real, replay)) / norm if norm > 0 else float("nan")
        if not np.isfinite(factor) or score(real, replay * factor, dtype) > tolerance:
            return None, []
        factors.append(factor)
    scaling = _scaling_members(sub)
    rules = list(dict.fromkeys(r for n in scaling for r in owned[n]))
    if len(rules) <= 1:
        return None, rules  # one pass's ops alone can scale the output: beside the variants
    shown = ", ".join(f"{f:.4g}" for f in factors)
    return {
        "undecided": rules,
        "method": f"the output is its replay times {shown}: a wrong constant in any op whose "
        f"scale reaches the output gives that ({', '.join(scaling)})",
        "hint": "undecided: bisect (switch one of these rules off and re-run) to split them",
    }, []


def _scaling_members(sub: Any) -> list[str]:
    """The original ops whose output, multiplied by a number, multiplies the fused outputs:
    every op after them on the way to an output keeps a multiple a multiple (Relu, Mul,
    Transpose, a pooling ...: any type not in :data:`SCALE_BREAKING`; an addition only of
    operands all scaled)."""
    produced = {m.name for m in sub.members}
    outputs = {ref_name(origin)[0] for _, origin in sub.outputs}
    found = []
    for start, member in enumerate(sub.members):
        state = {member.name: True}  # name -> scaled (True) or broken (False)
        for later in sub.members[start + 1 :]:
            sources = [ref_name(ref)[0] for ref in later.data_inputs]
            touched = [state[n] for n in sources if n in state]
            if not touched:
                continue
            untouched = len(touched) < len(sources)
            broken = (
                not all(touched)
                or later.type in SCALE_BREAKING
                or (later.type in ADDITIVE and untouched)
            )
            state[later.name] = not broken
        if all(state.get(n, True) for n in outputs if n in produced):
            found.append(member.name)
    return found


def _single_op_ub(fused: Any) -> set[str]:
    value = fused.attr("_single_op_ub_pass_name") if hasattr(fused, "attr") else None
    if isinstance(value, list):
        return {str(v) for v in value}
    return {value} if isinstance(value, str) and value else set()


# MemoryError: numpy raises it before it allocates, when a variant makes a later op broadcast
# to a size no machine holds (a perm variant before an elementwise op)
_INAPPLICABLE = (
    Unverifiable,
    MissingEvidence,
    ValueError,
    TypeError,
    IndexError,
    ArithmeticError,
    MemoryError,
)


def _guarded(call: Callable, *args: Any) -> Any:
    """``call(*args)``, or the error it raised that makes a variant inapplicable."""
    try:
        return call(*args)
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


def _worst(replayer: Any, sub: Any, values: dict, limit: tuple | None = None) -> float | None:
    """The worst score of the fused outputs replayed as ``values`` (None: one is missing or
    has another size). ``limit``: (score, channel tolerance): a score within the first that
    a channel of an output contradicts beyond the second counts as infinite (a review: an
    epsilon variant 9x off in a channel ~0.1% of the tensor's largest value explained it)."""
    worst = 0.0
    for k, origin in sub.outputs:
        real = replayer.real_output(sub, k)
        replay = values.get(origin)
        if replay is None or replay.size != real.size:
            return None
        worst = max(worst, score(real, replay, _dtype(replayer, sub, k, origin)))
    if limit is not None and limit[1] is not None and worst <= limit[0]:
        for k, origin in sub.outputs:
            real, replay = replayer.real_output(sub, k), values[origin]
            name, index = ref_name(origin)
            dtype = _dtype(replayer, sub, k, origin)
            producer, shaped = replayer.off.ops[name], replay.reshape(real.shape)
            channels = output_channels(sub.fused, k, producer, index, real, shaped, dtype)
            if channels is not None and float(channels.max(initial=0.0)) > limit[1]:
                return float("inf")
    return worst


def _scores(
    replayer: Any,
    sub: Any,
    planned: tuple,
    target: Any,
    variants: list[tuple],
    drop: bool,
    limit: tuple | None = None,
) -> Iterator[float | None]:
    """The worst score of each of ``target``'s variants, in order (None: not applicable, or,
    with ``drop``, it changes nothing). Output changes share one run of ``target``'s kernel;
    attribute changes run the altered kernel alone, one variant at a time.

    ``drop``: the unchanged replay's score is above the tolerance (a flagged op), so a
    variant that changes no bit of ``target``'s rounded outputs explains nothing and what
    follows it is not replayed. Without it every variant is replayed, as it always was."""
    plan, base_values = planned
    inputs = _guarded(replayer.inputs_of, sub, plan, (base_values, target))
    changes = [(n, change) for n, (_, change, _) in enumerate(variants) if change is not None]
    unchanged = base_values if drop else None
    changed = _output_changes(replayer, target, inputs, changes, unchanged)
    for number, (_, change, attr) in enumerate(variants):
        if change is not None:
            outputs = changed.pop(number)
        else:
            outputs = _attribute_change(replayer, target, inputs, attr, unchanged)
        score_of = _replayed(replayer, sub, planned, target, outputs, limit)
        outputs = None  # let go before the next variant is computed
        yield score_of


def _output_changes(
    replayer: Any,
    target: Any,
    inputs,
    changes: list[tuple[int, Callable]],
    unchanged: dict | None,
) -> dict[int, list | None]:
    """``target``'s rounded outputs under each output change (by variant number), from one
    run of its kernel on ``inputs`` (issue 16: each change ran it again; a Conv2D on a real
    network's activation takes a tenth of a second). None where the change does not apply,
    or, given the ``unchanged`` replay's values, leaves the rounded outputs as they are
    (:func:`_rounded_change`); without them a change giving None keeps the outputs, as it
    did. The run's outputs are let go before any variant is replayed further; the rounded
    changes are kept until replayed (two activations when the fp16 range clips one)."""
    prepared: dict[int, list | None] = dict.fromkeys(number for number, _ in changes)
    if not changes or isinstance(inputs, BaseException):
        return prepared
    outputs = _guarded(replayer.kernels.run, target, inputs)
    if isinstance(outputs, BaseException):
        return prepared  # the unchanged run raised: each change's run would raise it again
    for number, change in changes:
        with contextlib.suppress(*_INAPPLICABLE):  # this change does not apply
            changed = change(inputs, outputs)
            if unchanged is None:
                kept = outputs if changed is None else changed  # None: the outputs as they are
                prepared[number] = _rounded_change(target, kept, None)
            elif changed is not None and not _same_bits(changed, outputs):
                prepared[number] = _rounded_change(target, changed, unchanged)
            changed = None
    return prepared


def _attribute_change(replayer: Any, target: Any, inputs, attr: tuple, unchanged: dict | None):
    """``target``'s rounded outputs run with another attribute (only the altered kernel:
    it ran the unchanged one first, for nothing), or None as :func:`_output_changes`."""
    if isinstance(inputs, BaseException) or _over_one_value(attr, inputs):
        return None
    try:
        return _rounded_change(
            target, replayer.kernels.run(_altered(target, attr), inputs), unchanged
        )
    except _INAPPLICABLE:
        return None


def _over_one_value(attr: tuple, inputs: list) -> bool:
    """Whether ``attr`` moves an axis onto one of size 1 in the first input: no other legal
    axis, but an op made constant or the identity (a softmax over one value is 1; a review:
    on batch 1 that "explained" a UB Mul that left out its gate)."""
    key, value = attr
    if key not in AXIS_KEYS or not inputs or not hasattr(inputs[0], "shape"):
        return False
    axes = value if isinstance(value, list) else [value]
    shape = inputs[0].shape
    return any(isinstance(a, int) and -len(shape) <= a < len(shape) and shape[a] == 1 for a in axes)


def _rounded_change(target: Any, changed: list | None, unchanged: dict | None) -> list | None:
    """``changed`` rounded as the replay rounds ``target``'s outputs; None when it is None or,
    given the ``unchanged`` replay's values, keeps every bit of its outputs there."""
    if changed is None:
        return None
    rounded = [round_to(value, out_dtype(target, j)) for j, value in enumerate(changed)]
    if unchanged is None:
        return rounded
    before = list(outputs_of(unchanged, target.name).values())
    return None if _same_bits(rounded, before) else rounded


def _replayed(
    replayer: Any, sub: Any, planned: tuple, target: Any, outputs, limit: tuple | None = None
) -> float | None:
    """The worst score with ``target``'s outputs replaced by ``outputs`` (None: no variant
    to replay, or it is not applicable: a shape change, a kernel refusal further on)."""
    if outputs is None:
        return None
    plan, base_values = planned
    try:
        values = replayer.evaluate(
            sub, plan, reuse=(base_values, target), outputs_only=True, replaced=outputs
        )
        return _worst(replayer, sub, values, limit)
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
