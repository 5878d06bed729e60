"""The comparison job as a pipeline of named stages: ``discover -> pair -> load -> measure ->
write`` (``diagnose`` follows, outside this package).

:func:`run_compare` is the single entry point the command line and the language server use;
it calls each stage once, in order, and every stage takes and returns plain dataclasses, so a
test can run one alone and a scheduler can ship the middle ones to other processes:

* ``discover`` (:mod:`.discover`): graphs, dump folders and their orientation, metrics ->
  :class:`~.discover.Inputs`;
* ``pair`` (:func:`pair`): msaccucmp's pairing rule from both graphs, the fusion-on op groups
  in CSV order, split into chunks of similar bytes to read -> :class:`Plan`;
* ``load`` and ``measure`` (:func:`measure`): per tensor pair, read and align both tensors
  (``workers.GroupComparer.load_pair``) then compute the metrics (``measure_pair``); they run
  fused per pair in the workers so that one pair at a time is in memory. Where they run is the
  runner's business (:mod:`.runners`: here, a process pool, Dask); chunk results come back in
  CSV order;
* ``write`` (:func:`write`): stream rows into the CSV (a temporary file renamed at the end),
  count them, report progress -> :class:`CompareOutcome`.

``diagnose`` (attribution, summary.json, report.html) lives in ``fusion_switch.diagnose``,
which imports this package; this package never imports it. The command line composes the two
(``cli/compare.py``: ``run_compare`` then ``diagnose.summary.write_outputs``), so the engine
stays usable without the verdict (oracle tests, benchmarks) and the package rule holds.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..readers.collector import collector_paused, leave_to_exit
from ..readers.dumpdir import DumpDir
from ..readers.graph import Graph
from ..readers.graph_model import LOCAL_TYPES, NO_TASK_TYPES
from .discover import (
    CompareInputError,
    CompareRequest,
    Inputs,
    discover,
    dump_orientation_scores,
    unmatched_dumps_note,
)
from .pairing import MergedRule, RuleOp, merge_rules
from .result import NO_GROUND_TRUTH, CompareCounts, ResultRow
from .result_csv import CsvLayout, ResultCsvWriter
from .runners import (
    CompareCancelled,
    SchedulerError,
    local_cluster,
    run_dask,
    run_here,
    run_pool,
)

if TYPE_CHECKING:  # .workers needs numpy: imported by pair(), after the graphs are read
    from .workers import ChunkResult, JobContext

__all__ = [
    "CompareCancelled",
    "CompareInputError",
    "CompareOutcome",
    "CompareRequest",
    "Plan",
    "discover",
    "dump_orientation_scores",
    "measure",
    "pair",
    "plan_chunks",
    "run_compare",
    "unmatched_dumps_note",
    "write",
]

Progress = Callable[[int, int, str], None]
STARTING = "reading the graphs and the dump folders"
_CHUNKS_PER_WORKER = 12
_MIN_CHUNK_BYTES = 1 << 20
_SMALL_JOB_BYTES = 8 << 20  # below this, a process pool costs more than it saves
_MAX_PAIRING_NOTES = 5


@dataclass
class CompareOutcome:
    """The result of a job. ``rows`` are in CSV order; ``notes`` say what was picked or fixed
    (dump folders chosen, sides swapped, pairing warnings); ``errors`` name bad files and their
    problem; ``counts`` sums the rows up. Dump folders are the leaf folders actually used."""

    rows: list[ResultRow]
    csv_path: Path
    notes: list[str]
    errors: list[str]
    on_graph: Graph
    off_graph: Graph
    counts: CompareCounts
    algorithms: list[str] = field(default_factory=list)
    on_dump_dir: Path | None = None
    off_dump_dir: Path | None = None
    swapped_dumps: bool = False
    on_dumps: DumpDir | None = None  # the indexed folders, so later stages need not scan again
    off_dumps: DumpDir | None = None


@dataclass
class Plan:
    """What ``pair`` decided: the worker context, the op groups in CSV order, the chunks
    (positions into ``groups``) and how many workers run them."""

    inputs: Inputs
    job: JobContext
    groups: list[list[RuleOp]]
    chunks: list[list[int]]
    workers: int
    total_ops: int
    notes: list[str] = field(default_factory=list)

    def chunk_ops(self, number: int) -> int:
        return sum(len(self.groups[p]) for p in self.chunks[number])


# ----------------------------------------------------------------------------- the pipeline


def run_compare(
    request: CompareRequest,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    discovered: Callable[[Inputs], int | None] | None = None,
    plan_to_exit: bool = False,
    rows_ready: Callable[[list[ResultRow]], None] | None = None,
) -> CompareOutcome:
    """Compare fusion on with fusion off: ``discover -> pair -> load/measure -> write``.

    ``progress(done_ops, total_ops, message)`` is called once at the start with
    ``total_ops == 0`` (:data:`STARTING`: the graphs are being read), then as chunks complete.
    ``cancel`` (a threading or multiprocessing Event) stops the job: :class:`CompareCancelled`
    is raised and no CSV is left. Unusable inputs raise :class:`CompareInputError`; a bad dump
    file only affects its rows and is listed in ``errors``.

    ``discovered(inputs)`` is called once the graphs and dump folders are known, before the
    tensors are compared: the caller may start work that needs only those (the replay, which
    then overlaps with the comparison) without this package knowing what it is. It returns the
    bytes of ``request.memory_budget`` that work holds meanwhile (None: none); the comparison's
    workers share the rest.

    ``plan_to_exit``: leave the job's plan (the merged rule and the groups, a RuleOp per op) to
    a process exit that drops the heap whole (:func:`.leave_to_exit`) rather than free it
    here, ~13 ms at 5,000 ops before the verdict; for a caller with no large work left (the
    command line without the replay, whose tail reuses the memory freed here).

    ``rows_ready(rows)`` is called with each chunk's rows, in CSV order, as they are written:
    the caller may start on them while the next chunks are compared (the command line judges
    them for the attribution).
    """
    # The job builds many small acyclic objects (graphs, rows); Python's cyclic collector would
    # walk the growing heap again and again (3x slower graph reading on a 5,000-op model).
    with collector_paused(freeze=False):
        if progress:  # at once: reading a large model's graphs takes a while (issue 16)
            progress(0, 0, STARTING)
        inputs = discover(request)
        _check(cancel)
        reserved = discovered(inputs) if discovered is not None else None
        plan = pair(inputs, reserved or 0)
        _check(cancel)
        if progress:
            groups = len(plan.groups)
            progress(0, plan.total_ops, f"comparing {plan.total_ops} ops in {groups} groups")
        try:
            return write(plan, measure(plan, cancel), progress, cancel, rows_ready)
        finally:
            from .workers import release_work_buffers

            release_work_buffers()
            if plan_to_exit:
                leave_to_exit(plan)


def _check(cancel) -> None:
    if cancel is not None and cancel.is_set():
        raise CompareCancelled("comparison cancelled")


# ----------------------------------------------------------------------------- pair


def pair(inputs: Inputs, reserved: int = 0) -> Plan:
    """Stage ``pair``: merge both graphs into msaccucmp's pairing rule and plan the chunks.
    ``reserved``: bytes of the memory budget held by other work while the tensors are compared
    (the replay beside them)."""
    from .workers import JobContext  # numpy: imported once the graphs are read

    request = inputs.request
    notes = list(inputs.notes)
    merged = merge_rules(inputs.on_rule, inputs.off_rule)
    _pairing_notes(merged, notes)
    job = JobContext(
        merged,
        inputs.on_dir,
        inputs.off_dir,
        inputs.algorithms,
        max(0, int(request.max_cmp_size or 0)),
        csv_layout(inputs),
    )
    groups = merged.ordered_groups()
    costs = _group_costs(groups, inputs.on_dir)
    workers = _worker_count(request, sum(costs), max(1, len(costs)))
    total_ops = sum(len(members) for members in groups)
    if request.memory_budget and request.scheduler is None:
        workers = _workers_within(
            request.memory_budget, reserved, workers, inputs, job, groups, notes
        )
    elif request.memory_budget and request.scheduler != "local":
        # it was taken without a word, as if it bounded the cluster (a review, issue 16)
        notes.append(
            f"--memory-budget is not applied with --scheduler {request.scheduler}: its workers "
            "keep to their own dask worker --memory-limit, and the replay here to no limit"
        )
    elif request.memory_budget:  # a 5,018-op run given 300 MiB peaked at 499 MiB, silently
        count, share = local_cluster(request.workers, request.memory_budget)
        each = "the Dask worker" if count == 1 else f"each of the {count} Dask workers"
        notes.append(
            f"--memory-budget with --scheduler local gives {each} {share >> 20} MiB (their "
            "memory limit); the cluster's nanny processes, this process and the replay hold "
            "memory beside them: without --scheduler the budget bounds the whole run"
        )
    return Plan(
        inputs=inputs,
        job=job,
        groups=groups,
        chunks=plan_chunks(costs, workers),
        workers=workers,
        total_ops=total_ops,
        notes=notes,
    )


def _workers_within(
    memory_budget: int,
    reserved: int,
    workers: int,
    inputs: Inputs,
    job: JobContext,
    groups: list[list[RuleOp]],
    notes: list[str],
) -> int:
    """How many of ``workers`` comparing processes fit in ``memory_budget`` less the
    ``reserved`` bytes of the replay beside them (``worker_memory``): each holds what this one
    holds now and its largest pair, this one the rows too. A budget below one process is noted
    in ``notes``: the comparison still runs, on one."""
    from .worker_memory import resident_bytes, rows_bytes, worker_bytes, workers_within

    budget, held = max(0, memory_budget - reserved), resident_bytes()
    rows, need = inputs.comparing_bound.rows, inputs.comparing_bound.largest_need
    # narrowed only where the bound, not the processes' base, keeps workers out
    if workers_within(budget, need, held, rows) < min(
        workers, workers_within(budget, 0, held, rows)
    ):
        need = _largest_need(inputs, job, groups)
    one = worker_bytes(need, held) + rows_bytes(rows)
    if one > budget:
        mib = 1 << 20
        beside = f", {budget // mib} MiB of it beside the replay" if reserved else ""
        notes.append(
            f"comparison: one comparing process, and still above --memory-budget "
            f"({memory_budget // mib} MiB{beside}): it holds ~{one // mib} MiB here (the "
            f"graphs, the rows, its largest tensor pair); a budget that leaves it that much "
            f"keeps within it"
        )
    return min(workers, workers_within(budget, need, held, rows))


def _largest_need(inputs: Inputs, job: JobContext, groups: list[list[RuleOp]]) -> int:
    """What the comparing worker that needs most holds beyond its base: the bound
    (``inputs.comparing_bound``) narrowed by the largest ones' headers (``worker_memory``)."""
    from .metrics import kernel_in_use
    from .worker_memory import largest_op_need, widest_bits
    from .workers import GroupComparer

    comparer = GroupComparer(job, groups)
    by_name = {op.name: op for members in groups for op in members}

    def exact(name: str) -> int | None:
        op = by_name.get(name)
        return comparer.op_memory(op) if op is not None else 0  # in no group: not compared

    off_bits = widest_bits(inputs.off_dtypes)
    return largest_op_need(inputs.on_graph, inputs.on_dir, kernel_in_use(), off_bits, exact)


