"""Run the replay in a forked child while this process does other work.

Two moments to start it. After the comparison (``write_outputs`` alone): the replay overlaps
with the serial row attribution here; the child measures the first chunk itself and forks the
other measuring workers. Before the comparison (the command line, as soon as the graphs and
dump folders are known, :func:`.summary.start_replay`): the replay needs no row, so it runs
while the tensors are compared; the comparison's workers have the cores then, so the child
measures with half of them (on two cores: alone, one chunk after the other), which also keeps
the process tree one copy smaller. Either way the child runs :func:`replay_outcome` exactly as
this process would (the same function on the same inputs and chunks, forked) and sends the
finished :class:`ReplayReport` and its notes back.

Whatever goes wrong in the child (fork refused, crash, kill, an exception), the replay is run
again here, so a failure looks exactly as it would have without the child. Started before the
comparison with ``share``, the child hands the end of its measuring to this process once this
one waits for it (:mod:`.replay_share`).

The command line has a better child for it (issue 16): the helper it forked at its very start
to read the fusion-off graph (:func:`.forked.start_ahead`), kept once it answered the graph's
digest (``host``; its side is :func:`serve_kept`). That process holds the fusion-off graph
already, which a child forked here would read again (~0.13 s at 5,000 ops), and it was forked
before this process loaded numpy, the fusion-on graph and the dump indexes, of which a child
forked here carries a copy (~100 MB of RSS, counted again in the process tree's). It gets
what it lacks in the request: a view of the fusion-on graph (:mod:`.on_view`) and the dump
folders' paths. It answers as the forked child does, and its failures are handled the same way.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..compare.forked import ForkedCall
from ..readers.dumpdir import DumpDirError, holds_dump_files, scan_dump_dir
from ..readers.graph_model import share_equal_attrs
from .evidence import EvidenceStore
from .on_view import graph_of_view, on_view
from .replay import Judge, measure_handed
from .replay_job import dump_dirs, localiser, replay_outcome
from .replay_kernels import kernel_registry
from .replay_result import ReplayReport
from .replay_share import ChildShare, ShareChannel, help_child


@dataclass
class ReplaySource:
    """What the replay reads (graphs and dump folders), known as soon as the comparison's
    ``discover`` stage is done: the same fields as a ``CompareOutcome`` has for them."""

    on_graph: Any
    off_graph: Any
    on_dump_dir: Path
    off_dump_dir: Path
    on_dumps: Any = None
    off_dumps: Any = None
    off_dtypes: frozenset[str] = frozenset()  # what the fusion-off graph's ops output

    @classmethod
    def of(cls, inputs: Any) -> ReplaySource:
        """From the engine's ``Inputs`` (the folders after any swap, as the outcome has them)."""
        on_dir, off_dir = inputs.on_dir, inputs.off_dir
        return cls(
            inputs.on_graph,
            inputs.off_graph,
            on_dir.path,
            off_dir.path,
            on_dir,
            off_dir,
            inputs.off_dtypes,
        )


def _child(
    outcome: Any,
    table: Any,
    parent: int,
    workers: int | None,
    processes: int | None,
    channel: ShareChannel | None = None,
) -> tuple:
    _leave_to_parent(parent, channel)
    return _answer(outcome, table, workers, processes, channel)


def _leave_to_parent(parent: int, channel: ShareChannel | None) -> None:
    from ..compare.workers import die_with_parent

    # Ctrl-C and SIGTERM are the parent's to handle: it kills this process (and this process's
    # workers die with it), never a half-written report from here
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    die_with_parent(parent)
    if channel is not None:
        channel.parent.close()


def _answer(
    outcome: Any,
    table: Any,
    workers: int | None,
    processes: int | None,
    channel: ShareChannel | None,
) -> tuple:
    """The child's answer: the replay's report and its notes."""
    share = ChildShare(channel.child) if channel is not None else None
    notes: list[str] = []
    try:
        report = replay_outcome(outcome, table, notes, workers, processes, share)
    finally:
        if share is not None:
            share.decline()  # the parent may be waiting for an answer to its request
    return ("ok", report, notes)


def serve_kept(
    off_graph: Any,
    receive: Callable[[], Any],
    channel: ShareChannel | None,
    parent: int,
    folders: tuple = (),
) -> tuple | None:
    """The kept fusion-off helper's side (``then`` of :func:`.pairing.digest_in_child`): wait
    for :meth:`BackgroundReplay.start`'s request and answer it as :func:`_child` does, with
    ``off_graph``, the graph this process read. None when the caller closes without one.
    ``folders``: the dump folders as given, indexed while waiting when they hold the dump
    files themselves (used if the request names them)."""
    _leave_to_parent(parent, channel)
    # while the parent finishes discover: repeated attribute values shared (the imports and
    # the replay then allocate into the space freed), numpy and the kernels imported, the dump
    # folders indexed
    share_equal_attrs(getattr(off_graph, "ops", []) or [])
    kernel_registry()
    indexed = _index_leaves(folders, getattr(off_graph, "name", None))
    # read only now (the objects built in the space the sharing freed; a thread reading it at
    # once cost ~2 MB of RSS): the parent's send of a request larger than a pipe holds waits
    # until then, in its main thread, where Ctrl-C still interrupts it
    request = receive()
    if request is None:
        return None
    view, on_dump_dir, off_dump_dir, table, workers, processes = request
    on_graph = graph_of_view(view)
    del request, view  # the rows, once the ops are built: not kept while the replay runs
    on_dumps = indexed.get(os.path.realpath(on_dump_dir))
    off_dumps = indexed.get(os.path.realpath(off_dump_dir))
    source = ReplaySource(on_graph, off_graph, Path(on_dump_dir), Path(off_dump_dir))
    source.on_dumps, source.off_dumps = on_dumps, off_dumps
    return _answer(source, table, workers, processes, channel)


