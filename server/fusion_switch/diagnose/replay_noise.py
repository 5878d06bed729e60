"""The noise floor's samples: fusion-off ops replayed against their own dumps (inputs and
outputs from the same file), which calibrate the tolerance of the fused ops' replays
(:class:`.noise.NoiseFloor`), and the per-channel scores both use."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .evidence import MissingEvidence
from .noise import NoiseFloor, channel_axis, channel_scores, in_units, round_to, score
from .replay_kernels import Unverifiable, out_dtype, out_formats
from .replay_range import in_range

_NOISE_SAMPLES_PER_TYPE = 4  # per op type: the floor of correct kernels, cheaply


def measure_noise(replayer: Any, members: list[Any], noise: NoiseFloor) -> None:
    """Replay fusion-off ops against their own dumps (inputs and output from the same file):
    up to :data:`_NOISE_SAMPLES_PER_TYPE` informative samples per (type, dtype), the key the
    floor is kept by (a review: per type, four float32 ops left a float16 one unsampled)."""
    counts: dict[tuple[str, str], int] = {}
    for member in members:
        key = (member.type, out_dtype(member, 0))
        if counts.get(key, 0) >= _NOISE_SAMPLES_PER_TYPE:
            continue
        if not replayer.store.has("off", member.name):
            continue
        try:
            if _noise_sample(replayer, member, noise):
                counts[key] = counts.get(key, 0) + 1
        except (Unverifiable, MissingEvidence):
            continue


def _noise_sample(replayer: Any, member: Any, noise: NoiseFloor) -> bool:
    """One op's noise sample (its arrays are let go on return, and its inputs and unrounded
    output before its dumped output is read: on real activations each is tens of MB); False
    when it says nothing of the kernel: every input holds one value (a review: Sigmoid of
    zeros is exact on any device, and four such samples calibrated Sigmoid to the least
    tolerance, which a right Sigmoid on varied data then exceeded)."""
    store = replayer.store
    inputs: list[np.ndarray | None] = [
        store.tensor("off", member.name, "input", i) for i in range(len(member.data_inputs))
    ]
    if all(_one_value(v) for v in inputs):
        return False
    outs = replayer.kernels.run(member, inputs)
    del inputs
    sampled = False
    # every output the op dumped, each kept under the op's floor (a review: only output 0 was,
    # so a fused output standing for a LayerNorm's variance had its y's tolerance)
    for k in range(len(outs)):
        replay, outs[k] = outs[k], None  # one output's arrays alive at a time
        try:
            sampled = _noise_output(store, member, k, replay, noise) or sampled
        except MissingEvidence:
            if not k:  # no output 0 dumped: no sample of this op
                raise
    return sampled


def _noise_output(
    store: Any, member: Any, index: int, unrounded: np.ndarray, noise: NoiseFloor
) -> bool:
    """Output ``index`` of a noise sample scored against its dump, under the floor of the op's
    type and output 0's dtype (the key its tolerance is looked up by); False when it says
    nothing (a size the dump does not have, or values the device saturated)."""
    dtype = out_dtype(member, index)
    replay = round_to(unrounded, dtype)
    del unrounded
    real = store.tensor("off", member.name, "output", index)
    if real.size != replay.size or not in_range(replay, dtype):  # the device saturated it
        return False
    key = out_dtype(member, 0)
    found = score(real, replay, dtype)
    if not math.isfinite(found):  # NaN or Inf handled otherwise than the device does
        noise.disagree(member.type, key, member.name)
        return True
    channels = channels_of(real, replay, dtype, out_formats(member, index))
    worst = None if channels is None else float(channels.max())
    noise.add(member.type, key, in_units(found, dtype, key), worst)
    return True


def _one_value(values: np.ndarray | None) -> bool:
    """An input that holds one value only (or none): a kernel's rounding does not show."""
    return values is None or values.size <= 1 or bool(values.min() == values.max())


def output_channels(
    fused: Any, k: int, producer: Any, index: int, real: np.ndarray, replay: np.ndarray, dtype: str
) -> np.ndarray | None:
    """:func:`channels_of` of fused output ``k`` against its replay (output ``index`` of
    ``producer``), along the channels of the fused op's layout, else its producer's."""
    formats = [*out_formats(fused, k), *out_formats(producer, index)]
    return channels_of(real, replay, dtype, formats)


def channels_of(
    real: np.ndarray, replay: np.ndarray, dtype: str, formats: list[str]
) -> np.ndarray | None:
    """:func:`.noise.channel_scores` along the channel axis of the first of ``formats`` that
    fits the array (None: none does)."""
    for fmt in formats:
        axis = channel_axis(fmt, real.ndim)
        if axis is not None:
            return channel_scores(real, replay, dtype, axis)
    return None
