"""`fusion-switch compare`: msaccucmp's comparison plus the verdict (which fusion rule to blame).

Takes msaccucmp's flags (`-m -g -f -cf -out -alg`, also their long forms), writes
`result_*.csv`, `summary.json` and `report.html` into the output folder, and prints the top
suspects. Exit status: 0 compared and no rule is proven to introduce error, 1 the replay proves
at least one rule introduces error, 2 the inputs cannot be compared (message says which and why)
or no tensor could be paired (the files are still written), 3 evidence missing: a dump file a
verdict needs cannot be read, or the replay was left out by --memory-budget (the verdict is
incomplete, never "clean"), 130 interrupted
(Ctrl-C; nothing half-written is left), 143 terminated (SIGTERM; the same clean-up).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from .compare_errors import tell_error
from .interrupts import interrupt_status, interrupts_once, terminate_as_interrupt
from .verdict_text import print_verdict


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="compare fusion-on with fusion-off dumps and name the fusion rule to blame",
        description=(
            "Compare a fusion-on run with a fusion-off run (msaccucmp's flags), then rank the "
            "fusion rules by the error their fused ops introduce."
        ),
        allow_abbrev=False,
    )
    add_compare_arguments(parser)
    parser.set_defaults(func=run)


def add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    req = parser.add_argument
    req(
        "-m",
        "--my_dump_path",
        "--my-dump-path",
        dest="on_dump",
        required=True,
        metavar="DIR",
        help="fusion-on dump folder (the leaf folder or any folder above it)",
    )
    req(
        "-g",
        "--golden_dump_path",
        "--golden-dump-path",
        dest="off_dump",
        required=True,
        metavar="DIR",
        help="fusion-off dump folder",
    )
    req(
        "-f",
        "--fusion_rule_file",
        "--fusion-rule-file",
        dest="on_graph",
        default=None,
        metavar="JSON|TXT",
        help="fusion-on graph: atc JSON or ge_proto_*_Build.txt, or the folder holding it "
        "(required for tensor dumps)",
    )
    req(
        "-cf",
        "--close_fusion_rule_file",
        "--close-fusion-rule-file",
        dest="off_graph",
        default=None,
        metavar="JSON|TXT",
        help="fusion-off graph",
    )
    req(
        "-out",
        "--output",
        dest="out_dir",
        default=".",
        metavar="DIR",
        help="folder for result_*.csv, summary.json and report.html (default: .)",
    )
    req(
        "-alg",
        "--algorithm",
        dest="algorithms",
        nargs="+",
        default=None,
        metavar="ALG",
        help="metrics to compute: indexes 0-9 or names, as msaccucmp (default: all)",
    )
    req(
        "-max",
        "--max_cmp_size",
        "--max-cmp-size",
        dest="max_cmp_size",
        type=int,
        default=0,
        metavar="N",
        help="compare only the first N elements of each tensor (0: all)",
    )
    req(
        "--threshold",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a judging threshold, e.g. cos=0.999 or RelativeEuclideanDistance=0.1 "
        "(kl=off drops one); defaults: cos>0.99, red<0.05, kl<0.005, rmse<1.0, mre<1.0",
    )
    req(
        "--workers",
        type=_worker_count,
        default=None,
        metavar="N",
        help="processes that compare, this one included (default or 0: all cores; 1 = this "
        "process only)",
    )
    req(
        "--scheduler",
        default=None,
        metavar="ADDRESS|local",
        help="run the comparison on Dask distributed: a scheduler address (tcp://host:8786; "
        "dumps on storage every worker sees under the same paths) or 'local' for a "
        "LocalCluster on this machine (needs fusion-switch[dask])",
    )
    req(
        "--memory-budget",
        dest="memory_budget",
        type=_byte_size,
        default=None,
        metavar="SIZE",
        help="memory the workers and the replay may use together, e.g. 4G or 512M (default: "
        "no limit); fewer workers run when one worker's share would be too small, the "
        "replay waits for the comparison when both would not fit, and is not run when it "
        "would not fit even then; with --scheduler local it sets the Dask workers' memory "
        "limits only",
    )
    req(
        "--fusion-result",
        "--fusion_result",
        dest="fusion_result",
        default=None,
        metavar="JSON",
        help="fusion_result.json naming each rule's section (default: one "
        "next to the fusion-on graph or dump, if any)",
    )
    req(
        "--format",
        choices=("text", "json"),
        default="text",
        dest="fmt",
        help="verdict on stdout as text or as the summary JSON",
    )
    req(
        "--no-replay",
        action="store_true",
        help="skip the replay of fused ops (verdicts are then unverified heuristic guesses)",
    )
    req(
        "--rank",
        default=None,
        metavar="R|all",
        help="rank to compare when the dump trees hold several: a device id (0), or the folders "
        "above the time folder and the device id (node0/0) as `dumps` lists them; 'all' "
        "compares each rank with the same rank (results in OUT/rank_R/)",
    )
    req(
        "--iteration",
        default=None,
        metavar="I",
        help="iteration to compare when the dump trees hold several ('all' for statistics)",
    )
    req(  # what --rank all chose in the dump trees, handed to each rank's process
        "--selection-note",
        dest="selection_notes",
        action="append",
        default=None,
        help=argparse.SUPPRESS,
    )
    req(
        "--step",
        default=None,
        metavar="S",
        help="training step to compare when the dump trees hold step folders above the time "
        "folders (MindSpore O2 {step_id}/, msprobe step{N}/); the same step on both sides",
    )
    req("--no-progress", action="store_true", help="no progress output on stderr")
    req(
        "--progress",
        choices=("text", "jsonl"),
        default="text",
        dest="progress_format",
        help="progress on stderr as text (a bar on a terminal) or as JSON lines "
        '{"done": N, "total": N, "message": "..."} for programs (the language server)',
    )


def _byte_size(text: str) -> int:
    """``4G``, ``512M``, ``1048576``: bytes (binary units, an optional trailing B)."""
    from ..workflow.sizes import parse_size

    try:
        return parse_size(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _worker_count(text: str) -> int:
    """``--workers``: a whole number, 0 for every core (a negative one ran as 1, unsaid)."""
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if count < 0:
        raise argparse.ArgumentTypeError(
            f"{text}: give 0 (every core) or a number of processes, this one included"
        )
    return count


def _test_delay() -> float:
    """`FUSION_SWITCH_COMPARE_DELAY` (seconds, tests only): both progress kinds sleep after
    each line they write, so tests can make a tiny case slow enough to observe progress,
    cancellation and concurrent requests (a 400-op comparison ends within milliseconds)."""
    try:
        return max(0.0, float(os.environ.get(DELAY_VARIABLE, "") or 0.0))
    except ValueError:
        return 0.0


class Progress:
    """A bar redrawn in place on a terminal; plain lines (every 10%) otherwise."""

    def __init__(self, stream: TextIO, enabled: bool = True) -> None:
        self.stream = stream
        self.enabled = enabled
        self.tty = enabled and stream.isatty()
        self.last_step = -1
        self.last_draw = 0.0
        self.lock = threading.Lock()
        self.delay = _test_delay()

    def __call__(self, done: int, total: int, message: str = "") -> None:
        if not self.enabled:
            return
        if self._write(done, total, message) and self.delay:
            time.sleep(self.delay)

    def _write(self, done: int, total: int, message: str) -> bool:
        """Write the report if it shows something new; whether it did."""
        with self.lock:
            if total == 0 and done == 0:  # the job started; the op count is not known yet
                line = f"compare: {message}..."
                self.stream.write(f"\r{line}" if self.tty else f"{line}\n")
                self.stream.flush()
                return True
            fraction = done / total if total else 1.0
            if self.tty:
                now = time.monotonic()
                if now - self.last_draw < 0.05 and done < total:
                    return False
                self.last_draw = now
                width = 30
                filled = int(width * fraction)
                bar = "#" * filled + "-" * (width - filled)
                self.stream.write(f"\r[{bar}] {fraction * 100:5.1f}% {done}/{total} ops")
                if done >= total:
                    self.stream.write("\n")
            else:
                step = int(fraction * 10)
                if step == self.last_step:
                    return False
                self.last_step = step
                self.stream.write(f"compare: {done}/{total} ops ({fraction * 100:.0f}%)\n")
            self.stream.flush()
            return True

    def clear(self) -> None:
        if self.tty:
            self.stream.write("\r" + " " * 60 + "\r")
            self.stream.flush()


class JsonLinesProgress:
    """One JSON object per progress call on its own line, flushed at once (for programs that
    read the progress while the job runs, such as the language server).

    Slowed down for tests as :class:`Progress` is (:func:`_test_delay`)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.lock = threading.Lock()
        self.delay = _test_delay()

    def __call__(self, done: int, total: int, message: str = "") -> None:
        with self.lock:
            line = json.dumps({"done": done, "total": total, "message": message})
            self.stream.write(line + "\n")
            self.stream.flush()
        if self.delay:
            time.sleep(self.delay)

    def clear(self) -> None:
        pass


