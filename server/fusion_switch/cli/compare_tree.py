"""`compare` on dump trees: which leaves, which graph, one run per rank.

Kept out of :mod:`.compare` (the single comparison and its output) so that the choice of inputs
reads in one place: the ranks and iteration asked for (:mod:`..readers.dump_selection` refuses to
guess), a graph picked from a folder by the ops it shares with the dump, ``--rank all`` as one
comparison per rank into ``OUT/rank_R/`` plus ``OUT/ranks_summary.json``; two statistics trees
are compared by :mod:`.compare_statistics`.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from .compare_errors import BAD_INPUT, ERROR_PREFIX, ERRORS_TOLD, tell_error
from .interrupts import interrupt_status, interrupts_once, terminate_as_interrupt

RANKS_SUMMARY = "ranks_summary.json"
REPLAY_NOT_RUN = "replay: not run"  # diagnose.replay_budget.NOT_RUN (not imported at start)


@dataclass
class Plan:
    kind: str  # "tensor" | "stats"
    runs: list[tuple[str, argparse.Namespace]] = field(default_factory=list)
    selection: object = None
    per_rank: bool = False  # --rank all: OUT/rank_R/ and ranks_summary.json, even for one rank
    # the ranks not compared (readers.dump_selection.NotCompared: rank, why, status)
    unpaired: list[Any] = field(default_factory=list)
    # (rank, why): no graph of the -f/-cf folder names its ops: unusable input, as for one run
    unpicked: list[tuple[str, str]] = field(default_factory=list)
    # what was chosen in the dump trees, as said on stderr: ranks_summary.json's "notes"
    notes: list[str] = field(default_factory=list)


_error = tell_error


def _note(message: str) -> None:
    print(f"fusion-switch compare: note: {message}", file=sys.stderr)


@cache
def _graph_name(path: str) -> str | None:
    from ..readers.graph import GraphError, load_graph

    if not path or not Path(path).is_file():
        return None
    try:
        return load_graph(path).name or None
    except (GraphError, OSError):
        return None


def plan_runs(args: argparse.Namespace) -> Plan | int:
    """The comparisons to run, or an exit status after an error message."""
    from ..readers.dump_selection import select_pairs
    from ..readers.dumpdir import DumpDirError
    from ..readers.dumptree import DumpTreeError, NoDumpsError
    from ..readers.graph import GraphError
    from ..readers.graph_folder import graph_candidates, pick_graph, remember_pick

    rank, iteration = getattr(args, "rank", None), getattr(args, "iteration", None)
    if not (Path(args.on_dump).is_dir() and Path(args.off_dump).is_dir()):
        return Plan("tensor", [("", args)])  # the single comparison reports the bad path
    try:
        selection = select_pairs(
            args.on_dump,
            args.off_dump,
            rank,
            iteration,
            # read only when a tree holds several models to choose from by the graph's name
            graph_names=(lambda: _graph_name(args.on_graph), lambda: _graph_name(args.off_graph)),
            step=getattr(args, "step", None),
        )
    except NoDumpsError:
        return Plan("tensor", [("", args)])  # no dump files: the comparison says so, as before
    except DumpTreeError as exc:
        return _error(str(exc))
    leaves_on, leaves_off = (len(tree.leaves) for tree in selection.trees)
    for note in selection.notes:
        _note(note)
    for left in selection.unpaired:  # listed with the ranks' verdicts too
        _note(f"not compared: {left.why}")  # each reason names its rank
    # said in each comparison's outputs too (its summary.json notes), after what a rank's
    # process was handed by the --rank all run (--selection-note), which saw all its leaf's
    # own choice can see: said once, as when the ranks run in turn in this process
    handed = list(getattr(args, "selection_notes", None) or [])
    chosen = [*handed, *(note for note in selection.notes if note not in handed)]
    if selection.kind == "stats":
        return Plan(
            "stats", selection=selection, unpaired=selection.unpaired, notes=list(selection.notes)
        )
    if iteration == "all":
        return _error("--iteration all is for statistics dumps; tensor dumps compare one iteration")
    every_rank = str(rank) == "all"
    plan = Plan("tensor", selection=selection, per_rank=every_rank, unpaired=selection.unpaired)
    plan.notes = list(selection.notes)
    # --rank all lays its results out per rank even when one rank is on both sides (the
    # others are reported as not compared)
    several = len(selection.pairs) > 1 or every_rank
    scanned: dict[str, list[str]] = {}  # a leaf's dumped ops, for the picks
    for pair in selection.pairs:
        ns = copy.copy(args)
        ns.selection_notes = list(chosen)
        on_leaf, off_leaf = pair.on[0], pair.off[0]
        if leaves_on > 1 or several:
            ns.on_dump = str(on_leaf.path)
        if leaves_off > 1 or several:
            ns.off_dump = str(off_leaf.path)
        if several or leaves_on > 1 or leaves_off > 1:
            _note(f"{pair.label or 'comparing'}: -m {on_leaf.path} with -g {off_leaf.path}")
        off_pick, off_key = _start_pick(
            ns.off_graph, off_leaf.path, None if several else ns, scanned
        )
        failed = None  # why no graph was picked for this pair
        try:
            for attr, flag, leaf in (("on_graph", "-f", on_leaf), ("off_graph", "-cf", off_leaf)):
                folder = getattr(ns, attr)
                if not (folder and Path(folder).is_dir() and graph_candidates(folder)):
                    continue
                answer = _pick_answer(off_pick) if attr == "off_graph" and off_pick else None
                if answer is not None and answer[0] == "error":
                    failed = answer[1]
                    break
                if answer is not None:
                    picked, why = answer[1:]
                    if off_key is not None:  # the next ranks' picks, unread
                        remember_pick(off_key, Path(picked), why)
                    if off_pick.busy:  # it goes on with the picked graph: the job's helper
                        from .compare_ahead import keep_picked_ahead

                        keep_picked_ahead(off_pick, str(picked))
                        off_pick = None
                else:
                    try:
                        ops = _dumped_ops(leaf.path, scanned)
                        # one run: its job, here, takes the picked graph without reading it
                        # again; several (ranks) run as other processes or one after the other
                        picked, why = pick_graph(
                            folder, ops, flag, keep=not several, remember=several
                        )
                    except (GraphError, DumpDirError) as exc:
                        failed = str(exc)
                        break
                _note(why)
                ns.selection_notes.append(why)
                plan.notes.append(f"{pair.label}: {why}" if several and pair.label else why)
                setattr(ns, attr, str(picked))
        finally:
            if off_pick:
                off_pick.close()
        if failed is not None and not several:
            return _error(failed)
        if failed is not None:  # this rank is not compared; the others are (a review)
            _note(f"{pair.label or 'comparing'}: not compared: {failed}")
            plan.unpicked.append((str(pair.rank) if pair.rank is not None else pair.label, failed))
            continue
        if several:
            ns.out_dir = str(Path(args.out_dir) / pair.folder)
        plan.runs.append((pair.label, ns))
    return plan


def _start_pick(
    folder: str | None,
    leaf: Path,
    run: argparse.Namespace | None,
    scanned: dict[str, list[str]],
) -> tuple[Any, tuple | None]:
    """The pick of the fusion-off graph from ``folder``, started in a forked helper that sends
    back only (file, note) or the error text, and the pick's key to remember it by (several
    runs); no helper when it is picked here (not a folder of graphs, small graphs, no fork, or
    a pick already made: the ranks of one model dump the same ops). With ``run`` (the
    arguments of the one comparison to run) the helper goes on as that comparison's fusion-off
    digest helper (``compare_ahead.pick_fusion_off_graph_ahead``).

    Issue 16: the job needs only a digest of the fusion-off graph, which its own helper reads
    from the file. Picked here, the graph (5,000 ops: ~50 MB) was held by this process while
    that helper and the workers were forked, and counted again in each of them; the pick
    also read it here, one graph after the other, where the helper reads it beside the
    fusion-on graph's pick."""
    from ..compare import forked
    from ..readers.graph_folder import graph_candidates

    if not folder or not Path(folder).is_dir():
        return None, None
    candidates = graph_candidates(folder)
    with contextlib.suppress(OSError):
        if sum(path.stat().st_size for path in candidates) >= forked.GRAPH_FORK_BYTES:
            if run is not None:
                from .compare_ahead import pick_fusion_off_graph_ahead

                return pick_fusion_off_graph_ahead(folder, str(leaf), run), None
            from ..readers.dumpdir import DumpDirError
            from ..readers.graph_folder import known_pick, pick_key

            try:
                ops = _dumped_ops(leaf, scanned)
            except DumpDirError:
                return None, None  # picked here, which reports it
            key = pick_key(folder, candidates, ops, "-cf")
            if key is None or known_pick(key) is not None:
                return None, None
            started = forked.ForkedCall(_pick_in_child, (folder, ops)).start()
            return (started, key) if started.busy else (None, None)
    return None, None


