"""Replay every fused op's original sub-graph in numpy and measure the error the fusion introduces.

For a fused op (fusion-on graph), its original ops (:mod:`.subgraph`) are evaluated with the
reference kernels (:mod:`.kernels`) in float64, each output rounded to its fusion-off dtype:

- boundary inputs come from the fused op's **own fusion-on input dumps**, so upstream drift is
  part of the input and cancels out;
- parameters (weights, folded BatchNorm/scale constants) come from the **fusion-off dumps of
  the original ops' inputs**, never from folded fusion-on constants; a constant the fused op
  carries unchanged (same original tensor) is used when the fusion-off dump is missing;
- values inside the sub-graph are computed.

An op the replay flags is proven only when its evidence holds together
(:func:`.replay_parameters.check_parameters`): the dump names, per output, the original op the
-f graph names; no parameter taken from the fused op's side (a rule may have folded it in
place); a weight both runs dumped the same in both, unless the replay with the fused op's own
value disagrees too and the same rule's other ops show the runs held the same weights
(:mod:`.replay_fold`). An original op the
fusion-off graph lacks is never read as a constant.

The replay is compared with the fused op's real output (score: :mod:`.noise`); the verdicts
(:mod:`.replay_decide`): ``introduces`` (beyond the tolerance), ``propagates`` (replay agrees,
the output differs from fusion off because the inputs did), ``clean`` (both agree),
``unverified`` with the reason.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import multiprocessing
import os
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import numpy as np

from ..readers.array_reuse import reusing_arrays
from ..readers.graph_model import CONSTANT_TYPES, NO_TASK_TYPES
from .evidence import EvidenceStore, MissingEvidence
from .kernels.blas import one_thread
from .noise import (
    INTEGER_DTYPES,
    MIN_TOLERANCE,
    NoiseFloor,
    coarser,
    floor_of,
    round_to,
    score,
    worst_channel,
)
from .replay_decide import CLEAN, INTRODUCES, PROPAGATES, UNVERIFIED, decide
from .replay_fold import FoldWitness
from .replay_handed import handed_over, output_values
from .replay_inputs import (
    InputsOverwritten,
    check_inputs_written,
    holding_inputs,
    replay_on_written,
)
from .replay_kernels import Kernels, Unverifiable, out_dtype
from .replay_noise import measure_noise, output_channels
from .replay_own_dumps import members_off_their_dumps
from .replay_parameters import check_parameters
from .replay_range import check_range
from .replay_result import OutputReplay, ReplayReport, ReplayResult
from .replay_share import MIN_HANDED, MIN_HANDED_ELEMENTS, ChildShare
from .replay_unrounded import rounded_keys, with_unrounded
from .subgraph import (
    GraphIndex,
    NotReconstructible,
    Subgraph,
    build_subgraph,
    fused_ops,
    outputs_of,
    ref_name,
)

# ----------------------------------------------------------------------------- evaluation


class Replayer:
    """Evaluates sub-graphs of one run. The localisation's variants replace one member's
    outputs (``evaluate``'s ``reuse`` and ``replaced``)."""

    def __init__(self, store: EvidenceStore, off: GraphIndex, kernels: Kernels) -> None:
        self.store = store
        self.off = off
        self.kernels = kernels
        self.rounding = round_to  # each member's output (replay_range notes the fp16 range)

    def gather(
        self, sub: Subgraph, given: dict[int, np.ndarray] | None = None
    ) -> tuple[dict[str, list], dict]:
        """Inputs of every member: (member name -> list of arrays/refs, evidence used).
        ``given``: values of the fused op's inputs, by position, instead of its dump's."""
        inside = sub.member_names
        plan: dict[str, list] = {}
        evidence: dict[str, Any] = {"boundary": [], "parameters": [], "from_on_side": []}
        for member in sub.members:
            row: list = []
            for i, ref in enumerate(member.data_inputs):
                src = ref_name(ref)[0]
                if src in inside:
                    row.append(("inside", ref))
                    continue
                producer = self.off.ops.get(src)
                if producer is None and src in sub.absent:  # not a constant: unknown
                    raise Unverifiable(
                        f"sub-graph not reconstructible: {member.name} reads {ref}, an output "
                        f"of the original op {src}, which the fusion-off graph lacks (is -cf "
                        "the graph of the fusion-off run?)"
                    )
                constant = self.is_constant(src)
                if not constant and ref in sub.boundary:
                    position = sub.boundary[ref]
                    value = given.get(position) if given else None
                    row.append(("value", self._on_input(sub, position) if value is None else value))
                    evidence["boundary"].append(f"{sub.fused.name}:input:{position} as {ref}")
                    continue
                if constant or (producer is not None and producer.type in NO_TASK_TYPES):
                    row.append(("value", self._parameter(sub, member, i, ref, evidence)))
                    continue
                raise Unverifiable(
                    f"input not dumped: {ref} (read by {member.name}) is not an input of the "
                    f"fused op {sub.fused.name}"
                )
            plan[member.name] = row
        return plan, evidence

    def is_constant(self, src: str) -> bool:
        """Op ``src``'s outputs are parameters of the replay: a constant of the fusion-off
        graph, or an op it does not list (read from the consumer's fusion-off dump)."""
        producer = self.off.ops.get(src)
        return producer is None or producer.type in CONSTANT_TYPES

    def _on_input(self, sub: Subgraph, position: int) -> np.ndarray:
        try:
            return self.store.tensor("on", sub.fused.name, "input", position)
        except MissingEvidence as missing:
            # its whole dump missing, not an input of it (a review: "input not dumped" then)
            what = "input" if self.store.has("on", sub.fused.name) else "fused op"
            raise Unverifiable(f"{what} not dumped: {missing.reason}", missing=True) from None

    def _parameter(self, sub: Subgraph, member: Any, i: int, ref: str, evidence: dict) -> Any:
        try:
            value = self.store.tensor("off", member.name, "input", i)
            evidence["parameters"].append(f"{ref} from the fusion-off dump of {member.name}")
            return value
        except MissingEvidence as missing:
            reason = missing.reason
            unreadable = missing.unreadable
        position = sub.boundary.get(ref)
        if position is not None:  # the fused op carries the original constant unchanged
            value = self._on_input(sub, position)
            evidence["from_on_side"].append(
                f"{ref} from {sub.fused.name}:input:{position} (unfolded constant)"
            )
            return value
        raise Unverifiable(f"parameter {ref} of {member.name} missing: {reason}", unreadable)

    def evaluate(
        self,
        sub: Subgraph,
        plan: dict[str, list],
        reuse: tuple[dict[str, np.ndarray], Any] | None = None,
        *,
        outputs_only: bool = False,
        replaced: list[np.ndarray] | None = None,
        unrounded: bool = False,
    ) -> dict[str, np.ndarray]:
        """Values of every member output. ``reuse`` = (values of a previous evaluation, member):
        members before that one are taken from it (a variant changes only what follows).
        ``replaced``: with ``reuse``, that member's outputs, rounded as this method rounds
        them, instead of its kernel's (a variant the caller computed on :meth:`inputs_of`).

        ``outputs_only``: each value is let go once the last member reading it has run, unless
        a fused output stands for it; the result then holds only those. On activations of a
        real network's size (tens of MB each in float64) this keeps one or two members' outputs
        alive instead of all of them. A localisation's unchanged replay needs them all.

        ``unrounded``: only the values fused outputs stand for, and the outputs of ops whose
        purpose is a conversion, are rounded to their dtype (:mod:`.replay_unrounded`)."""
        values: dict[str, np.ndarray] = {}
        kept, let_go = _lifetimes(sub, plan) if outputs_only else (None, None)
        rounded = rounded_keys(sub) if unrounded else None
        skipping = reuse is not None
        for position, member in enumerate(sub.members):
            if skipping and member is reuse[1]:
                skipping = False
            if skipping:
                values.update(outputs_of(reuse[0], member.name))
                continue
            inputs = _member_inputs(member, plan, values)
            given = replaced is not None and reuse is not None and member is reuse[1]
            outs = replaced if given else self.kernels.run(member, inputs)
            del inputs
            if let_go is not None:  # before rounding: at most one more value alive
                for key in let_go[position]:
                    values.pop(key, None)
            for j in range(len(outs)):
                key = f"{member.name}:{j}"
                if kept is None or key in kept:
                    as_is = given or (rounded is not None and not rounded(member, key))
                    values[key] = outs[j] if as_is else self.rounding(outs[j], out_dtype(member, j))
            del outs
        return values

    def inputs_of(
        self, sub: Subgraph, plan: dict[str, list], reuse: tuple[dict[str, np.ndarray], Any]
    ) -> list:
        """The inputs :meth:`evaluate` with this ``reuse`` gives its member."""
        base, target = reuse
        values: dict[str, np.ndarray] = {}
        for member in sub.members:
            if member is target:
                return _member_inputs(member, plan, values)
            values.update(outputs_of(base, member.name))
        raise ValueError(f"{getattr(target, 'name', target)} is not a member of {sub.fused.name}")

    def real_output(self, sub: Subgraph, index: int) -> np.ndarray:
        try:
            return self.store.tensor("on", sub.fused.name, "output", index)
        except MissingEvidence as missing:
            raise Unverifiable(
                f"fused output not dumped: {missing.reason}", missing=missing.unreadable
            ) from None

    def compare(
        self,
        sub: Subgraph,
        values: dict[str, np.ndarray],
        with_observed: bool,
        *,
        release: bool = False,
    ) -> list[OutputReplay]:
        """The scores of every fused output. ``release``: each replayed value is taken out of
        ``values`` once its last output is scored, before the fusion-off output is read for
        the observed score (on real activations each of the three is tens of MB)."""
        results = []
        last = {origin: k for k, origin in sub.outputs}
        for k, origin in sub.outputs:
            if origin not in values:
                name = ref_name(origin)[0]
                raise Unverifiable(
                    f"sub-graph not reconstructible: output {k} stands for {origin}, which "
                    f"its original ops do not compute ({name} is not among them)"
                )
            replay = values[origin]
            real = self.real_output(sub, k)
            if real.size != replay.size:
                raise Unverifiable(
                    f"output {k}: {real.size} values dumped, the replay of {origin} has "
                    f"{replay.size}"
                )
            producer = self.off.ops[ref_name(origin)[0]]
            dtype = coarser(out_dtype(producer, ref_name(origin)[1]), out_dtype(sub.fused, k))
            replay_score = score(real, replay, dtype)
            steps, nonfinite = _steps_and_nonfinite(real, replay, dtype, replay_score)
            index = ref_name(origin)[1]
            channels = output_channels(sub.fused, k, producer, index, real, replay, dtype)
            del replay
            if release and last[origin] == k:
                del values[origin]
            observed = None
            if with_observed:
                try:
                    off = self.store.tensor("off", producer.name, "output", ref_name(origin)[1])
                    if off.size == real.size:
                        observed = score(real, off, dtype)
                except MissingEvidence:
                    observed = None
            channel = None if channels is None else worst_channel(channels)
            results.append(
                OutputReplay(
                    k, origin, dtype, replay_score, observed, channel, channels, steps, nonfinite
                )
            )
        return results

    def scores(
        self, sub: Subgraph, plan: dict[str, list], evidence: dict, *, with_observed: bool = True
    ) -> list[OutputReplay]:
        """The scores of ``sub``'s outputs as :func:`measure_one` judges them: the replay's,
        or where they disagree, the lower of it and the replay without the original ops'
        intermediate roundings (:mod:`.replay_unrounded`)."""
        values = self.evaluate(sub, plan, outputs_only=True)
        outputs = self.compare(sub, values, with_observed=with_observed, release=True)
        del values
        outputs = with_unrounded(self, sub, plan, outputs, evidence)
        if any(o.nonfinite for o in outputs):  # the fused op's own doing only from finite ones
            evidence["inputs_finite"] = all(
                bool(np.isfinite(value).all())
                for row in plan.values()
                for kind, value in row
                if kind == "value" and isinstance(value, np.ndarray)
            )
        return [dataclasses.replace(o, channels=None) for o in outputs]


def _steps_and_nonfinite(
    real: np.ndarray, replay: np.ndarray, dtype: str, found: float
) -> tuple[float | None, str | None]:
    """:attr:`.OutputReplay.steps` and :attr:`.OutputReplay.nonfinite` of a scored output."""
    if not math.isfinite(found):
        return None, "replay" if not bool(np.isfinite(replay).all()) else "dump"
    if dtype not in INTEGER_DTYPES or real.size == 0:
        return None, None
    return float(np.max(np.abs(real.reshape(-1) - replay.reshape(-1)))), None


def _member_inputs(member: Any, plan: dict[str, list], values: dict[str, np.ndarray]) -> list:
    try:
        return [values[v] if kind == "inside" else v for kind, v in plan[member.name]]
    except KeyError as missing:
        raise Unverifiable(
            f"sub-graph not reconstructible: {member.name} reads {missing.args[0]}, "
            "which its producer's replay does not give"
        ) from None


def _lifetimes(sub: Subgraph, plan: dict[str, list]) -> tuple[set[str], list[list[str]]]:
    """The values of ``sub`` worth keeping (a later member reads them or a fused output stands
    for them) and, by member position, those its last reader is done with."""
    last: dict[str, int] = {}
    for position, member in enumerate(sub.members):
        for kind, ref in plan[member.name]:
            if kind == "inside":
                last[ref] = position
    let_go: list[list[str]] = [[] for _ in sub.members]
    outputs = {origin for _, origin in sub.outputs}
    for ref, position in last.items():
        if ref not in outputs:
            let_go[position].append(ref)
    return outputs | last.keys(), let_go


# ----------------------------------------------------------------------------- the run


@reusing_arrays()
def replay_run(
    on_graph: Any,
    off_graph: Any,
    store: EvidenceStore,
    *,
    lookup: Callable[[str], Any] | None = None,
    rules_of: Callable[[Any, list[str]], tuple[list[str], str]] | None = None,
    localise: Callable[..., dict | None] | None = None,
    workers: int = 1,
    store_factory: Callable[[], EvidenceStore] | None = None,
    processes: int | None = None,
    share: ChildShare | None = None,
) -> ReplayReport:
    """Replay every fused op of ``on_graph``; see the module docstring.

    The noise floor is sampled here first, over all the original ops in order, so it does not
    depend on how the rest is split. Measuring the sub-graphs (reading dumps, evaluating,
    scoring) is split into ``workers`` chunks, each with its own evidence store when
    ``store_factory`` gives one; ``processes`` (None: one per chunk) forked processes measure
    them. Any ``workers`` and ``processes`` give the same report (files read are counted once
    however many stores read them). The verdicts are given here; a flagged op is localised
    where it was measured, as soon as it was (:class:`Judge`). ``share``: when the chunks are
    measured one after the other, what is not started may be handed to a waiting parent
    (:mod:`.replay_share`); the report is the same."""
    with one_thread():  # held for every kernel: each call then leaves the count alone
        started = time.perf_counter()
        on, off = GraphIndex.of(on_graph), GraphIndex.of(off_graph)
        kernels = Kernels(lookup)
        replayer = Replayer(store, off, kernels)
        subs: list[tuple[int, Any, Subgraph | str]] = []
        for order, op in enumerate(fused_ops(on_graph)):
            try:
                subs.append((order, op, build_subgraph(op, on, off)))
            except NotReconstructible as error:
                subs.append((order, op, error.reason))
        replayable = [sub for _, _, sub in subs if not isinstance(sub, str)]
        noise = _noise_of(replayer, replayable)
        # unreadable dumps in the order a one-store run finds them, however the measuring is split
        # (summary.json names the first): the noise floor's, the measuring's, the localisation's
        found_by_noise = dict(store.unreadable)
        judge = Judge(noise, rules_of, localise) if localise is not None else None
        parts = _measure_parts(
            replayer, replayable, workers, store_factory, processes, share, judge
        )
        measured: dict[str, tuple] = {}
        localised: dict[str, dict | None] = {}
        files_read: set[str] = set()  # by any store; this one's are added once all is measured
        unreadable: dict = dict(found_by_noise)
        for part in parts:
            measured.update(part["measured"])
            localised.update(part.get("localised", {}))
            files_read |= part["files_read"]
            unreadable.update(part["unreadable"])
        results = []
        witness = FoldWitness(
            replayer,
            [(op, sub) for _, op, sub in subs if not isinstance(sub, str)],
            measured,
            noise,
            lambda op, sub: _rules_of(op, sub, rules_of)[0],
        )
        for order, op, sub in subs:
            result = _result_of(op, on.order.get(op.name, order), sub, rules_of)
            if isinstance(sub, str):
                result.reason = sub
                results.append(result)
                continue
            result.members = [m.name for m in sub.members]
            result.member_types = [m.type for m in sub.members]
            decide(
                result,
                sub,
                measured[op.name],
                noise,
                functools.partial(witness, op, sub),
                functools.partial(members_off_their_dumps, replayer, sub, noise),
            )
            if result.verdict == INTRODUCES and localise is not None:
                if op.name in localised:  # by the process that measured it (Judge)
                    result.localisation = localised[op.name]
                else:  # a part measured without the judge
                    result.localisation = localise(replayer, sub, result)
            results.append(result)
        return ReplayReport(
            results,
            noise,
            seconds=time.perf_counter() - started,
            files_read=len(files_read | store.files_read),
            unreadable={**unreadable, **_found_since(store.unreadable, found_by_noise)},
            kernels_available=kernels.available,
        )


def _result_of(op: Any, order: int, sub: Subgraph | str, rules_of: Callable | None) -> ReplayResult:
    """A fused op's result before its verdict: the rules that built it and where from."""
    result = ReplayResult(op.name, op.type, order, UNVERIFIED)
    result.rules, result.rule_source = _rules_of(op, sub, rules_of)
    return result


def _rules_of(op: Any, sub: Subgraph | str, rules_of: Callable | None) -> tuple[list[str], str]:
    """The rules that built a fused op, and where they were read from."""
    types = [] if isinstance(sub, str) else [m.type for m in sub.members]
    if rules_of is not None:
        return rules_of(op, types)
    return list(dict.fromkeys(reversed(op.pass_names))), "graph attributes"


class Judge:
    """Localises a sub-graph where it has just been measured, when its scores flag it: the
    localisations then run beside the rest of the measuring instead of one after the other
    at the end, on one core (issue 16). It decides on the result :func:`replay_run` builds,
    so the localisation is the one it would compute. Called, it gives None when the op is
    not flagged, otherwise a 1-tuple (a localisation may be None). ``between`` is called
    between the localisation's variants (a flagged op on real activations takes seconds)."""

    def __init__(self, noise: NoiseFloor, rules_of: Callable | None, localise: Callable) -> None:
        self.noise = noise
        self.rules_of = rules_of
        self.localise = localise

    def __call__(
        self, replayer: Replayer, sub: Subgraph, measured: tuple, between: Callable | None = None
    ) -> tuple[dict | None] | None:
        result = ReplayResult(sub.fused.name, sub.fused.type, 0, UNVERIFIED)
        decide(result, sub, measured, self.noise)  # reads no rule, and localise no order
        if result.verdict != INTRODUCES:
            return None
        result.rules, result.rule_source = _rules_of(sub.fused, sub, self.rules_of)
        # the arrays cached for the sub-graphs measured before this one are not needed by
        # its variants: ~50 MB less peak on a real network's activations
        replayer.store.release_arrays()
        return (self.localise(replayer, sub, result, between=between),)

    def handed(self, subs: list[Subgraph]) -> tuple:
        """What the parent needs to judge ``subs`` as this judge does (picklable): the noise
        floor and their rules (a handed op has no graph to read them from)."""
        return (
            self.noise,
            {sub.fused.name: _rules_of(sub.fused, sub, self.rules_of) for sub in subs},
        )

    @classmethod
    def of_handed(cls, judging: tuple, localise: Callable) -> Judge:
        """The judge :meth:`handed` describes, in the parent."""
        noise, rules = judging
        return cls(noise, lambda op, types: rules[op.name], localise)


def _found_since(unreadable: dict, before: dict) -> dict:
    """The entries of ``unreadable`` added or changed since it was ``before``."""
    return {path: why for path, why in unreadable.items() if before.get(path) != why}


_MIN_PARALLEL_OPS = 64  # fewer fused ops: a process pool costs more than it saves
_JOB: tuple | None = None  # (subs, off index, lookup, store factory) inherited by forked workers


def _measure_parts(
    replayer: Replayer,
    subs: list[Subgraph],
    workers: int,
    store_factory: Callable[[], EvidenceStore] | None,
    processes: int | None = None,
    share: ChildShare | None = None,
    judge: Judge | None = None,
) -> list[dict]:
    global _JOB
    chunks = _chunks(subs, max(1, workers))
    few = len(subs) < _MIN_PARALLEL_OPS  # no pool; but a waiting parent may still share them
    if (
        len(chunks) < 2
        or store_factory is None
        or (few and share is None)
        or "fork" not in multiprocessing.get_all_start_methods()
    ):
        # counted here
        return [{**_measure(replayer, subs, judge), "files_read": set(), "unreadable": {}}]
    _JOB = (chunks, replayer.off, replayer.kernels.lookup, store_factory, judge)
    pool_size = min(len(chunks), processes or len(chunks)) - 1
    if pool_size < 1 or few:
        try:  # one chunk after the other, each with its own store, as the workers would
            return _measure_serially(chunks, share)
        finally:
            _JOB = None
    try:
        context = multiprocessing.get_context("fork")
        # this process measures the first chunk itself (one process fewer to start) with a
        # store of its own, as a worker would: the counts of files read stay per chunk
        with ProcessPoolExecutor(
            pool_size, mp_context=context, initializer=_worker_start, initargs=(os.getpid(),)
        ) as pool:
            others = pool.map(_measure_chunk, range(1, len(chunks)))
            first = _measure_chunk(0)
            return [first, *others]
    except (OSError, BrokenProcessPool):
        return [{**_measure(replayer, subs, judge), "files_read": set(), "unreadable": {}}]
    finally:
        _JOB = None


def _worker_start(parent: int) -> None:
    """A measuring worker ends with the process that started it, however that one ends."""
    from ..compare.workers import die_with_parent

    die_with_parent(parent)


def _chunks(subs: list[Subgraph], n: int) -> list[list[Subgraph]]:
    size = max(1, -(-len(subs) // n))
    return [subs[i : i + size] for i in range(0, len(subs), size)] or [[]]


@reusing_arrays()
def _measure_chunk(index: int) -> dict:
    assert _JOB is not None
    chunks, off, lookup, store_factory, judge = _JOB
    return _measure(Replayer(store_factory(), off, Kernels(lookup)), chunks[index], judge)


def _noise_of(replayer: Replayer, subs: list[Subgraph]) -> NoiseFloor:
    """The noise floor sampled on the original ops of ``subs`` (in their order)."""
    noise = NoiseFloor()
    members: dict[str, Any] = {}
    for sub in subs:
        for m in sub.members:
            members.setdefault(m.name, m)
    measure_noise(replayer, list(members.values()), noise)
    return noise


def measure_one(replayer: Replayer, sub: Subgraph) -> tuple:
    """The scores of one sub-graph: ("ok", outputs, evidence) or ("unverified", why, missing)."""
    try:
        plan, evidence = replayer.gather(sub)
        outputs = replayer.scores(sub, plan, evidence)
        flagged = max(o.score for o in outputs) > MIN_TOLERANCE  # a proof rests on them
        # an op writing over its own input leaves an input dump holding its output, on which a
        # Relu-like op agrees with its replay whatever it computed ("clean", "propagates")
        holding = holding_inputs(replayer, sub)
        try:
            check_inputs_written(replayer, sub, outputs, flagged or bool(holding), holding)
        except InputsOverwritten as overwritten:
            return replay_on_written(replayer, sub, overwritten)
        if flagged:
            check_range(replayer, sub, plan)
            check_parameters(replayer, sub, plan, evidence)
        return ("ok", outputs, evidence)
    except Unverifiable as error:
        return ("unverified", error.reason, error.missing)


def _measure(replayer: Replayer, subs: list[Subgraph], judge: Judge | None = None) -> dict:
    """Scores of some sub-graphs, the localisations of the flagged ones (with ``judge``), the
    files read for them and the unreadable ones (picklable)."""
    part: dict = {"measured": {}, "localised": {}}
    for sub in subs:
        _measure_into(replayer, sub, judge, part)
    return {
        **part,
        "files_read": set(replayer.store.files_read),
        "unreadable": dict(replayer.store.unreadable),
    }


def _measure_into(
    replayer: Replayer,
    sub: Subgraph,
    judge: Judge | None,
    part: dict,
    between: Callable[[], None] | None = None,
) -> None:
    """Measure ``sub`` into ``part`` (its ``measured`` and ``localised``), localising it
    there when it is flagged (``between``: see :class:`Judge`)."""
    measured = part["measured"][sub.fused.name] = measure_one(replayer, sub)
    decided = judge(replayer, sub, measured, between) if judge is not None else None
    if decided is not None:
        part["localised"][sub.fused.name] = decided[0]


def _measure_serially(chunks: list[list[Subgraph]], share: ChildShare | None) -> list[dict]:
    """The chunks one after the other, each with its store, as :func:`_measure_chunk` would
    measure them. Whenever the parent asks (looked at between sub-graphs and between a
    localisation's variants), the second half of what is not started goes to it
    (:mod:`.replay_share`), from the end, whatever chunks it spans: each part handed over
    comes before the ones handed over earlier, and after all that is measured here. What
    comes back is a last part, in that order, so that files and missing evidence are found
    in the order a run without the parent finds them."""
    assert _JOB is not None
    _, off, lookup, store_factory, judge = _JOB
    planned = [(index, sub) for index, chunk in enumerate(chunks) for sub in chunk]
    handed: list[list[Subgraph]] = []  # the parts handed over, in the order given
    start, end = 0, len(planned)  # planned[start:end] is left to measure here

    def offer() -> None:
        nonlocal end
        if share is None or not share.asked():
            return
        take = (end - start) // 2
        given = [later for _, later in planned[end - take : end]]
        worth = take >= MIN_HANDED or (take > 0 and output_values(given) >= MIN_HANDED_ELEMENTS)
        judging = (judge.handed(given),) if judge is not None and worth else ()
        if worth and share.give(*handed_over(given, off), *judging):
            end -= take
            handed.append(given)
        else:
            share.decline()

    parts: list[dict] = []
    stores: list[EvidenceStore] = []  # each part's
    chunk = -1
    while start < end:
        index, sub = planned[start]
        if index != chunk:
            chunk = index
            replayer = Replayer(store_factory(), off, Kernels(lookup))
            stores.append(replayer.store)
            parts.append({"measured": {}, "localised": {}})
        offer()
        start += 1
        _measure_into(replayer, sub, judge, parts[-1], offer)
    if share is not None:
        share.decline()
    for part, store in zip(parts, stores, strict=True):
        part["files_read"] = set(store.files_read)
        part["unreadable"] = dict(store.unreadable)
    if handed:
        parts.append(_handed_back(handed, share, off, lookup, store_factory, judge))
    return parts


def _handed_back(
    handed: list[list[Subgraph]],
    share: ChildShare | None,
    off: GraphIndex,
    lookup: Any,
    store_factory: Callable[[], EvidenceStore],
    judge: Judge | None,
) -> dict:
    """The parts the parent measured, as one part in the order a serial run measures them
    (the last handed over first); one the parent did not measure is measured here."""
    backs = share.results() if share is not None else [None] * len(handed)
    part: dict = {"measured": {}, "localised": {}, "files_read": set(), "unreadable": {}}
    replayer: Replayer | None = None
    for given, back in reversed(list(zip(handed, backs, strict=True))):
        if back is None:  # the parent failed: measured here, as without it
            replayer = replayer or Replayer(store_factory(), off, Kernels(lookup))
            before = dict(replayer.store.unreadable)
            for sub in given:
                _measure_into(replayer, sub, judge, part)
            part["files_read"] |= replayer.store.files_read
            part["unreadable"].update(_found_since(replayer.store.unreadable, before))
        else:
            part["measured"].update(back["measured"])
            part["localised"].update(back.get("localised", {}))
            part["files_read"] |= set(back["files_read"])
            part["unreadable"].update(back["unreadable"])
    return part


@reusing_arrays()
def measure_handed(
    subs: list[Subgraph], off_ops: dict[str, Any], store: EvidenceStore, judge: Judge | None = None
) -> dict:
    """What the parent measures for the child (:func:`.replay_share.help_child`): the scores
    of ``subs``, the localisations of the flagged ones (with ``judge``), the files read (as
    text) and the unreadable ones, in the order found."""
    part = _measure(Replayer(store, GraphIndex(off_ops, {}, {}), Kernels()), subs, judge)
    return {**part, "files_read": sorted(part["files_read"])}


__all__ = [
    "CLEAN",
    "INTRODUCES",
    "PROPAGATES",
    "UNVERIFIED",
    "ReplayReport",
    "ReplayResult",
    "floor_of",
    "replay_run",
]
