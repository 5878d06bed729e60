"""Stage 1 of the compare pipeline, ``discover``: from the paths the user gave to what the
job compares.

Reads the two graphs (the fusion-off one in a forked helper process, which sends back only what
pairing needs, while this process reads the fusion-on one), indexes the dump folders, works out
which dump belongs to which graph (users often pass them the other way round) and which
``-alg`` metrics were asked for. Everything it finds out that the user should know goes into
``notes``. Nothing here computes a metric or writes a file.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from ..readers.dumpdir import DumpDir, DumpDirError, holds_dump_files, scan_dump_dir
from ..readers.graph import Graph, GraphError, deferred_graph, drop_handed, load_graph
from . import forked
from .forked import ForkedCall, close_ahead, keep_ahead, path_key, take_ahead
from .metrics import AlgorithmSelectionError, parse_algorithms
from .pairing import (
    FusionRule,
    GraphDigest,
    digest_in_child,
    fusion_marks,
    fusion_rule,
    graph_digest,
)
from .pairing import op_names as _op_names

if TYPE_CHECKING:
    from .worker_memory import ComparingBound

_GraphDigest, _digest, _fusion_marks = GraphDigest, graph_digest, fusion_marks  # former names


class CompareInputError(Exception):
    """The inputs cannot be compared at all (unreadable graph, no dump folder, bad ``-alg``)."""


@dataclass
class CompareRequest:
    """What to compare. ``on_*`` is the fusion-on side (msaccucmp ``-m``/``-f``), ``off_*`` the
    fusion-off side (``-g``/``-cf``); swapped dump folders are detected and fixed.

    ``scheduler``: None runs on this machine (``workers`` processes); ``"local"`` or a Dask
    scheduler address ships the measure stage to Dask workers (:mod:`.runners`).
    ``memory_budget``: bytes the workers' peaks may sum to (None: no limit beyond the cores)."""

    on_dump: str | os.PathLike
    off_dump: str | os.PathLike
    on_graph: str | os.PathLike
    off_graph: str | os.PathLike
    out_dir: str | os.PathLike
    algorithms: str | Sequence[int | str] | None = None
    max_cmp_size: int = 0
    workers: int | None = None  # None: all cores (in-process for small jobs)
    start_method: str | None = None  # multiprocessing start method; None: fork where available
    scheduler: str | None = None
    memory_budget: int | None = None


@dataclass
class Inputs:
    """What ``discover`` found: the graphs (fusion-on first, after any swap), each graph's
    pairing rule, the dump leaf folders in the same order, the metrics, and the notes.
    ``off_dtypes``: the dtypes the fusion-off graph's ops output (a worker's memory counts the
    widest)."""

    request: CompareRequest
    algorithms: list[str]
    on_graph: Graph
    off_graph: Graph
    on_rule: FusionRule
    off_rule: FusionRule
    on_dir: DumpDir
    off_dir: DumpDir
    swapped_dumps: bool = False
    notes: list[str] = field(default_factory=list)
    off_dtypes: frozenset[str] = frozenset()
    # ops dumped in on_dir that the fusion-on graph does not name: in no row, never judged
    unnamed_dumps: int = 0
    # "PATH: why" of what stands where a graph's op's dump should be and is no file
    unusable: list[str] = field(default_factory=list)

    @cached_property
    def comparing_bound(self) -> ComparingBound:
        """How a comparing process is counted against ``--memory-budget`` before the tensors
        are paired; once, for the replay's fit and for ``engine.pair``."""
        from .metrics import kernel_in_use
        from .worker_memory import comparing_bound

        return comparing_bound(self.on_graph, self.on_dir, self.off_dtypes, kernel_in_use())


def discover(request: CompareRequest) -> Inputs:
    """Stage ``discover``: metrics asked for, graphs, dump folders and their orientation.

    Raises :class:`CompareInputError` when the inputs cannot be compared at all."""
    notes: list[str] = []
    algorithms = _algorithms(request.algorithms, notes)
    on_graph, off_graph, on_rule, off, on_dir, off_dir, swapped, unnamed = _prepare(request, notes)
    return Inputs(
        request=request,
        algorithms=algorithms,
        on_graph=on_graph,
        off_graph=off_graph,
        on_rule=on_rule,
        off_rule=off.rule,
        on_dir=on_dir,
        off_dir=off_dir,
        swapped_dumps=swapped,
        notes=notes,
        off_dtypes=off.output_dtypes,
        unnamed_dumps=unnamed,
        unusable=[
            *on_dir.unusable_for(_op_names(on_graph) if on_dir.unusable else ()),
            *off_dir.unusable_for(off.op_names),
        ],
    )


