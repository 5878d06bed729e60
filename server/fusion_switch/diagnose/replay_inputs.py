"""The fused op's input dumps a replay starts from hold what their producers wrote
(:mod:`.replay`). CANN dumps an op's inputs after the op has run: an op that writes over its
own input memory (or another op writing there in between) leaves an input dump its producer
never wrote. Replayed on it, a fused op that turned finite values into NaN agrees with its
replay and looked like it passed an error on ("propagates") from a clean producer."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .evidence import MissingEvidence
from .replay_kernels import Unverifiable
from .subgraph import Subgraph, ref_name


def check_inputs_written(replayer: Any, sub: Subgraph, outputs: list) -> None:
    """Raise Unverifiable when an input dump of ``sub``'s fused op holds NaN or infinity where
    its producer's output dump, in the same run, holds a finite value. Checked only when an
    output's NaN/infinity differs from fusion off (``observed`` infinite), so a run without
    them reads nothing more."""
    if not any(o.observed is not None and math.isinf(o.observed) for o in outputs):
        return
    fused = sub.fused
    for position in sorted(set(sub.boundary.values())):
        try:
            given = replayer.store.tensor("on", fused.name, "input", position)
        except MissingEvidence:
            continue
        if given.dtype.kind != "f" or np.isfinite(given).all():
            continue
        producer, index = ref_name(fused.data_inputs[position])
        try:
            written = replayer.store.tensor("on", producer, "output", index)
        except MissingEvidence:
            continue  # no task or not dumped: nothing to hold the input against
        if written.size != given.size:
            continue
        changed = np.isfinite(written.reshape(-1)) & ~np.isfinite(given.reshape(-1))
        if changed.any():
            raise Unverifiable(
                f"not proven: input {position} of {fused.name} holds NaN or infinity in "
                f"{int(changed.sum())} values where its producer {producer} wrote finite "
                f"ones (output {index}, same run): the input changed after {producer} ran "
                f"(dumps are taken after an op runs: {fused.name} may have written over its "
                "own input); its replay on that input proves nothing"
            )
