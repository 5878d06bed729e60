"""The comparison job: two graphs + two dump folders in, msaccucmp-compatible rows and CSV out.

:func:`run_compare` is the single entry point the command line and the language server use. It
reads the graphs (the fusion-off one in a forked helper process, which sends back only what
pairing needs, while this process reads the fusion-on one), finds the dump folders, works out
which dump belongs to which graph (users often pass them the other way round), merges the
graphs into msaccucmp's pairing rule, and then compares the fusion-on op groups in chunks on
a process pool (all cores; ``workers=1`` stays in this process). Chunks are consecutive
groups, so rows arrive in msaccucmp's order and are streamed to a temporary CSV that is
renamed only when the job completes. Progress is reported per chunk; a cancel request stops
the workers between groups and leaves no CSV behind.
"""

from __future__ import annotations

import contextlib
import gc
import math
import multiprocessing
import os
import pickle
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from ..readers.dumpdir import (
    DumpDir,
    DumpDirError,
    holds_dump_files,
    sanitize_op_name,
    scan_dump_dir,
)
from ..readers.graph import Graph, GraphError, deferred_graph, load_graph
from .metrics import AlgorithmSelectionError, parse_algorithms
from .pairing import FusionRule, MergedRule, fusion_rule, merge_rules
from .result import CompareCounts, ResultRow
from .result_csv import ResultCsvWriter
from .workers import ChunkResult, GroupComparer, JobContext, init_worker, run_chunk

Progress = Callable[[int, int, str], None]
_CHUNKS_PER_WORKER = 12
_MIN_CHUNK_BYTES = 1 << 20
_SMALL_JOB_BYTES = 8 << 20  # below this, a process pool costs more than it saves
_POLL_SECONDS = 0.05
_MAX_PAIRING_NOTES = 5
_HELPER_GRAPH_BYTES = 64 << 10  # smaller graph files are read here: a fork would cost more


class CompareInputError(Exception):
    """The inputs cannot be compared at all (unreadable graph, no dump folder, bad ``-alg``)."""


class CompareCancelled(Exception):
    """The job was cancelled; no result file was written."""


@dataclass
class CompareRequest:
    """What to compare. ``on_*`` is the fusion-on side (msaccucmp ``-m``/``-f``), ``off_*`` the
    fusion-off side (``-g``/``-cf``); swapped dump folders are detected and fixed."""

    on_dump: str | os.PathLike
    off_dump: str | os.PathLike
    on_graph: str | os.PathLike
    off_graph: str | os.PathLike
    out_dir: str | os.PathLike
    algorithms: str | Sequence[int | str] | None = None
    max_cmp_size: int = 0
    workers: int | None = None  # None: all cores (in-process for small jobs)
    start_method: str | None = None  # multiprocessing start method; None: fork where available


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


# ----------------------------------------------------------------------------- inputs


def _load_graph(path: str | os.PathLike, role: str) -> Graph:
    try:
        return load_graph(path)
    except GraphError as error:
        raise CompareInputError(f"{role} graph: {error}") from None


def _fusion_marks(graph: Graph) -> int:
    """How many ops carry fusion attributes (pass names or original-op lists)."""
    return sum(1 for op in graph.ops if op.pass_names or op.has_original_names)


def _scan(
    path: str | os.PathLike,
    graph_names: Sequence[str],
    role: str,
    leaves: dict[str, DumpDir] | None = None,
) -> DumpDir:
    """Index a dump folder, picking the model folder named like the first graph name that
    exists there (the second name covers dump folders given the other way round).

    ``leaves``: folders already indexed by :func:`_scan_leaf`, by real path."""
    known = (leaves or {}).get(os.path.realpath(path))
    if known is not None:
        return known
    first_error: DumpDirError | None = None
    for name in dict.fromkeys(graph_names):
        try:
            return scan_dump_dir(os.path.realpath(path), name or None)
        except DumpDirError as error:
            first_error = first_error or error
    raise CompareInputError(f"{role} dump folder: {first_error}")


