"""The fused op's input dumps a replay starts from hold what their producers wrote
(:mod:`.replay`). CANN dumps an op's inputs after the op has run: an op that writes over its
own input memory (or another op writing there in between) leaves an input dump its producer
never wrote. Replayed on it, a right fused op was "proven" wrong (a review), and one that
turned finite values into NaN agreed with its replay and looked like it passed an error on
("propagates") from a clean producer. Such an op is replayed again on what its producers wrote:
agreeing there, it is verified; disagreeing, it stays unverified."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .evidence import MissingEvidence
from .noise import MIN_TOLERANCE, score
from .replay_kernels import Unverifiable
from .subgraph import Subgraph, ref_name


class InputsOverwritten(Unverifiable):
    """Input dumps of a fused op that are not what their producers wrote: ``written`` gives,
    by input position, (producer, its output index, the values it wrote)."""

    def __init__(self, reason: str, written: dict[int, tuple[str, int, np.ndarray]]) -> None:
        super().__init__(reason)
        self.written = written


def check_inputs_written(
    replayer: Any,
    sub: Subgraph,
    outputs: list,
    flagged: bool,
    holding: frozenset[int] = frozenset(),
) -> None:
    """Raise :class:`InputsOverwritten` when an input dump of ``sub``'s fused op is not what
    its producer's output dump, in the same run, holds.

    - ``flagged`` (a proof would rest on the inputs, or an input dump holds an output's
      values, :func:`holding_inputs`; few ops): every input is held against its producer's
      output. An input of ``holding`` with no such dump of its size raises Unverifiable:
      nothing shows what the op read (a Data or view producer, a dump not taken).
    - Otherwise, only an input holding NaN or infinity where its producer wrote finite
      values, and only when an output's NaN/infinity differs from fusion off (``observed``
      infinite): a run without them reads nothing more.
    """
    if not flagged and not any(o.observed is not None and math.isinf(o.observed) for o in outputs):
        return
    fused = sub.fused
    written_by: dict[int, tuple[str, int, np.ndarray]] = {}
    first = ""
    for position in sorted(set(sub.boundary.values())):
        try:
            given = replayer.store.tensor("on", fused.name, "input", position)
        except MissingEvidence:
            continue
        if not flagged and np.isfinite(given).all():  # (the store gives float64 values)
            continue
        producer, index, written = _written(replayer, sub, position, given.size)
        if written is None:  # no task or not dumped: nothing to hold the input against
            if position in holding:
                raise Unverifiable(
                    f"not proven: input {position} of {fused.name} holds what its output holds "
                    "(an op writing over its own input leaves that), and no dump of its "
                    f"producer {producer} of that size shows what it read: its replay on "
                    "that input proves nothing"
                )
            continue
        changed = _changed(given.reshape(-1), written.reshape(-1), flagged)
        if changed:
            written_by[position] = (producer, index, written.reshape(given.shape))
            first = first or (
                f"not proven: input {position} of {fused.name} {changed} where its producer "
                f"{producer} wrote other values (its output {index}, same run): the input "
                f"changed after {producer} ran (dumps are taken after an op runs: "
                f"{fused.name} may have written over its own input); its replay on that "
                "input proves nothing"
            )
    if written_by:
        raise InputsOverwritten(first, written_by)


def _written(replayer: Any, sub: Subgraph, position: int, size: int) -> tuple:
    """(producer, its output index, what it wrote) for input ``position`` of ``sub``'s fused
    op: the first of its sources (:attr:`.subgraph.Subgraph.sources`, through views) with an
    output dump of ``size`` values; the direct producer and None when there is none."""
    sources = sub.sources.get(position) or [ref_name(sub.fused.data_inputs[position])]
    for producer, index in sources:
        try:
            written = replayer.store.tensor("on", producer, "output", index)
        except MissingEvidence:
            continue
        if written.size == size:
            return producer, index, written
    return (*sources[0], None)


def holding_inputs(replayer: Any, sub: Subgraph) -> frozenset[int]:
    """The inputs of ``sub``'s fused op whose dump holds what one of its output dumps holds,
    whole or at its head: the mark of an op that wrote its output over that input's memory
    (both are dumped after it ran). The arrays are in the evidence store already (the replay
    read them): a look, not a read of the producers' dumps for every op (+10% of the
    replay's wall on the 5,018-op case when every op downstream of an error read them).
    Constants (the replay reads them from fusion off) are not looked at, nor outputs of one
    value (zeros, or nothing, equal anything alike without shared memory)."""
    store, fused = replayer.store, sub.fused
    outputs = []
    for k, _ in sub.outputs:
        try:
            out = store.tensor("on", fused.name, "output", k).reshape(-1)
        except MissingEvidence:
            continue
        if out.size and out.max() != out.min():
            outputs.append(out)
    activations = {
        p for ref, p in sub.boundary.items() if not replayer.is_constant(ref_name(ref)[0])
    }
    holding = set()
    for position in sorted(activations) if outputs else ():
        try:
            given = store.tensor("on", fused.name, "input", position).reshape(-1)
        except MissingEvidence:
            continue
        for out in outputs:  # the same memory dumped twice: the same values, not close ones
            if out.size <= given.size and score(given[: out.size], out, "DT_FLOAT16") == 0.0:
                holding.add(position)
    return frozenset(holding)


def replay_on_written(replayer: Any, sub: Subgraph, overwritten: InputsOverwritten) -> tuple:
    """``sub`` replayed on what the producers of its changed inputs wrote (what the fused op
    read, unless something wrote there in between): ("ok", outputs, evidence) when every
    output agrees with it. Otherwise Unverifiable: a wrong op, or dumps of two steps, which
    a disagreement cannot tell apart."""
    given = {position: values for position, (_, _, values) in overwritten.written.items()}
    plan, evidence = replayer.gather(sub, given)
    outputs = replayer.scores(sub, plan, evidence)
    worst = max(o.score for o in outputs)
    if worst > MIN_TOLERANCE:
        raise Unverifiable(
            f"{overwritten.reason}; replayed on what the producer wrote, it disagrees too "
            f"(score {worst:.3g}): a wrong op, or input and output dumps of two steps"
        )
    evidence["inputs_from_producers"] = [
        f"{sub.fused.name}:input:{position} from {producer}:output:{index} (the input dump "
        "holds other values)"
        for position, (producer, index, _) in sorted(overwritten.written.items())
    ]
    return ("ok", outputs, evidence)


def _changed(given: np.ndarray, written: np.ndarray, every_value: bool) -> str:
    """How ``given`` differs from ``written`` ('' when it does not): NaN or infinity where
    ``written`` is finite, or (``every_value``) any value beyond float16's rounding.

    With ``every_value`` the score comes first: compiled, it takes no temporary on finite
    values, and it is within the rounding on almost every input."""
    differ = score(given, written, "DT_FLOAT16") if every_value else math.inf
    if differ <= MIN_TOLERANCE:  # NaN or infinity only where both hold them alike
        return ""
    appeared = int((np.isfinite(written) & ~np.isfinite(given)).sum())
    if appeared:
        return f"holds NaN or infinity in {appeared} values"
    if every_value and differ > MIN_TOLERANCE:
        return f"differs (score {differ:.3g} at float16's rounding)"
    return ""