DELAY_VARIABLE = "FUSION_SWITCH_COMPARE_DELAY"


_error = tell_error


def input_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the paths given, said so that the user knows what to give instead;
    None when they can be compared. The same dump folder or graph on both sides is refused:
    it would compare a run with itself and blame nothing, or (swap detection) the wrong side."""
    graphs = (("-f", args.on_graph), ("-cf", args.off_graph))
    dumps = (("-m", args.on_dump), ("-g", args.off_dump))
    for flag, path in graphs:
        if path is None:
            return (
                f"the following arguments are required for tensor dumps: {flag} (the graph "
                "file, ge_proto_*_Build.txt or atc JSON)"
            )
        if Path(path).is_dir():
            from ..readers.graph_folder import graph_candidates

            if graph_candidates(path):
                continue  # a graph dump folder: the graph matching the dump is picked
            return (
                f"{flag} {path} is a folder; give the graph file (ge_proto_*_Build.json or .txt) "
                "or a folder holding ge_proto_*_Build.txt / graph JSON (this one holds none)"
            )
        if not Path(path).is_file():
            return f"{flag} {path}: no such file (expected a graph JSON or .txt)"
    for flag, path in dumps:
        if Path(path).is_file():
            return f"{flag} {path} is a file; give the dump folder (or a folder above it)"
        if not Path(path).is_dir():
            return f"{flag} {path}: no such folder (expected a dump folder)"
    if _same_path(args.on_dump, args.off_dump):
        return (
            f"-m and -g are the same folder ({os.path.realpath(args.on_dump)}): give the "
            "fusion-on dump as -m and the fusion-off dump as -g"
        )
    if _same_path(args.on_graph, args.off_graph):
        return (
            f"-f and -cf are the same file ({os.path.realpath(args.on_graph)}): give the "
            "fusion-on graph as -f and the fusion-off graph as -cf"
        )
    blocker = blocking_file(Path(args.out_dir))
    if blocker is not None:
        where = "" if blocker == Path(args.out_dir) else f": {blocker}"
        return (
            f"-out {args.out_dir}{where} is a file, not a folder; give a folder for -out "
            "(it is created when missing)"
        )
    return None


def _same_path(first: str, second: str) -> bool:
    """Both name one file or folder: through symbolic links, `..`, hard links or mounts."""
    if os.path.realpath(first) == os.path.realpath(second):
        return True
    try:
        return os.path.samefile(first, second)
    except OSError:
        return False


def blocking_file(path: Path) -> Path | None:
    """The first of ``path`` and its parents that exists as something other than a folder."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return None if candidate.is_dir() else candidate
    return None


