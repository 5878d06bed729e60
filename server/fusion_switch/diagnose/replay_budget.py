"""How the replay fits in ``compare --memory-budget`` (issue 16).

The budget bounded the comparison's workers only, and the replay came on top: a process beside
the comparison, holding float64 copies of a fused op's tensors, and at the end the comparing
process measuring a share of it too. On activations of a real network's size (dump files of
~38 MB) a run given 200 MB peaked at ~410 MB. Now:

- the replay's need is the replay process's base, its fusion-off graph, and float64 copies of the
  values of the fused op that needs most (by its dump's size and narrowest dtype);
- it runs beside the comparison only when one comparing worker and the replay's processes fit
  in the budget together; the comparison's workers then share what the replay leaves;
- the comparing process measures the end of the replay with it (``share``) only when one more
  replay's need fits beside those processes (the comparison's workers are gone by then);
- otherwise it runs after the comparison, in the comparing process, which then holds the rows
  and the replay's arrays but no comparison buffer;
- when even that does not fit, it is not run: the budget bounds the run, and the suspects stay
  unverified (as with ``--no-replay``); the note names the budget that would let it run.
  It used to run over the budget with a note (422-429 MiB for 300 MiB at 15,017 ops).

The estimates are upper bounds of what was measured (see the constants), as the comparison's
are (``compare.worker_memory``), which count the comparing process by what it holds when the
fit is made (its graphs, numpy) and its rows.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..compare.worker_memory import dump_dtypes, narrowest_bits
from .subgraph import fused_ops

# A replay process's own pages: interpreter, numpy, the kernels, the dump folders' indexes.
REPLAY_BASE_BYTES = 96 << 20
# Per byte of the fusion-off graph's file, whose ops it holds (with the fusion-on graph's
# view). The replay process's peak grows 3.6-4.1 bytes per graph byte from 40 to 20,000 ops
# (its whole peak: 42 MiB at 0.2 MiB of graph, 109 at 16.8, 299 at 66.9): 6 had it at 1.7-2x
# its peak, which ran the replay after the comparison where it fitted beside it.
REPLAY_BYTES_PER_GRAPH_BYTE = 4.5
# Float64 copies of a fused op's dumped values held at once: its inputs and outputs, the
# replayed members' outputs, the fusion-off outputs scored against them, the evidence cache.
# Measured ~1.25 on float16 dumps of 38 MB (~5 bytes per dumped byte); 2 leaves room for
# members that widen a tensor (a broadcast, a concatenation).
FLOAT64_COPIES = 2


def _dump_size(op: Any, folder: Any) -> int:
    return folder.latest_bytes(op.name) if folder is not None else 0


def copies_per_dump_byte(dtypes: Iterable[str]) -> int:
    """Bytes of replay memory per byte of a dump holding ``dtypes``: :data:`FLOAT64_COPIES`
    float64 copies of each value, at the narrowest of them (a float16 byte: 8; an int8 one:
    16)."""
    return max(1, FLOAT64_COPIES * 64 // narrowest_bits(dtypes))


def replay_bytes(on_graph: Any, on_dumps: Any, off_graph_path: Any = None) -> int:
    """Memory one replay process needs: its base, the fusion-off graph (``off_graph_path``, its
    file), and the float64 copies of the fused op that needs most (one sub-graph at a time)."""
    largest = max(
        (
            _dump_size(op, on_dumps) * copies_per_dump_byte(dump_dtypes(op, on_graph))
            for op in fused_ops(on_graph)
        ),
        default=0,
    )
    graph = 0
    if off_graph_path is not None:
        try:
            graph = os.stat(off_graph_path).st_size
        except OSError:  # a graph that cannot be read again is the replay's to report
            graph = 0
    return REPLAY_BASE_BYTES + int(REPLAY_BYTES_PER_GRAPH_BYTE * graph) + largest


@dataclass(frozen=True)
class ReplayFit:
    """Where the replay runs within a memory budget."""

    beside: bool  # beside the comparison (False: after it, in the comparing process)
    processes: int  # replay processes beside the comparison
    share: bool  # the comparing process measures the replay's end once its rows are done
    reserved: int  # bytes of the budget the replay holds while the tensors are compared
    note: str | None = None  # why the replay waits for the comparison, for the summary
    runs: bool = True  # False: not even after the comparison does it fit (not run)


def fit_replay(
    budget: int,
    replay_need: int,
    worker_need: int,
    processes: int,
    held_after: int | None = None,
) -> ReplayFit:
    """Fit the replay (``replay_need`` bytes per process, up to ``processes`` of them beside
    the comparison) and at least one comparing worker (``worker_need``) in ``budget``.
    ``held_after``: what the comparing process holds once its tensors are compared (its
    base and rows: the comparison's buffers are let go, ``release_work_buffers``); by default
    ``worker_need``."""
    room = (budget - worker_need) // max(1, replay_need)
    if room < 1:
        mib = 1 << 20
        beside = (
            f"beside the comparison, the replay (~{replay_need // mib} MiB) and one comparing "
            f"worker (~{worker_need // mib} MiB) would not fit"
        )
        after = _after_bytes(worker_need if held_after is None else held_after, replay_need)
        if after > budget:
            return _not_run(budget, after, beside + "; ")
        return ReplayFit(
            beside=False,
            processes=1,
            share=False,
            reserved=0,
            note=(
                f"replay: run after the comparison to stay within --memory-budget "
                f"({budget // mib} MiB): {beside}"
            ),
        )
    beside = max(1, min(processes, room))
    share = (beside + 1) * replay_need <= budget
    return ReplayFit(True, beside, share, beside * replay_need)


def fit_source(
    budget: int | None, inputs: Any, workers: int | None, scheduler: str | None = None
) -> ReplayFit | None:
    """:func:`fit_replay` for a replay of the engine's ``inputs`` (``compare.discover.Inputs``:
    graphs and indexed dump folders) beside a comparison of the same dumps, with ``workers``
    cores in all. None, the replay beside the comparison as always: no budget, a
    ``scheduler``'s (the budget sets the Dask workers' limits), or one core (the replay runs
    after the comparison anyway).

    The comparing process is counted as ``engine.pair`` counts it, by the same
    ``inputs.comparing_bound`` (``compare.worker_memory``: what this process holds now, the
    rows, and the fusion-on op that needs most, by its dump's size and dtypes: the headers
    narrow that only once the tensors are paired)."""
    if not budget or scheduler:
        return None
    from ..compare.worker_memory import resident_bytes
    from .replay_cores import overlapping_processes

    bound = inputs.comparing_bound
    worker = bound.process_bytes(resident_bytes())
    replay = replay_bytes(inputs.on_graph, inputs.on_dir, getattr(inputs.off_graph, "path", None))
    held = worker - bound.largest_need
    if (workers or os.cpu_count() or 1) < 2:  # the replay runs after the comparison anyway
        after = _after_bytes(held, replay)
        return None if after <= budget else _not_run(budget, after, "")
    return fit_replay(budget, replay, worker, overlapping_processes(workers), held)


def _after_bytes(held_after: int, replay_need: int) -> int:
    """What the comparing process holds replaying after its comparison: what it held then,
    and the replay's graph and arrays (its base is the replay's)."""
    return held_after + replay_need - REPLAY_BASE_BYTES


def _not_run(budget: int, after: int, beside: str) -> ReplayFit:
    mib = 1 << 20
    return ReplayFit(
        beside=False,
        processes=0,
        share=False,
        reserved=0,
        runs=False,
        note=(
            f"replay: not run, to stay within --memory-budget ({budget // mib} MiB): {beside}"
            f"the comparing process would hold ~{after // mib} MiB with it after the "
            "comparison; any suspect stays unverified (named by the comparison alone): "
            f"--memory-budget {-(-after // mib)}M or more lets the replay run"
        ),
    )
