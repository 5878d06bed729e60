"""The range of an original op's float16 output, for an op the replay flags (:mod:`.replay`).

The replay rounds each original op's output to its dtype's precision but not its range (a
value above 65504 stays finite in a float16 output: the fp16 range is also a localisation
variant, for a fused op that computes in float16 what the original computed wider). Where the
original op's own output is float16 and leaves that range, the device saturated it (65504) or
overflowed it (inf), with fusion off as with fusion on: a correct fused op was "proven" wrong
(a review, from a float16 Add of 30000 and 40000). So a flagged op with such members is
replayed again with the range applied, saturating, then overflowing; the closer replay is
kept. A real error still shows beside the values past the range (a first version of this
check left every such op unverified, real proofs with them)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .noise import FP16_MAX, round_to
from .replay_kernels import out_dtype
from .subgraph import Subgraph

RANGES = {"DT_FLOAT16": FP16_MAX, "DT_BF16": 3.3895313892515355e38}
MODES = ("saturated", "overflowed to inf")


def within_range(
    replayer: Any, sub: Subgraph, plan: dict[str, list], outputs: list, evidence: dict
) -> list:
    """``outputs`` (the flagged op's scores), or those of its replay with the float16 range
    applied where that is closer to the real output (noted in ``evidence``)."""
    narrow = any(
        out_dtype(member, j) in RANGES
        for member in sub.members
        for j in range(max(1, len(member.output_descs)))
    )
    if not narrow:
        return outputs
    best = outputs
    for mode in MODES:
        past: list[str] = []
        replayer.rounding = functools.partial(_bounded, mode=mode, past=past)
        try:
            values = replayer.evaluate(sub, plan, outputs_only=True)
            bounded = replayer.compare(sub, values, with_observed=True, release=True)
        finally:
            replayer.rounding = round_to
        if not past:  # no original op left its range: the first replay stands
            return outputs
        if max(o.score for o in bounded) < max(o.score for o in best):
            best = bounded
            evidence["float16_range"] = f"{', '.join(dict.fromkeys(past))} {mode}"
    return best


def _bounded(values: np.ndarray, dtype: str, *, mode: str, past: list[str]) -> np.ndarray:
    """:func:`.noise.round_to`, then the range of ``dtype`` applied as the device does in
    ``mode``; the dtype is noted in ``past`` when a value was beyond it."""
    rounded = round_to(values, dtype)
    limit = RANGES.get(dtype)
    if limit is None or rounded.size == 0:
        return rounded
    high = np.fmax.reduce(rounded, axis=None)
    low = np.fmin.reduce(rounded, axis=None)
    if not (high > limit or low < -limit):  # NaN compares false: left as it is
        return rounded
    past.append(dtype[3:].lower())
    if mode == MODES[0]:
        return np.clip(rounded, -limit, limit)
    return np.where(np.abs(rounded) > limit, np.copysign(np.inf, rounded), rounded)
