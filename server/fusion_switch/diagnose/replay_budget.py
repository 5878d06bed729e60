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
# What the replay adds to the comparing process when it runs there, after the comparison:
# its modules and structures (3.5-4.4 MiB measured), its fusion-off graph (3.2-3.7 bytes per
# graph byte from 0.2 to 50 MiB of graph) and the copies (1.03x the estimate above on
# activations of a real network's size); ~10% over each measured maximum.
AFTER_FIXED_BYTES = 8 << 20
AFTER_BYTES_PER_GRAPH_BYTE = 4.1
AFTER_COPIES_MARGIN = 1.1
# While a fused op's float64 arrays fit in the evidence store's cache (``evidence``: 32 MiB
# of arrays, 24 files of up to 128 KiB), the cache fills beside them, with working arrays:
# 7-43 MiB measured beyond the above with dump files of 0.4-3.4 MiB (13-28 bytes per byte of
# the largest), none once an op's arrays outgrow the cache (one of them is then the cache).
AFTER_CACHE_BYTES = 51 << 20
AFTER_CACHE_PER_FILE_BYTE = 32
AFTER_CACHED_COPIES = 64 << 20  # copies of an op whose arrays fit in the cache: two of 32 MiB


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
    return _process_need(*_replay_parts(on_graph, on_dumps, off_graph_path))


def replay_bytes_after(on_graph: Any, on_dumps: Any, off_graph_path: Any = None) -> int:
    """What the replay adds to the comparing process run there after the comparison (see
    :data:`AFTER_FIXED_BYTES` and :data:`AFTER_CACHE_BYTES`): its graph, and the larger of
    the largest op's copies alone and the cache filled beside an op that fits in it."""
    graph, largest = _replay_parts(on_graph, on_dumps, off_graph_path)
    return added_after(graph, largest, _largest_file(on_graph, on_dumps))


def _process_need(graph: int, largest: int) -> int:
    return REPLAY_BASE_BYTES + int(REPLAY_BYTES_PER_GRAPH_BYTE * graph) + largest


def added_after(graph: int, largest: int, largest_file: int) -> int:
    """What the replay adds to the comparing process after the comparison, from the fusion-off
    graph file's bytes, the copies of the fused op that needs most and the largest dump file."""
    cache = min(AFTER_CACHE_BYTES, AFTER_CACHE_PER_FILE_BYTE * largest_file)
    arrays = max(largest, cache + min(largest, AFTER_CACHED_COPIES))
    return (
        AFTER_FIXED_BYTES
        + int(AFTER_BYTES_PER_GRAPH_BYTE * graph)
        + int(AFTER_COPIES_MARGIN * arrays)
    )


def _largest_file(on_graph: Any, on_dumps: Any) -> int:
    """The largest dump file of the fusion-on graph's ops (the evidence cache's unit)."""
    return max((_dump_size(op, on_dumps) for op in getattr(on_graph, "ops", ())), default=0)


def _replay_parts(on_graph: Any, on_dumps: Any, off_graph_path: Any) -> tuple[int, int]:
    """The fusion-off graph file's bytes and the copies of the fused op that needs most."""
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
    return graph, largest