def run_comparison(
    args: argparse.Namespace, progress: Progress, stream: TextIO
) -> tuple[int, Any | None]:
    """Run engine + attribution + outputs. Returns (exit status, Outputs or None)."""
    from ..compare.engine import CompareRequest, run_compare
    from ..diagnose.summary import start_replay
    from ..diagnose.thresholds import RowIndex, parse_thresholds

    try:
        thresholds = parse_thresholds(args.threshold)
    except ValueError as exc:
        return _error(str(exc)), None
    if args.fusion_result and not Path(args.fusion_result).is_file():
        return _error(f"--fusion-result {args.fusion_result}: no such file"), None
    problem = input_problem(args)
    if problem:
        return _error(problem), None
    try:
        Path(args.out_dir).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return _error(f"-out {args.out_dir}: cannot create the folder: {exc}"), None
    replay = not getattr(args, "no_replay", False)
    scheduler = getattr(args, "scheduler", None)
    workers = args.workers
    if replay and scheduler is None:  # the replay's child takes its share of the cores
        from ..diagnose.replay_cores import comparison_processes

        workers = comparison_processes(args.workers)
    request = CompareRequest(
        on_dump=args.on_dump,
        off_dump=args.off_dump,
        on_graph=args.on_graph,
        off_graph=args.off_graph,
        out_dir=args.out_dir,
        algorithms=",".join(args.algorithms) if args.algorithms else None,
        max_cmp_size=args.max_cmp_size,
        workers=workers,
        scheduler=scheduler,
        memory_budget=getattr(args, "memory_budget", None),
    )
    cancel = threading.Event()
    finished = threading.Event()  # set by the comparison thread when it ends
    wake = threading.Event()  # set when there is something for this thread to do
    box: dict[str, Any] = {}
    rows_index = box["rows_index"] = RowIndex(thresholds)  # fed while comparing (issue 16)

    def rows_ready(rows: list[Any]) -> None:
        try:
            rows_index.feed(rows)
        except Exception:  # the attribution then indexes the rows itself
            rows_index.fed = None

    replay_forked = threading.Event()  # this thread has forked the replay (or will not)

    def discovered(found: Any) -> int | None:
        box["found"] = found  # the graphs and dump folders: the replay can start (below)
        wake.set()
        # Wait while this thread forks: a fork copies every lock other threads hold, so the
        # comparison thread must not be inside the pool's or anyone's critical section then.
        while not replay_forked.wait(0.05) and not cancel.is_set():
            pass
        if "replay_after" in box:  # no replay beside: the comparison may take every core
            request.workers = args.workers
        return box.get("reserved")  # of --memory-budget, by the replay beside the comparison

    def work() -> None:
        try:
            box["outcome"] = run_compare(
                request,
                progress=progress,
                cancel=cancel,
                discovered=discovered if replay else None,
                plan_to_exit=not replay,
                rows_ready=rows_ready,
            )
        except BaseException as exc:  # handed to the main thread
            box["error"] = exc
        finally:
            finished.set()
            wake.set()

    def start_early_replay() -> None:
        """The replay needs the graphs and dump folders only: it starts as soon as they are
        known, in a child forked from this thread, and runs while the tensors are compared
        (issue 16). Forked here, not in the comparison thread: Linux's parent-death signal,
        which ends the child with its parent, fires when the forking *thread* ends."""
        found = box.pop("found", None)
        try:
            if found is None or finished.is_set() or cancel.is_set():
                return
            from ..compare.discover import host_key
            from ..compare.forked import take_ahead
            from ..diagnose.replay_background import ReplaySource  # not for --no-replay
            from ..diagnose.replay_budget import fit_source

            source = ReplaySource.of(found)
            given = _given_inputs(
                args,
                source.on_dump_dir,
                source.off_dump_dir,
                source.on_graph,
                source.off_graph,
                found.swapped_dumps,
            )
            # fitted before the kept helper is claimed: if this fails, nothing is left open
            fit = fit_source(getattr(args, "memory_budget", None), found, args.workers, scheduler)
            host = take_ahead(host_key(args.off_graph)) if args.off_graph else None
            if fit is not None and not fit.beside:  # after the comparison, in this process
                if host is not None:
                    host.close()  # its fusion-off graph is not held while the tensors compare
                box["replay_after"] = fit
                return
            box["reserved"] = fit.reserved if fit is not None else None  # before the release
            if host is not None:  # nothing is forked here (see BackgroundReplay.start)
                replay_forked.set()
            processes, share = (fit.processes, fit.share) if fit is not None else (None, True)
            box["replay"] = start_replay(
                source, given, args.fusion_result, args.workers, host, processes, share
            )
        finally:
            if found is not None:
                replay_forked.set()

    # The job runs in a thread so that Ctrl-C (delivered to the main thread) can ask it to stop
    # and wait for it to clean up. Wait on an Event, not Thread.join: a join interrupted by
    # KeyboardInterrupt leaves the thread looking finished on Python 3.11.
    threading.Thread(target=work, name="fusion-switch-compare", daemon=True).start()
    try:
        return _finish(args, thresholds, box, progress, cancel, finished, wake, start_early_replay)
    finally:
        started = box.get("replay")
        if started is not None:  # write_outputs closed it already, or the comparison failed
            started.close()