def _algorithms(selection, notes: list[str]) -> list[str]:
    warnings: list[str] = []
    try:
        chosen = parse_algorithms(selection, warnings)
    except AlgorithmSelectionError as error:
        raise CompareInputError(str(error)) from None
    notes += warnings
    return chosen


def _load_graph(path: str | os.PathLike, role: str, input_descs: bool = True) -> Graph:
    try:
        return load_graph(path, input_descs)
    except GraphError as error:
        raise CompareInputError(f"{role} graph: {error}") from None


def _scan(
    path: str | os.PathLike,
    graph_names: Sequence[str],
    role: str,
    leaves: dict[str, DumpDir] | None = None,
) -> DumpDir:
    """Index a dump folder, picking the model folder named like the first graph name that
    exists there (the second name covers dump folders given the other way round).

    ``leaves``: folders already indexed by :func:`_scan_leaf`, by real path, and by
    :func:`_scan_ahead`, by (real path, graph names)."""
    real = os.path.realpath(path)
    for key in (real, _ahead_key(real, graph_names)):
        known = (leaves or {}).get(key)
        if known is not None:
            return known
    first_error: DumpDirError | None = None
    for name in dict.fromkeys(graph_names):
        try:
            return scan_dump_dir(os.path.realpath(path), name or None)
        except DumpDirError as error:
            first_error = first_error or error
    raise CompareInputError(f"{role} dump folder: {first_error}")


def _graphs_fit(request: CompareRequest) -> bool:
    """Whether ``--memory-budget`` (if any) holds both graphs read at once (see
    ``worker_memory.graphs_fit_together``)."""
    if not request.memory_budget:
        return True
    from .worker_memory import graphs_fit_together

    try:
        sizes = [os.path.getsize(path) for path in (request.on_graph, request.off_graph)]
    except (OSError, TypeError, ValueError):
        return True  # the graphs' own errors are reported as they are read
    return graphs_fit_together(request.memory_budget, *sizes)


def _import_measuring() -> None:
    """Import the measuring stage's code now, while the helper finishes the fusion-off digest:
    :func:`.engine.pair` needs it next, and numpy alone takes ~0.1 s to import, which this
    process would otherwise spend first and then wait for the helper (issue 16). The compiled
    metrics kernel's first-use probe (~9 ms) runs here too, for the same reason."""
    from . import workers

    workers.kernel_in_use()


def host_key(off_graph: str | os.PathLike) -> tuple:
    """The key under which the fusion-off graph's helper, kept after its digest, waits for
    the replay's request (:func:`.forked.take_ahead`)."""
    return path_key("replay-host", off_graph)


def _ahead_key(real: str, graph_names: Sequence[str]) -> str:
    return "\0".join((real, *dict.fromkeys(graph_names)))


def _scan_ahead(
    path: str | os.PathLike, graph_names: Sequence[str], leaves: dict[str, DumpDir]
) -> None:
    """Index ``path`` as :func:`_scan` with these ``graph_names`` would, ahead of time (while
    the helper finishes the fusion-off digest); the result is used only by a :func:`_scan`
    given the same folder and names. Any problem is left to :func:`_scan`."""
    with contextlib.suppress(CompareInputError, OSError):
        found = _scan(path, graph_names, "", leaves)
        leaves.setdefault(_ahead_key(os.path.realpath(path), graph_names), found)


def _scan_leaf(path: str | os.PathLike, leaves: dict[str, DumpDir]) -> None:
    """Index ``path`` ahead of time when it holds dump files itself: then the graph names that
    :func:`_scan` would pass cannot change the result. Any problem is left to :func:`_scan`."""
    real = os.path.realpath(path)
    with contextlib.suppress(DumpDirError, OSError):
        if holds_dump_files(real):
            leaves[real] = scan_dump_dir(real)


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