def _scan_leaf(path: str | os.PathLike, leaves: dict[str, DumpDir]) -> None:
    """Index ``path`` ahead of time when it holds dump files itself: then the graph names that
    :func:`_scan` would pass cannot change the result. Any problem is left to :func:`_scan`."""
    real = os.path.realpath(path)
    with contextlib.suppress(DumpDirError, OSError):
        if holds_dump_files(real):
            leaves[real] = scan_dump_dir(real)


def _op_names(graph: Graph) -> set[str]:
    return {sanitize_op_name(op.name) for part in graph.all_graphs for op in part.ops}


def dump_orientation_scores(
    on: Graph, off: Graph, first: DumpDir, second: DumpDir
) -> tuple[int, int]:
    """(matches if ``first`` is the fusion-on dump, matches if it is the fusion-off dump),
    counting only op names that exist in one graph and not the other."""
    return _orientation_scores(_op_names(on), _op_names(off), first, second)


def _orientation_scores(
    on_names: set[str], off_names: set[str], first: DumpDir, second: DumpDir
) -> tuple[int, int]:
    only_on, only_off = on_names - off_names, off_names - on_names
    a, b = set(first.op_names), set(second.op_names)
    return len(a & only_on) + len(b & only_off), len(b & only_on) + len(a & only_off)


def unmatched_dumps_note(
    folder: DumpDir, graph_names: set[str], graph: str, dump_flag: str, graph_flag: str
) -> str | None:
    """A note when the ops dumped in ``folder`` are (almost) none of the graph's ops: the
    graph is most likely of another network, build or run than the dumps.

    "Almost none" is under a tenth of the dumped ops *and* under a tenth of the graph's ops:
    generic names (``Node_Output``, ``trans_TransData_4``) recur across networks, while a
    partial dump (few ops of the graph) or a folder holding several models' dumps (few of its
    ops in this graph) must not raise the note."""
    dumped = folder.op_names
    matched = sum(1 for name in dumped if name in graph_names)
    if matched * 10 >= len(dumped) or matched * 10 >= len(graph_names):
        return None
    if matched == 0:
        found = f"No dump file in {folder.path} ({dump_flag}) is named after an op of the {graph}"
    else:
        verb = "is an op" if matched == 1 else "are ops"
        found = (
            f"Only {matched} of the {len(dumped)} ops dumped in {folder.path} ({dump_flag}) "
            f"{verb} of the {graph}"
        )
    return (
        f"{found} ({graph_flag}): check that {graph_flag} is the graph of the run dumped in "
        f"{dump_flag} (same network, same build)."
    )


@dataclass
class _GraphDigest:
    """What the job needs of the graph it compares against: its pairing rule, name, op names
    and fusion marks. Reading the fusion-off graph into this runs in a helper process while
    this one reads the fusion-on graph (both are pure-Python work of similar size)."""

    path: Path
    name: str
    fusion_marks: int
    op_names: set[str]
    rule: FusionRule


def _digest(graph: Graph, rule: FusionRule | None = None) -> _GraphDigest:
    return _GraphDigest(
        path=Path(graph.path) if graph.path is not None else Path(),
        name=graph.name,
        fusion_marks=_fusion_marks(graph),
        op_names=_op_names(graph),
        rule=rule if rule is not None else fusion_rule(graph),
    )


def _digest_in_child(path: str | os.PathLike, connection) -> None:
    """Helper-process body: send ("ok", digest), ("graph", GraphError fields) or ("bug", text)."""
    try:
        try:
            message = ("ok", _digest(load_graph(path)))
        except GraphError as error:
            message = ("graph", (error.path, error.message, error.line, error.column))
        except Exception:  # reported by the parent, which then reads the graph itself
            message = ("bug", traceback.format_exc())
        connection.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))
    finally:
        connection.close()