def _given_inputs(
    args: argparse.Namespace,
    on_dump_dir: Any,
    off_dump_dir: Any,
    on_graph: Any,
    off_graph: Any,
    swapped: bool,
) -> dict[str, Any]:
    """The paths the comparison used, for summary.json's ``inputs``."""
    return {
        "on_dump": os.fspath(on_dump_dir or args.on_dump),
        "off_dump": os.fspath(off_dump_dir or args.off_dump),
        "on_graph": os.fspath(getattr(on_graph, "path", None) or args.on_graph),
        "off_graph": os.fspath(getattr(off_graph, "path", None) or args.off_graph),
        "dumps_swapped": bool(swapped),
    }


def _finish(
    args: argparse.Namespace,
    thresholds: Any,
    box: dict[str, Any],
    progress: Progress,
    cancel: threading.Event,
    finished: threading.Event,
    wake: threading.Event,
    on_wake: Any,
) -> tuple[int, Any | None]:
    """Wait for the comparison thread (calling ``on_wake`` when it asks), then attribute and
    write the outputs."""
    from ..compare.engine import CompareCancelled, CompareInputError
    from ..diagnose.exit_status import exit_status
    from ..diagnose.summary import write_outputs

    # Ctrl-C and SIGTERM are only noted while this thread waits (the first cancels the job at
    # once: this thread never holds the cancel's lock), and once one came the next are
    # ignored until the comparison thread has cleaned up (cli.interrupts.interrupts_once)
    with terminate_as_interrupt(), interrupts_once(False, cancel.set) as interrupts:
        while not finished.is_set() and interrupts.first is None:
            wake.wait(0.1)
            wake.clear()
            if interrupts.first is None:
                on_wake()
        stop = interrupts.first
        if stop is not None:
            cancel.set()
            progress.clear()
            print("fusion-switch compare: interrupted, stopping...", file=sys.stderr)
            finished.wait(30)
            csv_path = getattr(box.get("outcome"), "csv_path", None)
            if csv_path is not None and Path(csv_path).is_file():  # it had just finished
                print(
                    f"fusion-switch compare: the CSV is complete: {csv_path} (summary.json "
                    "and report.html were not written)",
                    file=sys.stderr,
                )
            return interrupt_status(stop), None
    error = box.get("error")
    if isinstance(error, CompareCancelled):
        return 130, None
    if isinstance(error, CompareInputError):
        return _error(str(error)), None
    if error is not None:
        if os.environ.get("FUSION_SWITCH_DEBUG"):
            raise error
        return _error(f"internal error: {type(error).__name__}: {error}"), None
    outcome = box["outcome"]
    after = box.get("replay_after")  # the replay did not fit beside the comparison
    replay = not getattr(args, "no_replay", False)
    left_out = None  # the note of a replay the budget leaves out
    if after is not None:
        from ..compare.worker_memory import resident_bytes

        # not even after it, as this process is now: not run (the budget holds)
        replay, note = after.after_comparison(resident_bytes())
        if note is not None:
            outcome.notes.append(note)
            left_out = None if replay else note
    # what was chosen in the dump trees, first: summary.json, --format json and the text
    # verdict say it (a review: it reached stderr only)
    outcome.notes[:0] = list(getattr(args, "selection_notes", None) or [])
    inputs = _given_inputs(
        args,
        outcome.on_dump_dir,
        outcome.off_dump_dir,
        outcome.on_graph,
        outcome.off_graph,
        getattr(outcome, "swapped_dumps", False),
    )
    # the first Ctrl-C stops the writing; later ones let its clean-up finish
    with interrupts_once():
        try:
            outputs = write_outputs(
                outcome,
                args.out_dir,
                thresholds=thresholds,
                fusion_result=args.fusion_result,
                inputs=inputs,
                replay=replay,
                workers=1 if after is not None else args.workers,  # 1: here, no process beside
                started=box.pop("replay", None),
                rows_index=box.get("rows_index"),
                replay_left_out=left_out,
            )
        except KeyboardInterrupt as stop:
            progress.clear()
            csv_path = getattr(outcome, "csv_path", None)
            kept = f" (the CSV is complete: {csv_path})" if csv_path else ""
            print(
                "fusion-switch compare: interrupted while writing summary.json and report.html; "
                f"no file is half-written{kept}",
                file=sys.stderr,
            )
            return interrupt_status(stop), None
        except OSError as exc:
            return _error(f"cannot write the summary or report into {args.out_dir}: {exc}"), None
    return exit_status(outputs.summary), outputs