def _pairing_notes(merged: MergedRule, notes: list[str]) -> None:
    if not merged.warnings:
        return
    shown = merged.warnings[:_MAX_PAIRING_NOTES]
    more = len(merged.warnings) - len(shown)
    notes += [f"pairing: {warning}" for warning in shown]
    if more:
        notes.append(f"pairing: {more} more warning(s) of the same kind")


def _group_costs(groups: list[list[RuleOp]], left: DumpDir) -> list[int]:
    """Per group (in ``groups``' order): 4 KiB plus the bytes of its ops' fusion-on dumps."""
    costs = []
    for members in groups:
        cost = 4096
        for op in members:
            cost += left.latest_bytes(op.name)
        costs.append(cost)
    return costs


def plan_chunks(costs: Sequence[int], workers: int) -> list[list[int]]:
    """Split group positions into consecutive chunks of similar cost (bytes to read), smaller
    towards the end: a chunk is at most half of what is left per process, so the
    processes finish close together instead of one waiting on another's last big chunk."""
    total = sum(costs)
    target = max(_MIN_CHUNK_BYTES, math.ceil(total / max(1, workers * _CHUNKS_PER_WORKER)))
    tail = 2 * max(1, workers)
    chunks: list[list[int]] = []
    current: list[int] = []
    load = 0
    left = total  # bytes from the current chunk's start to the end
    for position, cost in enumerate(costs):
        current.append(position)
        load += cost
        if load >= target or (load >= _MIN_CHUNK_BYTES and load * tail >= left):
            left -= load
            chunks.append(current)
            current, load = [], 0
    if current:
        chunks.append(current)
    return chunks


