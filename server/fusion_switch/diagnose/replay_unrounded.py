"""The replay without the original ops' intermediate roundings.

The replay rounds each original op's output to its fusion-off dtype, as the unfused graph
computes. A fused kernel keeps its intermediates in float32 or wider and rounds once. Where an
intermediate is far larger than the output (a bias or a BatchNorm shift cancelling an offset),
the replay's rounding of it exceeds the output's own values: a right fused op disagreed with
its replay and its rule was "proven" (a review, score 34 against a tolerance of 1). Where the
replay disagrees, the sub-graph is replayed again with only its outputs rounded, and each
output keeps the lower score of the two, channel by channel too. A right kernel computes as one
of them; a wrong one disagrees with both."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from .json_numbers import json_number
from .noise import CHANNEL_FACTOR, MIN_TOLERANCE, worst_channel
from .replay_kernels import out_dtype
from .subgraph import Subgraph

CONVERSION_TYPES = frozenset({"Cast"})  # their rounding is what they compute
WIDE_DTYPES = frozenset({"DT_FLOAT16", "DT_BF16", "DT_FLOAT", "DT_DOUBLE"})


def rounded_keys(sub: Subgraph) -> Callable[[Any, str], bool]:
    """Whether the unrounded replay rounds a member's output (its key ``name:index``): the
    values the fused outputs stand for (the fused op stores them in their dtype), the
    outputs of conversions, and integer outputs (a quantization rounds by what it is)."""
    outputs = {origin for _, origin in sub.outputs}

    def rounded(member: Any, key: str) -> bool:
        if key in outputs or member.type in CONVERSION_TYPES:
            return True
        return out_dtype(member, int(key.rpartition(":")[2])) not in WIDE_DTYPES

    return rounded


def with_unrounded(
    replayer: Any, sub: Subgraph, plan: dict[str, list], outputs: list, evidence: dict
) -> list:
    """``outputs`` (the replay's scores), each with the lower of its score and the unrounded
    replay's where one of them disagrees beyond the least tolerance (or a channel beyond the
    least tolerance per channel); ``evidence["unrounded_replay"]`` then says what it scored
    and whether it was used."""
    if not any(_disagrees(o) for o in outputs):
        return outputs
    values = replayer.evaluate(sub, plan, outputs_only=True, unrounded=True)
    other = replayer.compare(sub, values, with_observed=False, release=True)
    del values
    combined, used = [], False
    for rounded, unrounded in zip(outputs, other, strict=True):
        channels, channel = rounded.channels, rounded.channel
        if channels is not None and unrounded.channels is not None:
            channels = np.minimum(channels, unrounded.channels)
            channel = worst_channel(channels)
            used = used or channel[0] < rounded.channel[0]
        used = used or unrounded.score < rounded.score
        score = min(rounded.score, unrounded.score)
        combined.append(
            dataclasses.replace(rounded, score=score, channel=channel, channels=channels)
        )
    evidence["unrounded_replay"] = {
        "score": json_number(max(o.score for o in other), 6),
        "used": used,
    }
    return combined


def _disagrees(output: Any) -> bool:
    if output.score > MIN_TOLERANCE:
        return True
    channel = output.channel
    return channel is not None and channel[0] > CHANNEL_FACTOR * MIN_TOLERANCE
