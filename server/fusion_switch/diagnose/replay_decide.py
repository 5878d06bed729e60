"""A fused op's verdict from its replay's scores (:mod:`.replay`): ``introduces`` beyond the
tolerance, ``propagates`` when the replay agrees but the output differs from fusion off,
``clean``, or ``unverified`` with the reason when the evidence does not hold together."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..readers.graph_model import LOCAL_TYPES
from .json_numbers import json_number
from .noise import NoiseFloor, floor_of
from .replay_kernels import out_dtype
from .subgraph import Subgraph

INTRODUCES, PROPAGATES, CLEAN, UNVERIFIED = "introduces", "propagates", "clean", "unverified"


def decide(
    result: Any,
    sub: Subgraph,
    measured: tuple,
    noise: NoiseFloor,
    fold_witness: Callable[[], tuple[str | None, str]] | None = None,
    own_dumps: Callable[[], str] | None = None,
) -> None:
    """Set ``result``'s verdict (and its outputs, evidence, tolerance, reason) from what was
    measured of ``sub`` (:func:`.replay.measure_one`).

    ``fold_witness``: called only when a flagged op's parameters differ between the runs and
    the replay with its own values disagrees too (:class:`.replay_fold.FoldWitness`): what
    shows the runs held the same weights, or None and why not. Without it (the early
    :class:`.replay.Judge`) such an op counts as flagged. ``own_dumps``: called before an
    op is proven wrong: why an original op's kernel disagrees with its own fusion-off dump
    (:func:`.replay_own_dumps.members_off_their_dumps`), empty when none does."""
    if measured[0] == "unverified":
        result.verdict, result.reason, result.missing_evidence = UNVERIFIED, *measured[1:]
        return
    _, outputs, evidence = measured
    result.outputs = outputs
    result.evidence = evidence
    result.tolerance = tolerance_of(sub, noise, [o.dtype for o in outputs])
    worst = max(o.score for o in outputs)
    flagged = [o for o in outputs if o.score > result.tolerance]
    if flagged and all(o.observed is not None and o.observed <= result.tolerance for o in flagged):
        # the fused op gives what fusion off gives: the replay is what differs (a kernel's
        # NaN or subnormal handling the device does not share), so it proves nothing
        o = max(flagged, key=lambda o: o.score)
        result.verdict = UNVERIFIED
        result.reason = (
            f"not proven: output {o.index} agrees with the fusion-off run (score "
            f"{o.observed:.3g}) while its replay disagrees (score {o.score:.3g}): the replay "
            "does not compute as the device does on these values"
        )
        return
    own = evidence.get("own_parameters_score")
    differing = ", ".join(evidence.get("differing_parameters") or ())
    if worst > result.tolerance and own is not None and own <= result.tolerance:
        result.verdict = UNVERIFIED
        result.reason = (
            f"not proven: the two runs hold other values of {differing}, and with the fused "
            f"op's own values its replay agrees (score {own:.3g}): the runs did not hold the "
            "same weights (another step or checkpoint dumped?)"
        )
        return
    if worst > result.tolerance and own is not None and fold_witness is not None:
        # a fold in place and weights of another step give this too, with a right op
        shown, why_not = fold_witness()
        if shown is None:
            result.verdict = UNVERIFIED
            result.reason = (
                f"not proven: the two runs hold other values of {differing}, and with the "
                f"fused op's own values its replay disagrees too (score {own:.3g}), as a "
                f"rule folding it in place would give, or weights of another step: {why_not} "
                "(dump both runs from the same checkpoint and step)"
            )
            return
        evidence["same_weights_shown_by"] = shown
    if worst > result.tolerance:
        flagged = [o for o in outputs if o.score > result.tolerance]
        reason = _unproven(flagged, sub, noise, evidence)
        if reason:
            result.verdict, result.reason = UNVERIFIED, reason
            return
        unchecked = _uncalibrated(sub, noise)
        if unchecked:
            result.verdict = UNVERIFIED
            result.reason = (
                f"not proven: the replay disagrees (score {worst:.3g}, tolerance "
                f"{result.tolerance:.3g}), but no fusion-off op of this run checked the kernel "
                f"of {', '.join(f'{t} ({d})' for t, d in unchecked)} against its own dump: a "
                "kernel computing otherwise than the device (an approximated function, a "
                "float16 step) gives this too. Dump the fusion-off run's ops of that type"
            )
            return
        off_their_dumps = own_dumps() if own_dumps is not None else ""
        if off_their_dumps:
            result.verdict, result.reason = UNVERIFIED, off_their_dumps
            return
        result.verdict = INTRODUCES
        result.channel_tolerance = noise.channel_tolerance(_member_dtypes(sub))
        return
    if _channel_disagrees(result, sub, noise):
        return
    observed = [o.observed for o in outputs if o.observed is not None]
    # drift counts when the output differs from fusion off by more than the tolerance
    if observed and max(observed) > result.tolerance:
        result.verdict = PROPAGATES
    else:
        result.verdict = CLEAN


def _unproven(flagged: list, sub: Subgraph, noise: NoiseFloor, evidence: dict) -> str:
    """Why the outputs beyond the tolerance prove nothing (empty: they may prove) (a review of
    the noise floor, fortieth round; each gave a right op "proven")."""
    odd = [o for o in flagged if o.nonfinite is not None]
    if odd and (any(o.nonfinite == "replay" for o in odd) or not evidence.get("inputs_finite")):
        o = odd[0]
        where = "its replay" if o.nonfinite == "replay" else "its inputs"
        return (
            f"not proven: output {o.index} and its replay differ on values that are not finite "
            f"(NaN or Inf, from {where}): the kernels do not handle such values as the device "
            "does (a Relu of NaN gives 0 there), so the difference proves nothing"
        )
    if all(o.steps is not None and o.steps <= 1.0 for o in flagged):
        o = flagged[0]
        return (
            f"not proven: output {o.index} ({o.dtype}) differs from its replay by at most one "
            "step: the device's rounding to an integer (half away from zero, or truncation) "
            "is not replayed exactly, so one step proves nothing"
        )
    for key in dict.fromkeys(_member_dtypes(sub)):
        seen = noise.disagreeing.get(key)
        if seen is not None:
            return (
                f"not proven: the kernel of {key[0]} ({key[1]}) disagreed with the fusion-off "
                f"op {seen}'s own dump on values that are not finite (NaN or Inf): it does not "
                "compute as the device does there"
            )
    return ""


def _channel_disagrees(result: Any, sub: Subgraph, noise: NoiseFloor) -> bool:
    """Make ``result`` unverified when a channel of an output disagrees with its replay beyond
    the tolerance per channel while the whole tensor agrees. Never a proof: values cancelling
    within a channel raise a right kernel's score there too (a rule folding weights rounds
    them, and the fusion-off ops that calibrate the tolerance fold nothing)."""
    wide = [o for o in result.outputs if o.channel is not None]
    if not wide or max(o.channel[0] for o in wide) <= result.tolerance:
        return False
    tolerance = noise.channel_tolerance(_member_dtypes(sub))
    o = max(wide, key=lambda o: o.channel[0])
    if o.channel[0] <= tolerance:
        return False
    result.verdict = UNVERIFIED
    result.evidence["channel"] = {
        "output": o.index,
        "channel": o.channel[1],
        "score": json_number(o.channel[0], 6),
        "tolerance": json_number(tolerance, 6),
    }
    result.reason = (
        f"not proven clean: channel {o.channel[1]} of output {o.index} disagrees with its "
        f"replay (score {o.channel[0]:.3g} against that channel's own largest value, "
        f"tolerance {tolerance:.3g}) while the whole tensor agrees (score {o.score:.3g}): a "
        "channel far smaller than the tensor's largest value hides its error in the whole "
        "tensor's score; values that cancel within a channel give this too, so it proves "
        "nothing either way"
    )
    return True


def _uncalibrated(sub: Subgraph, noise: NoiseFloor) -> list[tuple[str, str]]:
    """(type, dtype) of ``sub``'s computing ops that no noise sample measured: the tolerance
    trusts their kernels fully (a review: a right op was proven where none was dumped). Views
    GE runs without a task are never dumped, and move values only."""
    unchecked = []
    for key in dict.fromkeys(_member_dtypes(sub)):
        if key[0] not in LOCAL_TYPES and noise.level(*key) is None:
            unchecked.append(key)
    return unchecked


def tolerance_of(sub: Subgraph, noise: NoiseFloor, scored_in: list[str] | None = None) -> float:
    """The tolerance of ``sub``'s replay: the noise floor of its original op types, counted in
    the units of the finest dtype its outputs are scored in (``scored_in``: the largest
    number, so that no output is held tighter than its members' rounding allows; None: each
    level in its own dtype's units)."""
    unit = min(scored_in, key=floor_of) if scored_in else None
    return noise.tolerance(_member_dtypes(sub), unit)


def _member_dtypes(sub: Subgraph) -> list[tuple[str, str]]:
    """(type, output dtype) of ``sub``'s original ops: what the noise floor is kept by."""
    return [(m.type, out_dtype(m, 0)) for m in sub.members]