def run(args: argparse.Namespace) -> int:
    if args.progress_format == "jsonl" and not args.no_progress:
        progress: Progress | JsonLinesProgress = JsonLinesProgress(sys.stderr)
    else:
        progress = Progress(sys.stderr, enabled=not args.no_progress)
    from ..compare.forked import close_ahead
    from .compare_ahead import read_fusion_off_graph_ahead

    try:  # SIGTERM as Ctrl-C from the start to the last output (temporary files removed)
        with terminate_as_interrupt():
            read_fusion_off_graph_ahead(args)
            try:
                return _run(args, progress)
            finally:
                close_ahead()  # a job that ended early (bad input, statistics) did not claim it
    except KeyboardInterrupt as stop:
        progress.clear()
        print("fusion-switch compare: interrupted", file=sys.stderr)
        return interrupt_status(stop)


def _run(args: argparse.Namespace, progress: Progress | JsonLinesProgress) -> int:
    from .compare_statistics import run_statistics
    from .compare_tree import die_with_rank_parent, plan_runs, run_per_rank

    die_with_rank_parent()  # when this is one rank of a `--rank all` run
    # at once, before the dump trees are walked and numpy is loaded (issue 16: within 1 s)
    progress(0, 0, "looking for the dump files")
    plan = plan_runs(args)
    if isinstance(plan, int):
        return plan
    if plan.kind == "stats":
        return run_statistics(args, plan)
    if plan.per_rank or len(plan.runs) > 1:
        return run_per_rank(args, plan, lambda a: run_comparison(a, progress, sys.stdout), progress)
    args = plan.runs[0][1]
    status, outputs = run_comparison(args, progress, sys.stdout)
    if outputs is None:
        return status
    try:
        if args.fmt == "json":
            data = {k: v for k, v in outputs.summary.items() if k != "ops"}
            data["summary"] = os.fspath(outputs.summary_path)
            json.dump(data, sys.stdout, indent=1)
            sys.stdout.write("\n")
        else:
            print_verdict(outputs.summary, sys.stdout)
        sys.stdout.flush()
    except BrokenPipeError:  # `| head`: the reader left; the files are written
        from .quiet_stdout import quiet_stdout

        quiet_stdout()
    return status
