"""The range of an original op's output dtype, for an op the replay flags (:mod:`.replay`).

The replay rounds each original op's output to its dtype's precision but not its range (a
value above 65504 stays finite in a float16 output: the fp16 range is a localisation variant
for a fused op that computes in float16 what the original computed wider). Where the
original op's own output is float16 and the replay leaves that range, the device saturated
(65504) or overflowed (inf) there with fusion off as with fusion on, which the replay does
not model: a correct fused op would be "proven" wrong (a review, from a float16 Add of 30000
and 40000)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .noise import FP16_MAX
from .replay_kernels import Unverifiable, out_dtype
from .subgraph import Subgraph

RANGES = {"DT_FLOAT16": FP16_MAX, "DT_BF16": 3.3895313892515355e38}


def check_range(replayer: Any, sub: Subgraph, plan: dict[str, list]) -> None:
    """Raise Unverifiable when an original op whose output is float16 or bfloat16 leaves its
    dtype's range in the replay of ``sub``."""
    narrow = [
        (member, j, RANGES[dtype])
        for member in sub.members
        for j in range(max(1, len(member.output_descs)))
        if (dtype := out_dtype(member, j)) in RANGES
    ]
    if not narrow:
        return
    values = replayer.evaluate(sub, plan)
    for member, j, limit in narrow:
        value = values.get(f"{member.name}:{j}")
        if value is None or value.size == 0:
            continue
        with np.errstate(invalid="ignore"):
            finite = np.abs(value[np.isfinite(value)])
        largest = float(finite.max()) if finite.size else 0.0
        if largest > limit:
            raise Unverifiable(
                f"not proven: {member.name} ({member.type}) leaves its "
                f"{out_dtype(member, j)[3:].lower()} output's range in the replay "
                f"(|value| up to {largest:.6g} > {limit:.6g}); the device saturates or "
                "overflows there with fusion off too, which the replay does not model"
            )