class _DigestReader:
    """Reads a graph's digest in a forked helper process, or in this process where fork is not
    available or the helper fails for any reason other than a bad graph file."""

    def __init__(self, path: str | os.PathLike, role: str, start_method: str | None) -> None:
        self.path = path
        self.role = role
        self._process = None
        self._connection = None
        forking = (start_method or "fork") == "fork"
        if not forking or "fork" not in multiprocessing.get_all_start_methods():
            return
        try:
            if os.path.getsize(path) < _HELPER_GRAPH_BYTES:
                return
        except OSError:
            return  # read here, to report the error as usual
        mp = multiprocessing.get_context("fork")
        receiver, sender = mp.Pipe(duplex=False)
        process = mp.Process(target=_digest_in_child, args=(path, sender), daemon=True)
        try:
            process.start()
        except (OSError, AssertionError, ValueError):  # e.g. started from a daemon process
            receiver.close()
            return
        finally:
            sender.close()
        self._process, self._connection = process, receiver

    @property
    def busy(self) -> bool:
        """A helper process is reading the graph (this process would otherwise wait)."""
        return self._connection is not None

    def digest(self) -> _GraphDigest:
        message = None
        if self._connection is not None:
            with contextlib.suppress(EOFError, OSError, pickle.UnpicklingError):
                message = pickle.loads(self._connection.recv_bytes())
        self.close()
        if message is not None and message[0] == "ok":
            return message[1]
        if message is not None and message[0] == "graph":
            raise CompareInputError(f"{self.role} graph: {GraphError(*message[1])}")
        return _digest(_load_graph(self.path, self.role))

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        if self._process is not None:
            if self._process.is_alive():
                self._process.kill()
            self._process.join()
            self._process = None


def _prepare(request: CompareRequest, notes: list[str]):
    """Read the graphs (the fusion-off one in a helper process), pick the dump folders and
    their orientation. Returns (on graph, off graph, merged rule, on dir, off dir, swapped).

    The fusion-off Graph itself is not needed by the comparison, only its digest: the outcome
    gets a :func:`deferred_graph` that reads the file again if anything but its path and name
    is used (the command line uses neither)."""
    helper = _DigestReader(request.off_graph, "fusion-off", request.start_method)
    early: DumpDir | None = None
    leaves: dict[str, DumpDir] = {}
    try:
        on_graph = _load_graph(request.on_graph, "fusion-on")
        on_rule = fusion_rule(on_graph)
        on_names = _op_names(on_graph)
        # While the helper finishes: index the fusion-on dumps as _scan would on its first try,
        # and the fusion-off dumps when no graph name is needed to find them.
        with contextlib.suppress(DumpDirError):
            early = scan_dump_dir(os.path.realpath(request.on_dump), on_graph.name or None)
        if helper.busy:
            _scan_leaf(request.off_dump, leaves)
        off = helper.digest()
    finally:
        helper.close()
    off_graph = deferred_graph(request.off_graph, off.name)
    graphs_swapped = off.fusion_marks > _fusion_marks(on_graph) == 0
    if graphs_swapped:
        early = None
        given_on = on_graph
        on_graph = _load_graph(request.off_graph, "fusion-off")
        off, on_rule = _digest(given_on, on_rule), fusion_rule(on_graph)
        off_graph = given_on
        notes.append(
            f"The graphs were given the other way round: {given_on.path} has no fused ops, "
            f"{on_graph.path} has; using {on_graph.path} as the fusion-on graph."
        )
        on_names = _op_names(on_graph)
    names = (on_graph.name, off.name)
    first = early if early is not None else _scan(request.on_dump, names, "fusion-on")
    second = _scan(request.off_dump, names[::-1], "fusion-off", leaves)
    direct, crossed = _orientation_scores(on_names, off.op_names, first, second)
    swapped = crossed > direct
    if swapped:
        notes.append(
            f"The dump folders were given the other way round: {second.path} holds the dumps "
            f"of the fusion-on graph ({crossed} of its own op names, against {direct}); "
            f"comparing {second.path} (fusion on) with {first.path} (fusion off)."
        )
        first = _scan(request.off_dump, names, "fusion-on", leaves)
        second = _scan(request.on_dump, names[::-1], "fusion-off")
    on_flags, off_flags = ("-m", "-f"), ("-g", "-cf")
    if swapped:
        on_flags, off_flags = (off_flags[0], on_flags[1]), (on_flags[0], off_flags[1])
    if graphs_swapped:
        on_flags, off_flags = (on_flags[0], off_flags[1]), (off_flags[0], on_flags[1])
    for role, folder, names, graph_path, flags in (
        ("fusion-on", first, on_names, on_graph.path, on_flags),
        ("fusion-off", second, off.op_names, off.path, off_flags),
    ):
        note = unmatched_dumps_note(folder, names, f"{role} graph {graph_path}", *flags)
        if note:
            notes.append(note)
    for role, folder in (("fusion-on", first), ("fusion-off", second)):
        notes += [f"{role} dumps: {note}" for note in folder.notes]
    merged = merge_rules(on_rule, off.rule)
    return on_graph, off_graph, merged, first, second, swapped