def _worker_count(request: CompareRequest, total_bytes: int, chunks: int) -> int:
    if request.workers is not None:
        return max(1, min(request.workers, chunks))
    if total_bytes < _SMALL_JOB_BYTES and request.scheduler is None:
        return 1
    return max(1, min(os.cpu_count() or 1, chunks))


# ----------------------------------------------------------------------------- load + measure


def measure(plan: Plan, cancel=None) -> Iterator[ChunkResult]:
    """Stages ``load`` and ``measure`` on the runner the request asks for; chunk results in
    CSV order."""
    request = plan.inputs.request
    if request.scheduler:
        try:
            yield from run_dask(
                plan.job,
                plan.chunks,
                request.scheduler,
                request.workers,
                request.memory_budget,
                cancel,
            )
        except SchedulerError as error:
            raise CompareInputError(str(error)) from None
    elif plan.workers == 1:
        yield from run_here(plan.job, plan.chunks, cancel)
    else:
        yield from run_pool(plan.job, plan.chunks, plan.workers, request.start_method, cancel)


# ----------------------------------------------------------------------------- write


def write(
    plan: Plan,
    results: Iterable[ChunkResult],
    progress: Progress | None = None,
    cancel=None,
    rows_ready: Callable[[list[ResultRow]], None] | None = None,
) -> CompareOutcome:
    """Stage ``write``: stream the chunk results (in order) into ``result_*.csv``; the file
    appears under its final name only when every chunk arrived and ``cancel`` is not set
    (a cancel that comes while the last results are reported still leaves no CSV)."""
    inputs = plan.inputs
    on_dir, off_dir = inputs.on_dir, inputs.off_dir
    layout = csv_layout(inputs)
    try:
        writer = ResultCsvWriter(
            inputs.request.out_dir,
            layout.algorithms,
            left_address=layout.left_address,
            right_address=layout.right_address,
        )
    except OSError as error:
        raise CompareInputError(f"output folder {inputs.request.out_dir}: {error}") from None
    rows: list[ResultRow] = []
    errors: list[str] = list(inputs.unusable)  # bad files that no row reads
    done = 0
    try:
        for result in results:
            with _writing(writer):
                writer.write(result.rows, result.rendered)
            rows.extend(result.rows)
            if rows_ready is not None:
                rows_ready(result.rows)
            errors.extend(e for e in result.errors if e not in errors)
            done += plan.chunk_ops(result.chunk)
            if progress:
                progress(done, plan.total_ops, _last_op(result))
            _check(cancel)
        _check(cancel)
        with _writing(writer):
            csv_path = writer.commit()
    except BaseException:
        writer.abort()
        if isinstance(results, Iterator) and hasattr(results, "close"):
            results.close()  # stops the runner: its workers end now, not at garbage collection
        raise
    return CompareOutcome(
        rows=rows,
        csv_path=csv_path,
        notes=plan.notes,
        errors=errors,
        on_graph=inputs.on_graph,
        off_graph=inputs.off_graph,
        counts=_graph_coverage(_count(rows, plan.groups, errors), inputs),
        algorithms=inputs.algorithms,
        on_dump_dir=on_dir.path,
        off_dump_dir=off_dir.path,
        swapped_dumps=inputs.swapped_dumps,
        on_dumps=on_dir,
        off_dumps=off_dir,
    )