def _index_leaves(folders: tuple, graph_name: str | None = None) -> dict[str, Any]:
    """The dump folders of ``folders`` indexed, by the real path of the leaf that holds the
    files: a folder that holds them itself, or the leaf below it that the comparison's first
    try picks (the model folder named like ``graph_name``, the fusion-off graph's; a tree of
    one model gives the same leaf whatever the name). The request names the leaves the
    comparison used: an index of another is not used. Any problem is left to the replay,
    which indexes the folder then."""
    indexed: dict[str, Any] = {}
    for folder in folders:
        with contextlib.suppress(DumpDirError, OSError, TypeError, ValueError):
            real = os.path.realpath(folder)
            if real in indexed:
                continue
            if holds_dump_files(real):
                indexed[real] = scan_dump_dir(real)
            else:
                found = scan_dump_dir(real, graph_name)
                indexed.setdefault(os.path.realpath(found.path), found)
    return indexed


def _request(source: Any, table: Any, workers: int | None, processes: int | None) -> tuple | None:
    """What :func:`serve_kept` needs besides the fusion-off graph, or None when ``source``
    lacks it (then the replay runs as without the kept helper)."""
    on_graph = getattr(source, "on_graph", None)
    on_dir, off_dir = getattr(source, "on_dump_dir", None), getattr(source, "off_dump_dir", None)
    if on_graph is None or on_dir is None or off_dir is None:
        return None
    view = on_view(on_graph)
    if view is None:
        return None
    return (view, os.fspath(on_dir), os.fspath(off_dir), table, workers, processes)


class BackgroundReplay:
    """``start`` → (work here) → ``result(notes)`` → ``close`` (always, e.g. in ``finally``)."""

    def __init__(
        self,
        outcome: Any,
        table: Mapping[str, Mapping[str, Any]] | None,
        workers: int | None = None,
        processes: int | None = None,
        share: bool = False,
        host: ForkedCall | None = None,
        rerun_processes: int | None = None,
    ) -> None:
        self.outcome = outcome
        self.table = table
        self.workers = workers  # processes the replay may use (None: every core)
        self.processes = processes  # of those, how many the child uses (None: all)
        # share: this process measures the end of the replay while it waits (replay_share)
        self.share = share and "fork" in multiprocessing.get_all_start_methods()
        # the kept fusion-off helper (companion: the ShareChannel it was forked with), if any
        self.host = host
        # processes of a replay run again here when the child gives no answer (None: one per
        # chunk); a memory budget's (see .replay_budget) keeps it to what the budget gave
        self.rerun_processes = rerun_processes
        self._channel: ShareChannel | None = None
        self._helped = False
        self._call = ForkedCall(_child)  # replaced in start()

    def start(self) -> BackgroundReplay:
        if (self.workers or os.cpu_count() or 1) < 2:
            self._close_host()  # nothing to overlap with: the replay runs in result()
            return self
        if self.share:
            # this process imports the kernels anyway to measure what the child hands over:
            # imported before the fork, the child does not import them again
            kernel_registry()
        if self.host is not None:
            # given a kept helper, never fork: the caller's threads may be running by now;
            # if the helper cannot take the request, the replay runs in result()
            self._ask_host()
            return self
        if self.share:
            self._channel = ShareChannel()
        # not daemonic: the child forks the replay's measuring workers
        args = (self.outcome, self.table, os.getpid(), self.workers, self.processes)
        self._call = ForkedCall(_child, (*args, self._channel), daemon=False)
        self._call.start()
        if self._channel is not None:
            if self._call.busy:
                self._channel.forked()
            else:
                self._channel.close()
                self._channel = None
        return self

    def _ask_host(self) -> None:
        """Send the request to the kept fusion-off helper, which becomes the child. A helper
        that cannot take it is ended, whatever failed (the view, the pickling, an
        interruption): the replay then runs in :meth:`result`."""
        host, self.host = self.host, None
        adopted = False
        try:
            request = _request(self.outcome, self.table, self.workers, self.processes)
            adopted = request is not None and host.follow(request)
        finally:
            if not adopted:
                host.close()
        if adopted:
            self._call = host
            if self.share and isinstance(host.companion, ShareChannel):
                self._channel = host.companion  # its child end is closed here already

    def _close_host(self) -> None:
        if self.host is not None:
            self.host.close()
            self.host = None

    def help(self) -> None:
        """Measure what the child hands over of its unstarted sub-graphs, now, for as long as
        it hands some over (once; nothing when it was started without ``share``). Called
        before other work this process has left, that work then overlaps with the end of the
        child's, which ends with the verdicts and the report; :meth:`result` calls it
        otherwise."""
        if self._channel is not None and not self._helped:
            self._helped = True
            help_child(self._channel.parent, self._measure_handed)

    def result(self, notes: list[str]) -> ReplayReport | None:
        """The child's report (its notes appended to ``notes``), or the replay run here.
        Waiting for it, this process first measures what the child hands over (:meth:`help`)."""
        self.help()
        message = self._call.answer()
        if message is not None and message[0] == "ok":
            notes.extend(message[2])
            return message[1]
        return replay_outcome(self.outcome, self.table, notes, self.workers, self.rerun_processes)

    def _measure_handed(self, subs: list, off_ops: dict[str, Any], judging: Any = None) -> dict:
        judge = Judge.of_handed(judging, localiser(self.table)) if judging is not None else None
        return measure_handed(subs, off_ops, EvidenceStore(*dump_dirs(self.outcome)), judge)

    def close(self) -> None:
        self._close_host()
        self._call.close()
        if self._channel is not None:
            self._channel.close()
            self._channel = None