@dataclass(frozen=True)
class ReplayFit:
    """Where the replay runs within a memory budget."""

    beside: bool  # beside the comparison (False: after it, in the comparing process)
    processes: int  # replay processes beside the comparison
    share: bool  # the comparing process measures the replay's end once its rows are done
    reserved: int  # bytes of the budget the replay holds while the tensors are compared
    why: str = ""  # why not beside the comparison (empty on one core: never beside)
    budget: int = 0
    added: int = 0  # bytes the replay adds to the comparing process after the comparison
    held_after: int = 0  # the comparing process then, estimated (see after_comparison)

    @property
    def note(self) -> str | None:
        """Why the replay waits for the comparison, for the summary (None: one core)."""
        if not self.why:
            return None
        return (
            f"replay: run after the comparison to stay within --memory-budget "
            f"({self.budget // _MIB} MiB): {self.why}"
        )

    def after_comparison(self, held: int) -> tuple[bool, str | None]:
        """Whether the replay runs after the comparison (not beside), and the note for the
        summary. ``held``: the comparing process's memory once its tensors are compared,
        measured (0: not known, then :attr:`held_after`). Decided then, not when the fit
        is made: the estimate of the comparing process before the comparison (its rows,
        its workers) was ~40 MiB over at 15,017 ops, and the replay was left out of
        budgets it fitted in."""
        need = (held or self.held_after) + self.added
        if need <= self.budget:
            return True, self.note
        why = f"{self.why}; " if self.why else ""
        # the budget named leaves 5% of room: the comparing process may hold more under it
        # (graphs read side by side where the smaller budget had them one after the other)
        roomy = -(-need * 21 // (20 * _MIB))
        return False, (
            f"{NOT_RUN}, to stay within --memory-budget ({self.budget // _MIB} MiB): "
            f"{why}the comparing process would hold ~{need // _MIB} MiB with it after the "
            "comparison; any suspect stays unverified (named by the comparison alone): "
            f"--memory-budget {roomy}M or more lets the replay run"
        )


_MIB = 1 << 20
NOT_RUN = "replay: not run"  # how the note of a replay left out begins


def fit_replay(
    budget: int,
    replay_need: int,
    worker_need: int,
    processes: int,
    held_after: int | None = None,
    added_after: int | None = None,
) -> ReplayFit:
    """Fit the replay (``replay_need`` bytes per process, up to ``processes`` of them beside
    the comparison) and at least one comparing worker (``worker_need``) in ``budget``.
    ``held_after``: what the comparing process holds once its tensors are compared (its
    base and rows: the comparison's buffers are let go, ``release_work_buffers``); by default
    ``worker_need``. ``added_after``: what the replay adds to it there
    (:func:`replay_bytes_after`); by default ``replay_need`` less a process's base. Whether
    a replay after the comparison runs at all is decided then
    (:meth:`ReplayFit.after_comparison`)."""
    room = (budget - worker_need) // max(1, replay_need)
    if room < 1:
        why = (
            f"beside the comparison, the replay (~{replay_need // _MIB} MiB) and one comparing "
            f"worker (~{worker_need // _MIB} MiB) would not fit"
        )
        held = worker_need if held_after is None else held_after
        added = replay_need - REPLAY_BASE_BYTES if added_after is None else added_after
        return _after(budget, added, held, why)
    beside = max(1, min(processes, room))
    share = (beside + 1) * replay_need <= budget
    return ReplayFit(True, beside, share, beside * replay_need)


def _after(budget: int, added: int, held_after: int, why: str = "") -> ReplayFit:
    """The replay after the comparison, in the comparing process, one process."""
    return ReplayFit(False, 1, False, 0, why, budget, added, held_after)


def fit_source(
    budget: int | None, inputs: Any, workers: int | None, scheduler: str | None = None
) -> ReplayFit | None:
    """:func:`fit_replay` for a replay of the engine's ``inputs`` (``compare.discover.Inputs``:
    graphs and indexed dump folders) beside a comparison of the same dumps, with ``workers``
    cores in all. None, the replay beside the comparison as always: no budget, or a
    ``scheduler``'s (the budget sets the Dask workers' limits). On one core the replay runs
    after the comparison anyway: the fit is only what it will hold then.

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
    # the parts once: walking the fused ops' dumps takes ~35 ms at 15,017 ops
    graph, largest = _replay_parts(
        inputs.on_graph, inputs.on_dir, getattr(inputs.off_graph, "path", None)
    )
    added = added_after(graph, largest, _largest_file(inputs.on_graph, inputs.on_dir))
    held = worker - bound.largest_need
    if (workers or os.cpu_count() or 1) < 2:
        return _after(budget, added, held)
    replay = _process_need(graph, largest)
    return fit_replay(budget, replay, worker, overlapping_processes(workers), held, added)
