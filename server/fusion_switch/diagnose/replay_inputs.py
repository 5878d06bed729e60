"""The fused op's input dumps a replay starts from hold what their producers wrote
(:mod:`.replay`). CANN dumps an op's inputs after the op has run: an op that writes over its
own input memory (or another op writing there in between) leaves an input dump its producer
never wrote. Replayed on it, a right fused op was "proven" wrong (a review), and one that
turned finite values into NaN agreed with its replay and looked like it passed an error on
("propagates") from a clean producer."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .evidence import MissingEvidence
from .noise import MIN_TOLERANCE, score
from .replay_kernels import Unverifiable
from .subgraph import Subgraph, ref_name


def check_inputs_written(replayer: Any, sub: Subgraph, outputs: list, flagged: bool) -> None:
    """Raise Unverifiable when an input dump of ``sub``'s fused op is not what its producer's
    output dump, in the same run, holds.

    - ``flagged`` (a proof would rest on the inputs; few ops): every input is held against
      its producer's output.
    - Otherwise ("propagates" would rest on them), only an input holding NaN or infinity
      where its producer wrote finite values, and only when an output's NaN/infinity
      differs from fusion off (``observed`` infinite): a run without them reads nothing more.
    """
    if not flagged and not any(o.observed is not None and math.isinf(o.observed) for o in outputs):
        return
    fused = sub.fused
    for position in sorted(set(sub.boundary.values())):
        try:
            given = replayer.store.tensor("on", fused.name, "input", position)
        except MissingEvidence:
            continue
        if not flagged and np.isfinite(given).all():  # (the store gives float64 values)
            continue
        producer, index = ref_name(fused.data_inputs[position])
        try:
            written = replayer.store.tensor("on", producer, "output", index)
        except MissingEvidence:
            continue  # no task or not dumped: nothing to hold the input against
        if written.size != given.size:
            continue
        changed = _changed(given.reshape(-1), written.reshape(-1), flagged)
        if changed:
            raise Unverifiable(
                f"not proven: input {position} of {fused.name} {changed} where its producer "
                f"{producer} wrote other values (its output {index}, same run): the input "
                f"changed after {producer} ran (dumps are taken after an op runs: "
                f"{fused.name} may have written over its own input); its replay on that "
                "input proves nothing"
            )


def _changed(given: np.ndarray, written: np.ndarray, every_value: bool) -> str:
    """How ``given`` differs from ``written`` ('' when it does not): NaN or infinity where
    ``written`` is finite, or (``every_value``) any value beyond float16's rounding."""
    appeared = int((np.isfinite(written) & ~np.isfinite(given)).sum())
    if appeared:
        return f"holds NaN or infinity in {appeared} values"
    if every_value and not np.array_equal(given, written, equal_nan=True):
        differ = score(given, written, "DT_FLOAT16")
        if differ > MIN_TOLERANCE:
            return f"differs (score {differ:.3g} at float16's rounding)"
    return ""