def _algorithms(selection, notes: list[str]) -> list[str]:
    warnings: list[str] = []
    try:
        chosen = parse_algorithms(selection, warnings)
    except AlgorithmSelectionError as error:
        raise CompareInputError(str(error)) from None
    notes += warnings
    return chosen


def _pairing_notes(merged: MergedRule, notes: list[str]) -> None:
    if not merged.warnings:
        return
    shown = merged.warnings[:_MAX_PAIRING_NOTES]
    more = len(merged.warnings) - len(shown)
    notes += [f"pairing: {warning}" for warning in shown]
    if more:
        notes.append(f"pairing: {more} more warning(s) of the same kind")


# ----------------------------------------------------------------------------- chunks


def _group_costs(merged: MergedRule, left: DumpDir) -> list[int]:
    costs = []
    for members in merged.ordered_groups():
        cost = 4096
        for op in members:
            path = left.latest(op.name)
            if path is not None:
                with contextlib.suppress(OSError):
                    cost += path.stat().st_size
        costs.append(cost)
    return costs


def plan_chunks(costs: Sequence[int], workers: int) -> list[list[int]]:
    """Split group positions into consecutive chunks of similar cost (bytes to read)."""
    total = sum(costs)
    target = max(_MIN_CHUNK_BYTES, math.ceil(total / max(1, workers * _CHUNKS_PER_WORKER)))
    chunks: list[list[int]] = []
    current: list[int] = []
    load = 0
    for position, cost in enumerate(costs):
        current.append(position)
        load += cost
        if load >= target:
            chunks.append(current)
            current, load = [], 0
    if current:
        chunks.append(current)
    return chunks


def _worker_count(request: CompareRequest, total_bytes: int, chunks: int) -> int:
    if request.workers is not None:
        return max(1, min(request.workers, chunks))
    if total_bytes < _SMALL_JOB_BYTES:
        return 1
    return max(1, min(os.cpu_count() or 1, chunks))


def _context(start_method: str | None):
    if start_method:
        return multiprocessing.get_context(start_method)
    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


# ----------------------------------------------------------------------------- the job


