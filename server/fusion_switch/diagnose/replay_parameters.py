"""The parameters a replay's proof rests on (:mod:`.replay`): a flagged op is proven only
when they are the ones the fused op computed with (a review of the attribution found four ways
an innocent rule was "proven by replay" from evidence that did not hold together: weights that
differ between the runs, dumps of two runs, a constant folded in place, an original op the
fusion-off graph lacks)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ..readers.dtypes import data_type_name
from .evidence import MissingEvidence
from .json_numbers import json_number
from .noise import MIN_TOLERANCE, coarser, score
from .replay_kernels import Unverifiable
from .subgraph import Subgraph, ref_name


def check_parameters(replayer: Any, sub: Subgraph, plan: dict[str, list], evidence: dict) -> None:
    """Check the parameters of an op the replay flags (a proof rests on them); raises
    Unverifiable, or notes in ``evidence`` what differs.

    - A parameter taken from the fused op's own input (its fusion-off dump missing) may
      be a constant a rule folded in place under the same name (GE's passes rewrite a
      weight's values in place): no proof rests on it.
    - A parameter the fused op also reads as an input should hold the same values in
      both runs. Where it does not, the op is replayed again with the fused op's own
      values (``own_parameters_score``): if that agrees, the runs held other weights
      (another step or checkpoint dumped, runs that diverged) and the fused op computed
      right with its own; if not, a rule folded it in place (the first replay stands).
    """
    _outputs_named_alike(replayer, sub)
    if evidence.get("from_on_side"):
        taken = ", ".join(evidence["from_on_side"])
        raise Unverifiable(
            f"not proven: the replay took {taken}, which a rule may have folded in "
            "place; dump the fusion-off original op that reads it to prove this op"
        )
    differing, slots = [], []
    for member, i, ref, position in constant_parameters(replayer, sub):
        own = _own_value(replayer, sub, member, i, position)
        if own is not None:
            plan[member.name][i] = ("value", own)
            differing.append(f"{ref} ({member.name} input {i}, {sub.fused.name}:input:{position})")
            slots.append([member.type, i])
    if differing:
        # scored as the replay is (a review: the intermediate roundings the unrounded replay
        # takes out of that score stayed in this one, and "the runs held other weights" was
        # missed)
        outputs = replayer.scores(sub, plan, {}, with_observed=False)
        evidence["differing_parameters"] = differing
        evidence["differing_slots"] = slots  # (member type, input): where a fold would be
        evidence["own_parameters_score"] = json_number(max(o.score for o in outputs), 6)


def constant_parameters(replayer: Any, sub: Subgraph) -> Iterator[tuple[Any, int, str, int]]:
    """(member, its input index, the tensor, the fused op's input position) of each constant
    a member reads that the fused op reads too."""
    for member in sub.members:
        for i, ref in enumerate(member.data_inputs):
            position = sub.boundary.get(ref)
            src = ref_name(ref)[0]
            if position is None or src in sub.member_names or not replayer.is_constant(src):
                continue
            yield member, i, ref, position


MIN_WEIGHT_ELEMENTS = 16  # smaller constants (shapes, axes, scalars) hold alike in any run


def parameter_state(replayer: Any, sub: Subgraph, member: Any, i: int, position: int) -> str:
    """How ``member``'s input ``i`` (the fused op's input ``position``) compares between the
    runs: "differs", "alike" (a float weight of at least :data:`MIN_WEIGHT_ELEMENTS` values,
    not all equal, that both runs hold with the same values), or "" (not dumped, or too
    small or plain to tell the runs apart)."""
    sides = _both_sides(replayer, sub, member, i, position)
    if sides is None:
        return ""
    off, on, dtype = sides
    if _differ(off, on, dtype):
        return "differs"
    if dtype not in _FLOAT_TYPES or off.size < MIN_WEIGHT_ELEMENTS:
        return ""
    if not np.isfinite(off).all() or off.min() == off.max():
        return ""
    return "alike"


_FLOAT_TYPES = ("DT_FLOAT", "DT_FLOAT16", "DT_BF16", "DT_DOUBLE")


def _coarser_dtype(replayer: Any, *keys: tuple) -> str:
    """The coarser dtype two dumped tensors were stored in (float16 when one is unknown)."""
    codes = [replayer.store.dtype_code(*key) for key in keys]
    dtypes = [data_type_name(code) for code in codes if code is not None]
    return coarser(*dtypes) if len(dtypes) == 2 else "DT_FLOAT16"


def _own_value(replayer: Any, sub: Subgraph, member: Any, i: int, position: int) -> Any:
    """The fused op's own value of ``member``'s input ``i`` (its input ``position``) when
    it differs from the fusion-off dump's, else None."""
    sides = _both_sides(replayer, sub, member, i, position)
    if sides is None:
        return None  # read as gather read it: from one side only
    off, on, dtype = sides
    return on if _differ(off, on, dtype) else None


def _both_sides(replayer: Any, sub: Subgraph, member: Any, i: int, position: int) -> tuple | None:
    """(the fusion-off dump's value of ``member``'s input ``i``, the fused op's value of its
    input ``position``, the coarser dtype they were stored in), or None when one is missing."""
    off_key = ("off", member.name, "input", i)
    on_key = ("on", sub.fused.name, "input", position)
    try:
        off = replayer.store.tensor(*off_key)
        on = replayer.store.tensor(*on_key)
    except MissingEvidence:
        return None
    return off, on, _coarser_dtype(replayer, off_key, on_key)


def _differ(off: Any, on: Any, dtype: str) -> bool:
    """The two runs hold other values: another size, or a score beyond the dtype's rounding."""
    return on.size != off.size or score(on, off, dtype) > MIN_TOLERANCE


def _outputs_named_alike(replayer: Any, sub: Subgraph) -> None:
    """The fused op's dump names, per output, the original op it stands for
    (``OpOutput.original_op``), as the -f graph's ``_datadump_origin_name`` does: where they
    differ, the graph is of another build than the dumps, and its sub-graph is not the one
    that ran (a review: an innocent rule proven from such a graph)."""
    descs = sub.fused.output_descs
    for k, origin in sub.outputs:
        said = replayer.store.output_origin("on", sub.fused.name, k)
        if said is None:
            continue
        desc = descs[k] if k < len(descs) else None
        producer = replayer.off.ops.get(ref_name(origin)[0])
        names = {
            ref_name(origin)[0],
            getattr(desc, "origin_name", "") or "",
            *(getattr(producer, "original_names", None) or ()),
        }
        if said not in names:
            raise Unverifiable(
                f"not proven: the fusion-on dump says output {k} stands for {said}, the "
                f"-f graph says {origin}: the graph is not of the build dumped in -m (pass "
                "the graph of the run that was dumped)"
            )