@contextlib.contextmanager
def _writing(writer: ResultCsvWriter):
    """An error writing the CSV as the user can act on it: a review found a full disk
    reported as "internal error: OSError: [Errno 28] No space left on device"."""
    try:
        yield
    except OSError as error:
        why = error.strerror or str(error)
        raise CompareInputError(
            f"cannot write {writer.path.name} into {writer.out_dir}: {why} (free space there, "
            "or give another -out)"
        ) from None


def csv_layout(inputs: Inputs) -> CsvLayout:
    """The result file's columns: the metrics asked for, and an ``Address`` column for each
    side whose dumps are not ``.npy`` files."""
    return CsvLayout(tuple(inputs.algorithms), not inputs.on_dir.is_npy, not inputs.off_dir.is_npy)


def _last_op(result: ChunkResult) -> str:
    return result.rows[-1].op_name if result.rows else ""


def _graph_coverage(counts: CompareCounts, inputs: Inputs) -> CompareCounts:
    """``counts`` with the ops dumped under -m and how many of them the fusion-on graph does
    not name: those are in no row. A graph of another build, or of a smaller model with the
    same op names, gave "no fused op introduces error" for the ops it named only (a review,
    issue 16)."""
    counts.dumped_ops = len(inputs.on_dir.op_names)
    counts.unnamed_dumps = inputs.unnamed_dumps  # counted by discover, beside its graph's names
    return counts


def _count(rows: list[ResultRow], groups, errors: list[str]) -> CompareCounts:
    counts = CompareCounts(groups=len(groups), rows=len(rows), bad_files=len(errors))
    ops: set[str] = set()
    no_left = compared = no_right = failed = tasks = 0
    for row in rows:  # ResultRow.compared, inlined: this runs for every row (issue 16)
        ops.add(row.op_name)
        if row.tensor_index is None:
            no_left += 1
            tasks += row.op_type not in NO_TASK_TYPES and row.op_type not in LOCAL_TYPES
            continue
        for value in row.metrics.values():
            if value is not None:
                compared += 1
                break
        else:
            if any(NO_GROUND_TRUTH in reason for reason in row.fail_reason):
                no_right += 1
            else:
                failed += 1
    counts.ops = len(ops)
    counts.no_left_dump, counts.compared = no_left, compared
    counts.undumped_tasks = tasks
    counts.no_right_dump, counts.failed = no_right, failed
    return counts
