"""The range of an original op's float16 output (:mod:`.replay`).

The replay rounds each original op's output to its dtype's precision but not its range (a
value above 65504 stays finite in a float16 output: the fp16 range is also a localisation
variant, for a fused op that computes in float16 what the original computed wider). Where the
original op's own output is float16 and leaves that range, the device saturated it (65504) or
overflowed it (inf), with fusion off as with fusion on, and which of the two it did is a
setting of the device the dumps do not tell for sure:
- an op the replay flags whose float16 original ops leave their range proves nothing (a
  review: a correct Add of 30000 and 40000 was "proven" wrong). Replaying it again saturating
  or overflowing, the closer kept, was tried and dropped: a second review found it proving a
  correct op with weights that differ between the runs, and clearing a wrong one;
- a fusion-off op that leaves the range gives no noise sample (one such sample of ~185 raised
  the tolerance of every op of its type to ~735, hiding a real error)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .noise import FP16_MAX, round_to
from .replay_kernels import Unverifiable, out_dtype
from .subgraph import Subgraph

RANGES = {"DT_FLOAT16": FP16_MAX, "DT_BF16": 3.3895313892515355e38}


def in_range(values: np.ndarray, dtype: str) -> bool:
    """Whether every finite value of ``values`` is within the range of ``dtype``."""
    limit = RANGES.get(dtype)
    if limit is None or values.size == 0:
        return True
    high = np.fmax.reduce(values, axis=None)
    low = np.fmin.reduce(values, axis=None)
    if not (high > limit or low < -limit):  # the usual case: one pass each way (NaN ignored)
        return True
    with np.errstate(invalid="ignore"):  # an inf the inputs brought is the device's too
        return not np.any(np.isfinite(values) & (np.abs(values) > limit))


def check_range(replayer: Any, sub: Subgraph, plan: dict[str, list]) -> None:
    """Raise Unverifiable when an original op of ``sub`` whose output is float16 (or bfloat16)
    leaves that range in the replay; one more evaluation of its outputs only, as the first."""
    narrow = any(
        out_dtype(member, j) in RANGES
        for member in sub.members
        for j in range(max(1, len(member.output_descs)))
    )
    if not narrow:
        return
    past: list[str] = []
    replayer.rounding = functools.partial(_noting, past=past)
    try:
        replayer.evaluate(sub, plan, outputs_only=True)
    finally:
        replayer.rounding = round_to
    if past:
        kinds = ", ".join(dict.fromkeys(past))
        raise Unverifiable(
            f"not proven: {len(past)} output(s) of its original ops leave the {kinds} range "
            "in the replay; the device saturates or overflows there, with fusion off too, and "
            "the replay cannot tell which"
        )


def _noting(values: np.ndarray, dtype: str, *, past: list[str]) -> np.ndarray:
    """:func:`.noise.round_to`, noting ``dtype`` in ``past`` when a value leaves its range."""
    rounded = round_to(values, dtype)
    if not in_range(rounded, dtype):
        past.append(dtype[3:].lower())
    return rounded
