"""Each original op of a flagged fused op replayed against its own fusion-off dump: a kernel
that does not give that op's dumped output from its dumped inputs cannot prove the fused op
wrong (a review, forty-first round: the noise floor checks four ops per type and dtype, and
an average pooling the device computes over real cells only, not among them, was "proven").
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..readers.graph_model import LOCAL_TYPES
from .evidence import MissingEvidence
from .noise import NoiseFloor, in_units, round_to, score
from .replay_kernels import Unverifiable, out_dtype
from .replay_range import in_range


def members_off_their_dumps(replayer: Any, sub: Any, noise: NoiseFloor) -> str:
    """Why the first of ``sub``'s original ops whose kernel disagrees with its own dump makes
    the replay prove nothing (empty: none does, or none could be checked)."""
    for member in sub.members:
        if member.type in LOCAL_TYPES or not replayer.store.has("off", member.name):
            continue
        try:
            why = _off_its_dump(replayer, member, noise)
        except (Unverifiable, MissingEvidence):
            continue  # not checked: as before, the noise floor stands for it
        if why:
            return (
                f"not proven: the kernel of {member.name} ({member.type}) does not give its "
                f"own fusion-off dump from that dump's inputs ({why}): the replay does not "
                "compute this op as the device does, so the fused op's difference from it "
                "proves nothing"
            )
    return ""


def _off_its_dump(replayer: Any, member: Any, noise: NoiseFloor) -> str:
    store = replayer.store
    inputs = [store.tensor("off", member.name, "input", i) for i in range(len(member.data_inputs))]
    if _written_over(store, member, inputs):
        return ""  # what it read is gone: nothing to hold its kernel to
    outs = replayer.kernels.run(member, inputs)
    del inputs
    key = out_dtype(member, 0)
    tolerance = noise.tolerance([(member.type, key)])
    for k in range(len(outs)):
        dtype = out_dtype(member, k)
        replay, outs[k] = round_to(outs[k], dtype), None
        try:
            real = store.tensor("off", member.name, "output", k)
        except MissingEvidence:
            continue
        if real.size != replay.size:
            return f"output {k}: {replay.size} values replayed, {real.size} dumped"
        if not in_range(replay, dtype):  # the device saturated it: the floor's rule
            continue
        found = score(real, replay, dtype)
        if math.isfinite(found) and in_units(found, dtype, key) > tolerance:
            return f"output {k} scores {found:.3g}, tolerance {tolerance:.3g}"
    return ""


def _written_over(store: Any, member: Any, inputs: list) -> bool:
    """Whether an input dump holds exactly an output dump's values: dumps are taken after an
    op runs, and one writing over its own input leaves that (a second review: a right kernel
    "did not give its own dump", and a fused op 5% off lost its proof)."""
    for k in range(len(member.output_descs) or 1):
        try:
            out = store.tensor("off", member.name, "output", k)
        except MissingEvidence:
            continue
        if any(v is not None and v.size == out.size and np.array_equal(v, out) for v in inputs):
            return True
    return False