def _dumped_ops(leaf: str | Path, scanned: dict[str, list[str]]) -> list[str]:
    """The op names dumped in ``leaf``, scanned once per plan; DumpDirError."""
    from ..readers.dumpdir import scan_dump_dir

    key = str(leaf)
    if key not in scanned:
        scanned[key] = scan_dump_dir(leaf).op_names
    return scanned[key]


def _pick_answer(call: Any) -> tuple | None:
    """("ok", file, note) or ("error", message) from a picking helper; None when it gave
    neither (the pick is then made here). A helper that goes on to the digest tells the pick
    ahead of its answer."""
    if call.early_value:
        told = call.early()
        if told is not None:
            return told
    return call.answer()


def _pick_in_child(folder: str, ops: list[str]) -> tuple:
    """Helper body: ("ok", picked file, note) or ("error", message). Any other failure gives no
    answer, and the parent picks the graph itself (and reports what goes wrong then)."""
    from ..readers.graph import GraphError
    from ..readers.graph_folder import pick_graph

    try:
        picked, why = pick_graph(folder, ops, "-cf", keep=False)
    except GraphError as exc:
        return ("error", str(exc))
    return ("ok", picked, why)


def run_per_rank(args: argparse.Namespace, plan: Plan, runner, progress=None) -> int:
    """``--rank all``: one comparison per rank, then a line per rank and a combined summary.

    Ranks run side by side, each in its own process (see :func:`rank_slots`); with
    ``--scheduler`` or one slot they run one after the other in this process, each on every
    worker. The combined summary lists them in rank order either way."""
    from ..readers.collector import free_left_to_exit

    slots = rank_slots(args, plan)
    if slots > 1:
        results = ranks_in_parallel(args, plan, slots, progress)
        if isinstance(results, int):
            return results
    else:
        results = []
        with _one_cluster(args):
            for label, ns in plan.runs:
                print(f"== {label}: results in {ns.out_dir}", file=sys.stderr)
                told = len(ERRORS_TOLD)
                status, outputs = runner(ns)
                if status in (130, 143):  # Ctrl-C or SIGTERM: the next ranks do not run
                    print(f"fusion-switch compare: stopped at {label}", file=sys.stderr)
                    return status
                summary = outputs.summary if outputs is not None else {}
                error = ERRORS_TOLD[-1] if len(ERRORS_TOLD) > told else None
                results.append(_rank_result(label, ns, status, summary, error=error))
                del outputs
                free_left_to_exit()  # this rank's graphs and rows: not held over the next
    results += [_unpaired_result(n.rank, n.why, n.status) for n in plan.unpaired]
    # exit 2 (a review: 3 said "evidence missing" of a wrong graph folder, and dump again)
    results += [_unpaired_result(rank, why, BAD_INPUT) for rank, why in plan.unpicked]
    results.sort(key=_rank_order)
    from ..diagnose.exit_status import ranks_exit_status

    worst = ranks_exit_status(r["status"] for r in results)
    out = Path(args.out_dir)
    combined = {"ranks": results, "exit_status": worst, "notes": plan.notes}
    written = _write_ranks_summary(out, combined)
    if not written:
        worst = BAD_INPUT  # the ranks' own outputs are written, the combined one is not
    if args.fmt == "json":
        json.dump(combined, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        for r in results:
            top = r["suspects"][0] if r["suspects"] else None
            blame = f"  top suspect {top['rule']} [{top['section']}]{_label(top)}" if top else ""
            where = f"\n   {r['out_dir']}" if r["out_dir"] else ""
            note = f"\n   {r['note']}" if r.get("note") else ""
            print(f"rank {r['rank']}: {r['verdict']}{blame}{note}{where}")
        for note in plan.notes:
            print(f"note: {note}")
        if written:
            print(f"summary of all ranks: {(out / RANKS_SUMMARY).resolve()}")
    return worst


def _write_ranks_summary(out: Path, combined: dict) -> bool:
    """Write ``OUT/ranks_summary.json`` as every file we keep is written
    (``workflow.safe_files``): all at once, a link planted at its name replaced, never written
    through (a review: a plain write followed it); False after saying why it could not be."""
    from ..workflow.safe_files import atomic_write_bytes

    data = (json.dumps(combined, indent=1) + "\n").encode("utf-8", "backslashreplace")
    try:
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(out / RANKS_SUMMARY, data)
    except OSError as exc:
        _error(f"cannot write {RANKS_SUMMARY} into {out}: {exc}")
        return False
    return True


@contextlib.contextmanager
def _one_cluster(args: argparse.Namespace):
    """With ``--scheduler``: one Dask client for all ranks (a LocalCluster starts once). A
    scheduler that cannot be reached is left for the first rank's comparison to report."""
    scheduler = getattr(args, "scheduler", None)
    with contextlib.ExitStack() as stack:
        if scheduler:
            from ..compare.runners import SchedulerError, dask_session

            with contextlib.suppress(SchedulerError):
                budget = getattr(args, "memory_budget", None)
                stack.enter_context(dask_session(scheduler, args.workers, budget))
        yield


def _label(suspect: dict) -> str:
    """What a rank's top suspect is, beside its name (a review: a heuristic guess or a rule
    CANN will not switch off read as a plain proof in the ranks' table)."""
    words = []
    if suspect.get("verdict") == "heuristic":
        words.append("heuristic, not proven by replay")
    if suspect.get("cannot_switch_off"):
        words.append("on CANN's forbidden-close list: cannot be switched off")
    return f" ({'; '.join(words)})" if words else ""


def _rank_result(
    label: str,
    ns: argparse.Namespace,
    status: int,
    summary: dict,
    lost: bool = False,
    error: str | None = None,
) -> dict:
    """``lost``: the rank's exit status never came (its fork server was killed); its summary,
    when it wrote one, says how it ended. ``error``: the last error the rank told, the reason
    of a rank not compared (a review: ranks_summary.json said only "see the error above")."""
    from ..diagnose.exit_status import exit_status

    suspects = summary.get("suspects", [])
    told = f"not compared: {error}" if error else "not compared (see the error above)"
    verdict = summary.get("verdict", told)
    if lost and "verdict" in summary:  # it finished: its outputs are complete
        status = exit_status(summary)
    elif status == 1 and "verdict" not in summary:  # 1 is "a rule proven": not for a crash
        status = 2
    elif status not in (0, 1, 2, 3):  # its process was killed (out of memory: SIGKILL) or crashed
        ended = f"signal {-status}" if status < 0 else f"exit status {status}"
        verdict = f"not compared: the rank's comparison ended by {ended}"
        status = 2  # a rank not compared is never "no rule proven" (a review, issue 16)
    result = {
        "rank": label.removeprefix("rank "),
        "status": status,
        "out_dir": str(Path(ns.out_dir).resolve()),
        "verdict": verdict,
        "suspects": [
            {
                "rule": s["rule"],
                "section": s["section"],
                "score": s["score"],
                "verdict": s.get("verdict", "introduces"),
                **({"cannot_switch_off": True} if s.get("cannot_switch_off") else {}),
            }
            for s in suspects[:5]
        ],
    }
    # why its suspects are unverified: said with the verdict, not only in its own folder
    notes = (summary.get("inputs") or {}).get("notes") or []
    left_out = next((n for n in notes if str(n).startswith(REPLAY_NOT_RUN)), None)
    if left_out is not None:
        result["note"] = left_out
    return result


def _unpaired_result(rank: str, why: str, status: int = 3) -> dict:
    """A rank dumped on one side only (or a dump folder not under a rank folder): not compared,
    which makes the run's verdict "evidence missing" (3), never "no rule proven" (0); one
    whose graph could not be picked, or whose dumps need the user's choice (several process
    starts, no model folder named like the graph): unusable input (2)."""
    return {"rank": rank, "status": status, "out_dir": None, "verdict": f"not compared: {why}",
            "suspects": []}  # fmt: skip


def _rank_order(result: dict) -> tuple:
    from ..readers.dumptree import natural_key

    return natural_key(result["rank"])


def rank_slots(args: argparse.Namespace, plan: Plan) -> int:
    """How many ranks compare at once: one per core (``--workers`` cores when given), fewer
    when ``--memory-budget`` cannot hold that many (see :func:`rank_bytes`) with, unless
    ``--no-replay``, each rank's replay (:func:`replay_after_bytes`). One slot, or a Dask
    scheduler (which spreads each rank over its own workers), runs them in turn.

    A review: counted without the replay, a budget of 660 MiB ran four ranks whose shares
    held their comparisons but none of their replays (all four left unverified, exit 0),
    where one rank at a time proved the rule in each."""
    if getattr(args, "scheduler", None) or len(plan.runs) < 2:
        return 1
    cores = args.workers or os.cpu_count() or 1
    slots = min(len(plan.runs), max(1, cores))
    budget = _ranks_budget(args)
    if budget is not None and slots > 1:
        replay = not getattr(args, "no_replay", False)
        need = max(
            rank_bytes(ns) + (replay_after_bytes(ns) if replay else 0) for _, ns in plan.runs
        )
        slots = min(slots, max(1, budget // need))
    return slots


def _ranks_budget(args: argparse.Namespace) -> int | None:
    """``--memory-budget`` less what the fork server holds beside the ranks it forks (once;
    a budget that cannot hold it runs one rank at a time anyway: a rank counts more); None
    without a budget."""
    budget = getattr(args, "memory_budget", None)
    if not budget:
        return None
    from .rank_process import SERVER_BYTES, forked_ranks

    return budget - SERVER_BYTES if forked_ranks() and budget > SERVER_BYTES else budget


_RANK_BASE_BYTES = 96 << 20  # one comparing process: interpreter, numpy, buffers, headers
_RANK_BYTES_PER_GRAPH_BYTE = 6  # parsed graphs while being read (measured ~4.4x at 5,000 ops)


def rank_bytes(ns: argparse.Namespace) -> int:
    """Memory one rank's comparison needs at its peak: its graph files, and one comparing
    worker (the rank's process compares too) for its largest fusion-on dump file."""
    graphs = 0
    for path in (ns.on_graph, ns.off_graph):
        with contextlib.suppress(OSError, TypeError):
            graphs += os.path.getsize(path)
    worker = _largest_dump_need(getattr(ns, "on_dump", None), getattr(ns, "off_dump", None))
    return _RANK_BASE_BYTES + _RANK_BYTES_PER_GRAPH_BYTE * graphs + worker


def replay_after_bytes(ns: argparse.Namespace) -> int:
    """What a rank's replay adds to its comparing process after the comparison, by the
    replay's own estimate (``diagnose.replay_budget``) from files alone: the fusion-off graph,
    and the largest fusion-on dump file taken for the fused op that needs most, by the
    dtypes its header names. Counted on top of :func:`rank_bytes`, whose comparing worker's
    buffers are let go by then: a rank's share holds its replay with room."""
    from ..diagnose.replay_budget import added_after, copies_per_dump_byte

    graph = 0
    with contextlib.suppress(OSError, TypeError):
        graph = os.path.getsize(ns.off_graph)
    largest, path = _largest_file(getattr(ns, "on_dump", None))
    if path is None:
        return added_after(graph, 0, 0)
    copies = largest * copies_per_dump_byte(_header_dtypes(path))
    return added_after(graph, copies, largest)


def _largest_dump_need(folder: str | None, off_folder: str | None = None) -> int:
    """``compare.worker_memory.op_need`` of the largest file in ``folder`` (a rank's leaf), by
    the dtypes its own header names (a header that cannot be read: as int8, the most per
    byte), against the widest dtype of the largest file in ``off_folder`` (the fusion-off
    leaf); 0 without files. The graphs are not read here: the ranks' processes read them."""
    largest, path = _largest_file(folder)
    if path is None:
        return 0
    from ..compare.metrics import kernel_in_use
    from ..compare.worker_memory import op_need, widest_bits

    off_path = _largest_file(off_folder)[1]
    off_bits = widest_bits(_header_dtypes(off_path)) if off_path is not None else 0
    return op_need(largest, _header_dtypes(path), kernel_in_use(), off_bits)


def _largest_file(folder: str | None) -> tuple[int, str | None]:
    """The size and path of the largest file in ``folder``; (0, None) without one."""
    largest, path = 0, None
    if folder:
        with contextlib.suppress(OSError, TypeError), os.scandir(folder) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    size = entry.stat().st_size if entry.is_file() else 0
                    if size > largest:
                        largest, path = size, entry.path
    return largest, path


def _header_dtypes(path: str) -> list[str]:
    """The dtypes a dump file's header names (a ``.npy`` file's tensor carries its dtype's
    code too); none when it cannot be read."""
    from ..readers.dtypes import data_type_name
    from ..readers.dump import DumpError, read_dump

    with contextlib.suppress(DumpError):
        dump = read_dump(path)
        return [data_type_name(t.data_type) for t in (*dump.inputs, *dump.outputs)]
    return []


PARENT_VARIABLE = "FUSION_SWITCH_RANK_PARENT"  # pid a rank's process must not outlive
_WAKE_SECONDS = 0.1  # how soon the waiting loop sees a Ctrl-C or SIGTERM


def rank_command(args: argparse.Namespace, ns: argparse.Namespace, workers: int, budget) -> list:
    """The ``fusion-switch`` arguments comparing one rank in its own process (JSON summary on
    stdout; see :mod:`.rank_process`)."""
    # FLAG=VALUE: a path that starts with "-" (an output folder "-run2") is no option there
    command = ["compare", f"-m={ns.on_dump}", f"-g={ns.off_dump}", f"-out={ns.out_dir}"]
    if ns.on_graph:
        command.append(f"-f={ns.on_graph}")
    if ns.off_graph:
        command.append(f"-cf={ns.off_graph}")
    command += ["--format", "json", "--progress", "jsonl", "--workers", str(workers)]
    if ns.algorithms:
        command += ["-alg", *ns.algorithms]
    if ns.max_cmp_size:
        command += ["-max", str(ns.max_cmp_size)]
    for threshold in ns.threshold or []:
        command += ["--threshold", threshold]
    if ns.fusion_result:
        command += ["--fusion-result", str(ns.fusion_result)]
    if getattr(ns, "no_replay", False):
        command.append("--no-replay")
    for note in getattr(ns, "selection_notes", None) or []:
        command.append(f"--selection-note={note}")
    if budget:
        command += ["--memory-budget", str(budget)]
    return command


def ranks_in_parallel(
    args: argparse.Namespace, plan: Plan, slots: int, progress=None
) -> list[dict] | int:
    """Compare the ranks ``slots`` at a time, each in a child process; their results in rank
    order, or 130 after Ctrl-C, 143 after SIGTERM (every child is stopped and cleans up first).
    ``progress(done, total, message)`` gets the ops of all ranks together."""
    import signal
    import tempfile
    import threading
    from concurrent.futures import ThreadPoolExecutor, wait

    from ..readers.signals_held import born_with_signals_held
    from .rank_process import start_rank

    cores = args.workers or os.cpu_count() or 1
    workers = max(1, cores // slots)
    budget = _ranks_budget(args)
    if budget:  # each rank's share, as rank_slots counted them
        budget //= slots
    env = dict(os.environ, **{PARENT_VARIABLE: str(os.getpid())})
    live: set = set()  # the ranks' processes (start_rank)
    lock = threading.Lock()
    stopping = threading.Event()
    tally = _RankTally(len(plan.runs), progress)

    def one(position: int, label: str, ns: argparse.Namespace) -> dict:
        if stopping.is_set():
            return _rank_result(label, ns, 130, {})
        with tempfile.TemporaryFile() as stdout:
            # the rank is born with Ctrl-C and SIGTERM blocked, and takes them once it can
            # handle them (die_with_rank_parent); the fork server the first start starts never
            # does: a SIGTERM to the group killed it, and the ranks it ran were reported with
            # status 255. Both signals are this process's main thread's either way
            with lock, born_with_signals_held(frozenset({signal.SIGINT, signal.SIGTERM})):
                if stopping.is_set():  # stop_children ran while this thread waited for it
                    return _rank_result(label, ns, 130, {})
                child = start_rank(rank_command(args, ns, workers, budget), stdout, env)
                live.add(child)
            try:
                kept = tally.follow(position, child.stderr)
                child.wait()
            finally:
                child.stderr.close()
                with lock:
                    live.discard(child)
            stdout.seek(0)
            out = stdout.read()
        try:
            summary = json.loads(out) if out.strip() else {}
        except ValueError:
            summary = {}
        with lock:
            if child.returncode not in (0, 1, 3) or kept:
                print(
                    f"== {label}: exit {child.returncode}, results in {ns.out_dir}", file=sys.stderr
                )
                for line in kept:
                    print(f"   {line}", file=sys.stderr)
        tally.finished(position)
        lost = getattr(child, "status_lost", False)
        errors = [line.removeprefix(ERROR_PREFIX) for line in kept if line.startswith(ERROR_PREFIX)]
        error = errors[-1] if errors else None
        result = _rank_result(label, ns, child.returncode, summary, lost, error)
        if budget and "note" in result:  # the note's budget is this rank's share
            result["note"] += (
                f"; {budget >> 20} MiB is this rank's share of --memory-budget "
                f"{args.memory_budget >> 20} MiB ({slots} ranks at a time: --workers sets how "
                "many)"
            )
        return result

    def stop_children() -> None:
        stopping.set()
        with lock:
            for child in live:
                with contextlib.suppress(OSError):
                    child.send_signal(signal.SIGTERM)

    # Ctrl-C and SIGTERM are only noted while this thread waits, and once one came the next
    # are ignored until every rank has stopped (cli.interrupts.interrupts_once). The first
    # one's handler sets ``stopping`` at once: a rank thread whose rank ended before this loop
    # woke started the next rank, which was then stopped (exit 143)
    with (
        terminate_as_interrupt(),
        interrupts_once(raising=False, on_first=stopping.set) as interrupts,
    ):
        pool = ThreadPoolExecutor(slots, thread_name_prefix="rank")
        futures = [pool.submit(one, i, label, ns) for i, (label, ns) in enumerate(plan.runs)]
        try:
            while wait(futures, timeout=_WAKE_SECONDS).not_done and interrupts.first is None:
                pass
            stop = interrupts.first
            if stop is None:
                return [future.result() for future in futures]
            # a terminal's Ctrl-C reached the ranks too; SIGTERM, or Ctrl-C to this process
            # alone, did not: each rank stops at the first of them and ignores the other
            stop_children()
            print("fusion-switch compare: interrupted, stopping every rank...", file=sys.stderr)
            pool.shutdown(wait=True, cancel_futures=True)
            return interrupt_status(stop)
        finally:
            pool.shutdown(wait=True)


class _RankTally:
    """The ranks' progress added up: each child reports JSON lines on stderr (done and total
    ops of its rank); a rank that has not said its total yet counts as the average of those
    that have."""

    def __init__(self, ranks: int, progress) -> None:
        import threading

        self.ops = [(0, 0)] * ranks
        self.ranks_done = 0
        self.progress = progress
        self.lock = threading.Lock()

    def follow(self, position: int, stream) -> list[str]:
        """Read one child's stderr to its end; the lines that are not progress."""
        kept = []
        for raw in stream:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if line.startswith("{"):
                with contextlib.suppress(ValueError, KeyError, TypeError):
                    report = json.loads(line)
                    self._update(position, int(report["done"]), int(report["total"]))
                    continue
            if line.strip():
                kept.append(line)
        return kept

    def finished(self, position: int) -> None:
        with self.lock:
            self.ranks_done += 1
            done, total = self.ops[position]
            self.ops[position] = (max(done, total), total)
        self._report()

    def _update(self, position: int, done: int, total: int) -> None:
        with self.lock:
            self.ops[position] = (done, total)
        self._report()

    def _report(self) -> None:
        if self.progress is None:
            return
        with self.lock:
            known = [total for _, total in self.ops if total]
            if not known:
                return
            guess = sum(known) // len(known)
            total = sum(total or guess for _, total in self.ops)
            done = sum(done for done, _ in self.ops)
            message = f"{self.ranks_done} of {len(self.ops)} ranks done"
        self.progress(min(done, total), total, message)


def die_with_rank_parent() -> None:
    """In a rank's process (see :func:`ranks_in_parallel`): get SIGTERM, handled as Ctrl-C so
    that the temporary files go, when the ``--rank all`` process ends, even by SIGKILL (the
    parent-death signal where the rank is its child, a watch of its pid where the rank was
    forked from the fork server, :mod:`.rank_process`). And take Ctrl-C and SIGTERM from here
    on: the process was born with them blocked, so that a terminal's Ctrl-C during its start,
    before any handler, waits until now (it printed a KeyboardInterrupt traceback from importlib; a
    kill stress, issue 16)."""
    parent = os.environ.pop(PARENT_VARIABLE, None)
    if not parent:
        return
    import signal

    from ..compare.parent_death import signal_when_parent_ends

    if hasattr(signal, "pthread_sigmask"):  # one held back is raised here: 130 or 143, said so
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    # a new interpreter it started: the parent-death signal; forked from the fork server
    # (.rank_process), which outlives the run while a rank lives: a watch of its pid
    signal_when_parent_ends(int(parent), signal.SIGTERM)