class _DigestReader:
    """Reads a graph's digest in a forked helper process, or in this process where fork is not
    available or the helper fails for any reason other than a bad graph file."""

    def __init__(self, path: str | os.PathLike, role: str, start_method: str | None) -> None:
        self.path = path
        self.role = role
        fork = (start_method or "fork") == "fork"
        ahead = take_ahead(path_key("digest", path))
        if ahead is not None:
            if fork:
                self._call = ahead  # started by the command line before the job was loaded
                return
            ahead.close()
        self._call = ForkedCall(digest_in_child, (path,), early=True)
        if not fork:
            return
        try:
            if os.path.getsize(path) < forked.GRAPH_FORK_BYTES:
                return
        except OSError:
            return  # read here, to report the error as usual
        self._call.start()

    @property
    def busy(self) -> bool:
        """A helper process is reading the graph (this process would otherwise wait)."""
        return self._call.busy

    @property
    def keeps(self) -> bool:
        """The helper stays with its graph after the digest (for the replay)."""
        return self._call.keep

    def name(self) -> str | None:
        """The graph's name once the helper has read the graph (waiting for it), or None when
        no helper runs or it ended without reading it (then :meth:`digest` says why)."""
        name = self._call.early()
        return name if isinstance(name, str) else None

    def digest(self) -> _GraphDigest:
        message = self._call.answer()
        if self._call.kept:  # it stays with the graph, for the replay to claim (replay_host)
            keep_ahead(host_key(self.path), self._call)
            self._call = ForkedCall(digest_in_child)  # never started: closing it is a no-op
        if message is not None and message[0] == "ok":
            return message[1]
        if message is not None and message[0] == "graph":
            raise CompareInputError(f"{self.role} graph: {GraphError(*message[1])}")
        return _digest(_load_graph(self.path, self.role))

    def close(self) -> None:
        self._call.close()


def _prepare(request: CompareRequest, notes: list[str]):
    """Read the graphs (the fusion-off one in a helper process), pick the dump folders and
    their orientation. Returns (on graph, off graph, on rule, off digest, on dir, off dir,
    swapped).

    The fusion-off Graph itself is not needed by the comparison, only its digest: the outcome
    gets a :func:`deferred_graph` that reads the file again if anything but its path and name
    is used (the command line uses neither)."""
    helper = _DigestReader(request.off_graph, "fusion-off", request.start_method)
    early: DumpDir | None = None
    leaves: dict[str, DumpDir] = {}
    off = None
    try:
        if helper.busy and not _graphs_fit(request):
            off = helper.digest()  # its process ends before this one reads the other graph
            # kept for the replay, it is ended now: a budget that cannot hold both graphs
            # cannot hold the replay beside the comparison either, and the replay, where
            # it runs, reads the graph itself (it held its graph here: 384 MiB for 300).
            # With a scheduler the replay runs beside the Dask workers, in the helper.
            if request.scheduler is None:
                close_ahead(host_key(request.off_graph))
            drop_handed(request.off_graph)
        # Nothing reads a fusion-on op's input descs (fused ops are paired by their inputs'
        # names and output descs, and never replayed): ~20 ms and ~10 MB less at 5,000 ops.
        on_graph = _load_graph(request.on_graph, "fusion-on", input_descs=False)
        on_rule = fusion_rule(on_graph)
        on_names = _op_names(on_graph)
        # While the helper finishes: index the fusion-on dumps as _scan would on its first try,
        # and the fusion-off dumps when no graph name is needed to find them, or else with the
        # name the helper tells as soon as it has read the graph (issue 16: the main process
        # waited for the whole digest first).
        with contextlib.suppress(DumpDirError):
            early = scan_dump_dir(os.path.realpath(request.on_dump), on_graph.name or None)
            early.prefetch_latest_sizes()  # for the chunk plan, while numpy is imported below
        if helper.busy:
            _scan_leaf(request.off_dump, leaves)
            # a graph picked from a folder and handed on is the helper's: freed here while
            # the helper works (freeing 5,000 ops takes a while), not kept for the whole job
            drop_handed(request.off_graph)
            off_name = helper.name()
            if off_name is not None:  # as _scan below will index the fusion-off dumps
                _scan_ahead(request.off_dump, (off_name, on_graph.name), leaves)
            _import_measuring()
        if off is None:
            off = helper.digest()
    finally:
        helper.close()
    off_graph = deferred_graph(request.off_graph, off.name)
    graphs_swapped = off.fusion_marks > _fusion_marks(on_graph) == 0
    if graphs_swapped:
        close_ahead(host_key(request.off_graph))  # its graph is the fusion-on one after all
        early = None
        given_on = on_graph
        on_graph = _load_graph(request.off_graph, "fusion-off")
        off, on_rule = _digest(given_on, on_rule), fusion_rule(on_graph)
        # read as a fusion-on graph, maybe without its input descs: the replay's original ops
        # need them (the layout their kernels take), so it is then read again if the replay runs
        off_graph = (
            given_on
            if given_on.input_descs_read
            else deferred_graph(request.on_graph, given_on.name)
        )
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
    unnamed = sum(1 for name in first.op_names if name not in on_names)
    return on_graph, off_graph, on_rule, off, first, second, swapped, unnamed