def run_compare(
    request: CompareRequest,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> CompareOutcome:
    """Compare fusion on with fusion off; see the module docstring.

    ``progress(done_ops, total_ops, message)`` is called as chunks complete. ``cancel`` (a
    threading or multiprocessing Event) stops the job: :class:`CompareCancelled` is raised and
    no CSV is left. Unusable inputs raise :class:`CompareInputError`; a bad dump file only
    affects its rows and is listed in ``errors``.
    """
    with _gc_paused():
        return _run(request, progress, cancel)


@contextlib.contextmanager
def _gc_paused():
    """The job builds many small acyclic objects (graphs, rows); Python's cyclic GC would scan
    the growing heap again and again (3x slower graph reading on a 5,000-op model)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _check(cancel) -> None:
    if cancel is not None and cancel.is_set():
        raise CompareCancelled("comparison cancelled")


def _run(request: CompareRequest, progress: Progress | None, cancel) -> CompareOutcome:
    notes: list[str] = []
    algorithms = _algorithms(request.algorithms, notes)
    on_graph, off_graph, merged, on_dir, off_dir, swapped = _prepare(request, notes)
    _check(cancel)
    _pairing_notes(merged, notes)
    _check(cancel)
    ctx = JobContext(merged, on_dir, off_dir, algorithms, max(0, int(request.max_cmp_size or 0)))
    costs = _group_costs(merged, on_dir)
    groups = merged.ordered_groups()
    total_ops = sum(len(members) for members in groups)
    workers = _worker_count(request, sum(costs), max(1, len(costs)))
    chunks = plan_chunks(costs, workers)
    try:
        writer = ResultCsvWriter(
            request.out_dir,
            algorithms,
            left_address=not on_dir.is_npy,
            right_address=not off_dir.is_npy,
        )
    except OSError as error:
        raise CompareInputError(f"output folder {request.out_dir}: {error}") from None
    rows: list[ResultRow] = []
    errors: list[str] = []
    try:
        if progress:
            progress(0, total_ops, f"comparing {total_ops} ops in {len(groups)} groups")
        if workers == 1:
            _run_here(ctx, chunks, groups, writer, rows, errors, total_ops, progress, cancel)
        else:
            _run_pool(
                ctx,
                chunks,
                groups,
                workers,
                request.start_method,
                writer,
                rows,
                errors,
                total_ops,
                progress,
                cancel,
            )
        csv_path = writer.commit()
    except BaseException:
        writer.abort()
        raise
    counts = _count(rows, groups, errors)
    return CompareOutcome(
        rows=rows,
        csv_path=csv_path,
        notes=notes,
        errors=errors,
        on_graph=on_graph,
        off_graph=off_graph,
        counts=counts,
        algorithms=algorithms,
        on_dump_dir=on_dir.path,
        off_dump_dir=off_dir.path,
        swapped_dumps=swapped,
    )


def _accept(
    result: ChunkResult, writer: ResultCsvWriter, rows: list[ResultRow], errors: list[str]
) -> None:
    writer.write(result.rows)
    rows.extend(result.rows)
    errors.extend(e for e in result.errors if e not in errors)


def _last_op(result: ChunkResult) -> str:
    return result.rows[-1].op_name if result.rows else ""


def _run_here(ctx, chunks, groups, writer, rows, errors, total_ops, progress, cancel) -> None:
    comparer = GroupComparer(ctx)
    done = 0
    for number, positions in enumerate(chunks):
        if cancel is not None and cancel.is_set():
            raise CompareCancelled("comparison cancelled")
        result = comparer.compare_groups(positions, number, cancel)
        if result.cancelled:
            raise CompareCancelled("comparison cancelled")
        _accept(result, writer, rows, errors)
        done += sum(len(groups[p]) for p in positions)
        if progress:
            progress(done, total_ops, _last_op(result))


def _run_pool(
    ctx,
    chunks,
    groups,
    workers,
    start_method,
    writer,
    rows,
    errors,
    total_ops,
    progress,
    cancel,
) -> None:
    mp = _context(start_method)
    stop = mp.Event()
    pending: dict[int, ChunkResult] = {}
    next_chunk = 0
    done = 0
    executor = ProcessPoolExecutor(
        max_workers=workers, mp_context=mp, initializer=init_worker, initargs=(ctx, stop)
    )
    # Objects created so far (graphs, pairing) are read-only for the workers: keep the cyclic
    # GC from touching them in forked children, so their pages stay shared (copy-on-write).
    gc.freeze()
    try:
        futures: set[Future] = {
            executor.submit(run_chunk, number, positions) for number, positions in enumerate(chunks)
        }
        gc.unfreeze()
        while futures:
            finished, futures = wait(futures, timeout=_POLL_SECONDS, return_when=FIRST_COMPLETED)
            if cancel is not None and cancel.is_set():
                stop.set()
                raise CompareCancelled("comparison cancelled")
            for future in finished:
                result = future.result()
                pending[result.chunk] = result
            while next_chunk in pending:
                result = pending.pop(next_chunk)
                _accept(result, writer, rows, errors)
                done += sum(len(groups[p]) for p in chunks[next_chunk])
                next_chunk += 1
                if progress:
                    progress(done, total_ops, _last_op(result))
    except BaseException:
        gc.unfreeze()
        stop.set()
        executor.shutdown(wait=True, cancel_futures=True)
        raise
    executor.shutdown(wait=True)


def _count(rows: list[ResultRow], groups, errors: list[str]) -> CompareCounts:
    counts = CompareCounts(groups=len(groups), rows=len(rows), bad_files=len(errors))
    counts.ops = len({row.op_name for row in rows})
    for row in rows:
        if row.tensor_index is None:
            counts.no_left_dump += 1
        elif row.compared:
            counts.compared += 1
        elif any("There is no the ground truth dump file" in r for r in row.fail_reason):
            counts.no_right_dump += 1
        else:
            counts.failed += 1
    return counts
