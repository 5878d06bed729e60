"""Where the ``load -> measure`` stages run: here, on a process pool, or on a Dask cluster.

A runner takes the job's :class:`~.workers.JobContext` and its chunks (consecutive groups, see
:func:`.engine.pair`) and yields one :class:`~.workers.ChunkResult` per chunk **in chunk
order**, whatever order the chunks finish in; so the CSV is the same bytes on any runner. Each
runner stops between groups when ``cancel`` is set and raises :class:`CompareCancelled`.

Processes never outlive the job: pool workers die with their parent (Linux parent-death
signal, plus a watchdog thread on the parent's pid everywhere), ignore SIGINT and SIGTERM (the
parent turns those into a cancel and shuts the pool down), and a Dask cluster started here
(``--scheduler local``) is closed when the job ends, however it ends.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import multiprocessing
import os
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # .workers needs numpy: imported where a chunk is run (see .metrics)
    from .workers import ChunkResult, JobContext

_POLL_SECONDS = 0.05


class CompareCancelled(Exception):
    """The job was cancelled; no result file was written."""


class SchedulerError(Exception):
    """The Dask scheduler cannot be used (not installed, unreachable)."""


def _check(cancel) -> None:
    if cancel is not None and cancel.is_set():
        raise CompareCancelled("comparison cancelled")


def run_here(ctx: JobContext, chunks: Sequence[list[int]], cancel=None) -> Iterator[ChunkResult]:
    """All chunks in this process, one after the other."""
    from .workers import GroupComparer

    comparer = GroupComparer(ctx)
    for number, positions in enumerate(chunks):
        _check(cancel)
        result = comparer.compare_groups(positions, number, cancel)
        if result.cancelled:
            raise CompareCancelled("comparison cancelled")
        yield result


def _context(start_method: str | None):
    if start_method:
        return multiprocessing.get_context(start_method)
    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def run_pool(
    ctx: JobContext,
    chunks: Sequence[list[int]],
    workers: int,
    start_method: str | None = None,
    cancel=None,
) -> Iterator[ChunkResult]:
    """Chunks on ``workers`` processes: this one and a pool of ``workers - 1``; results in
    chunk order.

    This process takes a chunk whenever none of the pool's has come back: one process fewer
    in the tree (a forked worker starts with a copy of this process's page tables, so each one
    shows this process's resident memory again) for the same number of busy cores. The pool
    is fed at most two chunks per process ahead, so that this process always finds work."""
    if workers <= 1:
        yield from run_here(ctx, chunks, cancel)
        return
    from .workers import GroupComparer, init_worker, run_chunk

    mp = _context(start_method)
    stop = mp.Event()
    queue = deque(enumerate(chunks))
    in_flight: dict[Future, int] = {}
    pending: dict[int, ChunkResult] = {}
    next_chunk = 0
    ahead = 2 * (workers - 1)
    # Before the pool forks: the kernel's first-use probe and the groups' order are worked out
    # once, here, and a forked worker inherits both (issue 16: each worker spent ~20 ms on
    # them after the fork, before its first chunk).
    here = GroupComparer(ctx)
    executor = ProcessPoolExecutor(
        max_workers=workers - 1,
        mp_context=mp,
        initializer=init_worker,
        initargs=(ctx, stop, os.getpid(), here.groups),
    )
    # Objects created so far (graphs, pairing) are read-only for the workers: keep the cyclic
    # GC from touching them in forked children, so their pages stay shared (copy-on-write).
    gc.freeze()
    try:
        try:
            _feed(executor, run_chunk, queue, in_flight, ahead)
        finally:
            gc.unfreeze()
        while queue or in_flight:
            _check_pool(cancel, stop)
            finished = [future for future in in_flight if future.done()]
            for future in finished:
                pending[in_flight.pop(future)] = future.result()
            if not finished:
                if queue:
                    number, positions = queue.popleft()
                    result = here.compare_groups(positions, number, cancel)
                    if result.cancelled:
                        _check_pool(cancel, stop)
                    pending[number] = result
                else:
                    wait(in_flight, timeout=_POLL_SECONDS, return_when=FIRST_COMPLETED)
            _feed(executor, run_chunk, queue, in_flight, ahead)
            while next_chunk in pending:
                yield pending.pop(next_chunk)
                next_chunk += 1
    except BaseException:
        stop.set()
        executor.shutdown(wait=True, cancel_futures=True)
        raise
    executor.shutdown(wait=True)


def _feed(executor, run_chunk, queue: deque, in_flight: dict[Future, int], ahead: int) -> None:
    while queue and len(in_flight) < ahead:
        number, positions = queue.popleft()
        in_flight[executor.submit(run_chunk, number, positions)] = number


def _check_pool(cancel, stop) -> None:
    if cancel is not None and cancel.is_set():
        stop.set()
        raise CompareCancelled("comparison cancelled")


# ----------------------------------------------------------------------------- Dask


# what to do when a worker does not see the dumps (README, "Comparing on a cluster")
_SHARE = (
    "put the dump folders on storage every worker mounts under the same path (README, "
    '"Comparing on a cluster")'
)


class DumpsNotSeen(Exception):
    """Raised by a Dask worker's chunk where the job's dump files are not there as this
    machine sees them: a worker that joined the scheduler after :func:`_check_the_workers`, on
    a host without the storage or with other dumps at the same path. Its chunk would be rows of
    failed reads, or of other tensors, and wrong."""


def _dask_chunk(ctx: JobContext, number: int, positions: list[int]) -> ChunkResult:
    """Dask task: one chunk. The context arrives once per worker (scattered, then cached)."""
    from .workers import GroupComparer, rendered_chunk

    for flag, side in (("-m", ctx.left), ("-g", ctx.right)):
        if not os.path.isdir(side.path):  # two stats a chunk
            import socket

            raise DumpsNotSeen(
                f"Dask worker on host {socket.gethostname()} does not see {flag} {side.path}"
            )
    _check_here_once(ctx)
    return rendered_chunk(GroupComparer(ctx), number, positions)


_CHECKED_HERE: set[int] = set()  # id() of the job contexts this worker process checked
_CHECKING = threading.Lock()  # a worker of several threads runs chunks side by side


def _check_here_once(ctx: JobContext) -> None:
    """On a Dask worker, at its first chunk of a job: :func:`_check_the_workers`'s sample of
    dump files, at the sizes this machine saw. That check asks the workers there before the
    first chunk; one that joined later was only checked for the two folders, and another
    run's dumps at the same path (or a partial copy) would have been read as this one's."""
    key = id(ctx)
    with _CHECKING:
        if key in _CHECKED_HERE:
            return
        sample = _sample_of_dump_files(ctx)
        host, sizes = _sizes_seen([path for _, path, _ in sample])
        unseen = _first_unseen(sample, sizes)
        if unseen is not None:
            raise DumpsNotSeen(f"Dask worker on host {host} {unseen}")
        _CHECKED_HERE.add(key)
        weakref.finalize(ctx, _CHECKED_HERE.discard, key)  # the id may serve a later job


def dask_setup(worker) -> None:
    """Run by every Dask worker ``--scheduler local`` starts (this module is the cluster's
    ``preload``): the worker leaves Ctrl-C to the command that started it, as the
    comparison's own processes do. A terminal's Ctrl-C reaches the whole process group, and
    each worker died of it with a KeyboardInterrupt traceback on the user's terminal while
    the command stopped cleanly (a kill stress, issue 16). Called as the worker starts, in
    its main thread: the first moments of its process (its imports) stay uncovered."""
    import signal

    with contextlib.suppress(ValueError):  # not the main thread: Python's handler stays
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def local_cluster(workers: int | None, memory_budget: int | None) -> tuple[int, int | None]:
    """The LocalCluster of ``--scheduler local``: its worker processes, and the memory limit
    of each (their share of ``memory_budget``; None: Dask's own)."""
    count = max(1, workers or os.cpu_count() or 1)
    return count, (memory_budget // count if memory_budget else None)


@contextlib.contextmanager
def dask_client(scheduler: str, workers: int | None, memory_budget: int | None):
    """A Dask client on ``scheduler`` (an address), or on a LocalCluster for ``"local"`` with
    ``workers`` single-threaded worker processes sharing ``memory_budget`` bytes."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise SchedulerError(
            "--scheduler needs Dask distributed: pip install 'fusion-switch[dask]'"
        ) from None
    cluster = None
    try:
        if scheduler == "local":
            count, share = local_cluster(workers, memory_budget)
            limit = share if share is not None else "auto"
            # Its scheduler runs in this process and logged its own tracebacks on stderr (a
            # worker restarted over its memory limit during the context's broadcast), beside
            # the error this module words for the same failure (SchedulerError naming the
            # budget): the cluster is ours, so only critical Dask lines are shown.
            with _workers_born_without_ctrl_c(), _never_paused():
                cluster = LocalCluster(
                    n_workers=count,
                    threads_per_worker=1,
                    processes=True,
                    memory_limit=limit,
                    dashboard_address=None,
                    silence_logs=logging.CRITICAL,
                    preload=[__name__],  # dask_setup below: Ctrl-C is ours
                )
            client = Client(cluster)
        else:
            client = Client(scheduler, timeout=10)
    except (OSError, TimeoutError) as error:
        if cluster is not None:
            cluster.close()
        raise SchedulerError(f"--scheduler {scheduler}: cannot connect: {error}") from None
    except BaseException:  # a Ctrl-C held back while the cluster started, raised once it is up
        if cluster is not None:
            cluster.close()
        raise
    # A job cancelled while its context is scattered closes the cluster under the scheduler's
    # replicate step, which fails in its event loop here: asyncio logged that as "Task
    # exception was never retrieved" with a traceback after "interrupted" (a kill stress)
    with _asyncio_quiet() if cluster is not None else contextlib.nullcontext():
        try:
            yield client
        finally:
            client.close()
            if cluster is not None:
                cluster.close()


@contextlib.contextmanager
def _workers_born_without_ctrl_c():
    """SIGINT blocked in this thread while the block starts a LocalCluster: the threads it
    creates (Dask's event loop, which spawns and restarts the workers) keep that mask, and a
    spawned process is born with its parent thread's mask, so a terminal's Ctrl-C never
    reaches a worker, not even in its first second (its imports, before :func:`dask_setup`;
    a kill stress, issue 16). The command's own Ctrl-C is the main thread's: in a comparison
    thread nothing changes for it; in the main thread (``--rank all``) it waits until the
    cluster is up, as the cluster's clean-up must anyway."""
    import signal

    from ..readers.signals_held import born_with_signals_held

    with born_with_signals_held(frozenset({signal.SIGINT})):
        yield


@contextlib.contextmanager
def _never_paused():
    """The LocalCluster's workers (their nannies keep the config they start with) never
    pause: a worker paused at 80% of a small budget's share runs no task, and the comparison
    waited on its chunk for ever (a review); over its limit it is restarted, which
    :func:`run_dask` says. Spilling is off too: a chunk's results are small, its inputs ours."""
    import dask

    with dask.config.set(
        {
            "distributed.worker.memory.pause": False,
            "distributed.worker.memory.target": False,
            "distributed.worker.memory.spill": False,
        }
    ):
        yield


@contextlib.contextmanager
def _asyncio_quiet():
    """asyncio's logger at CRITICAL (as ``silence_logs`` puts Dask's) while the block runs."""
    logger = logging.getLogger("asyncio")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


_SESSION: dict[tuple, object] = {}  # (scheduler, workers, budget) -> the client of a session


@contextlib.contextmanager
def dask_session(scheduler: str, workers: int | None, memory_budget: int | None):
    """Keep one Dask client (and the LocalCluster of ``--scheduler local``) for every
    comparison run inside the block: ``--rank all`` starts the cluster once, not per rank."""
    key = (scheduler, workers, memory_budget)
    if key in _SESSION:
        yield _SESSION[key]
        return
    with dask_client(scheduler, workers, memory_budget) as client:
        _SESSION[key] = client
        try:
            yield client
        finally:
            del _SESSION[key]


def run_dask(
    ctx: JobContext,
    chunks: Sequence[list[int]],
    scheduler: str,
    workers: int | None = None,
    memory_budget: int | None = None,
    cancel=None,
) -> Iterator[ChunkResult]:
    """One Dask task per chunk; results gathered in chunk order. The dump folders must be on
    storage every worker sees under the same paths (see README, "Comparing on a cluster")."""
    from concurrent.futures import CancelledError

    with dask_session(scheduler, workers, memory_budget) as client:
        from distributed import KilledWorker  # there: dask_client said so if it is missing
        from distributed.comm.core import CommClosedError

        lost = (CancelledError, KilledWorker, CommClosedError)
        try:  # a worker restarted while the context is sent to it closes the stream
            if scheduler != "local":  # on other hosts: are they there, do they see our dumps?
                _wait_for_a_worker(client, scheduler, cancel)
                _check_the_workers(client, ctx, scheduler)
            shared = _scattered(client, ctx, cancel)
        except lost as error:
            raise SchedulerError(_lost(scheduler, workers, memory_budget, error)) from None
        except TimeoutError as error:  # every worker left while the context was sent
            raise SchedulerError(_lost(scheduler, workers, memory_budget, error)) from None
        except KeyError as error:
            if not _names_a_worker(error):
                raise
            # restarted while the scheduler replicated the context to it: Dask's replicate
            # step looks the gone worker's address up
            raise SchedulerError(_lost(scheduler, workers, memory_budget, error)) from None
        futures = [
            client.submit(_dask_chunk, shared, number, positions, pure=False)
            for number, positions in enumerate(chunks)
        ]
        paused = _PausedWatch(client, scheduler)
        try:
            for future in futures:
                while not future.done():
                    _check(cancel)
                    paused.check()
                    time.sleep(_POLL_SECONDS)
                try:
                    result = future.result()
                except lost as error:
                    raise SchedulerError(_lost(scheduler, workers, memory_budget, error)) from None
                except DumpsNotSeen as error:
                    raise SchedulerError(f"--scheduler {scheduler}: {error}: {_SHARE}") from None
                yield result
        finally:
            client.cancel(futures)


_WORKERS_AWAITED_SECONDS = 10.0  # as long as the connection to the scheduler may take
_PAUSED_SECONDS = 30.0  # every worker paused this long: no chunk will run
_PAUSED_LOOK_SECONDS = 2.0


class _PausedWatch:
    """Raises SchedulerError once every worker of ``client`` has stayed paused (Dask pauses a
    worker at 80% of its --memory-limit) for :data:`_PAUSED_SECONDS`: a paused worker runs no
    task, and the comparison waited on its chunk for ever (a review). Ours never pause
    (:func:`_never_paused`); a cluster's own workers may."""

    def __init__(self, client, scheduler: str) -> None:
        self.client, self.scheduler = client, scheduler
        self.looked = time.monotonic()
        self.since: float | None = None

    def check(self) -> None:
        now = time.monotonic()
        if now - self.looked < _PAUSED_LOOK_SECONDS:
            return
        self.looked = now
        try:
            workers = self.client.scheduler_info().get("workers", {})
        except Exception:  # a look that fails says nothing: the wait goes on
            return
        statuses = [str(w.get("status", "")).lower() for w in workers.values()]
        if not statuses or any("paused" not in status for status in statuses):
            self.since = None
            return
        self.since = self.since if self.since is not None else now
        if now - self.since >= _PAUSED_SECONDS:
            raise SchedulerError(
                f"--scheduler {self.scheduler}: every Dask worker ({len(statuses)}) has been "
                f"paused for {_PAUSED_SECONDS:g} s, over 80% of its memory limit, and runs no "
                "chunk: start the workers with a larger --memory-limit (dask worker "
                "--memory-limit), or more of them"
            )


def _wait_for_a_worker(client, scheduler: str, cancel) -> None:
    """SchedulerError when the scheduler has no worker within ``_WORKERS_AWAITED_SECONDS``:
    the scatter waited that long for one and failed as "internal error: TimeoutError: No
    valid workers found" (a review of the cluster set-up, issue 16)."""
    deadline = time.monotonic() + _WORKERS_AWAITED_SECONDS
    while not client.nthreads():  # asked of the scheduler each time, not cached
        _check(cancel)
        if time.monotonic() > deadline:
            raise SchedulerError(
                f"--scheduler {scheduler}: the scheduler has no workers (waited "
                f"{_WORKERS_AWAITED_SECONDS:.0f} s): start them on the hosts that see the "
                f'dumps, dask worker {scheduler} (README, "Comparing on a cluster")'
            )
        time.sleep(_POLL_SECONDS)


_SAMPLED_FILES = 16  # per side: a few stats on each worker, even over a network file system


def _check_the_workers(client, ctx: JobContext, scheduler: str) -> None:
    """SchedulerError unless every worker runs this fusion-switch and finds a sample of the
    job's dump files where this machine does, at the same sizes (a review of the documented
    cluster set-up, issue 16):
    - a worker on a host that did not mount the dumps read none of them: the run wrote a CSV
      of failed rows, told the user to dump every file again, and still gave a verdict;
    - a worker with another fusion-switch failed the run with "internal error: ... Can't get
      attribute". Dump file names carry the dump's time, so another run's dumps at the same
      path are missing files too. A worker that joins later checks itself at its first
      chunk (:func:`_check_here_once`)."""
    import pkgutil

    # the standard library's function, not ours: a worker without this code answers too;
    # asked here the same way, so both sides read the version as the package states it
    spec = "fusion_switch:__version__"
    here = pkgutil.resolve_name(spec)
    versions = client.run(pkgutil.resolve_name, spec, on_error="return")
    for address, theirs in sorted(versions.items()):
        if theirs != here:
            found = f"fusion-switch {theirs}" if isinstance(theirs, str) else "no fusion-switch"
            raise SchedulerError(
                f"--scheduler {scheduler}: Dask worker {address} has {found}, this machine "
                f"{here}: install the same version on every host (README, "
                '"Comparing on a cluster")'
            )
    sample = _sample_of_dump_files(ctx)
    if not sample:
        return
    seen = client.run(_sizes_seen, [path for _, path, _ in sample], on_error="return")
    differing = []
    for address, answer in sorted(seen.items()):
        if isinstance(answer, BaseException):  # the same version number, other code
            raise SchedulerError(
                f"--scheduler {scheduler}: Dask worker {address} cannot run this "
                f"fusion-switch's code ({type(answer).__name__}: {answer}): install the same "
                "fusion-switch on every host and restart the workers"
            )
        host, sizes = answer
        unseen = _first_unseen(sample, sizes)
        if unseen is not None:
            differing.append((address, host, unseen))
    if not differing:
        return
    address, host, unseen = differing[0]
    more = f" (and {len(differing) - 1} more of the {len(seen)} workers)" if differing[1:] else ""
    raise SchedulerError(
        f"--scheduler {scheduler}: Dask worker {address} on host {host}{more} {unseen}; {_SHARE}"
    )


def _first_unseen(sample: list[tuple[str, str, int]], sizes: list[int | str]) -> str | None:
    """What a worker's answer (:func:`_sizes_seen`) shows first that differs from the sample
    as this machine sees it, in words; None when it sees the same."""
    for (flag, path, size), there in zip(sample, sizes, strict=True):
        if there != size:
            view = f"{there:,} bytes" if isinstance(there, int) else there
            return (
                f"does not see the dump files this machine sees: {flag} {path} is {size:,} "
                f"bytes here, {view} there"
            )
    return None


def _sample_of_dump_files(ctx: JobContext) -> list[tuple[str, str, int]]:
    """(flag, path, size here) of up to ``_SAMPLED_FILES`` ops' newest files on each side,
    spread over the op names."""
    sample = []
    for flag, side in (("-m", ctx.left), ("-g", ctx.right)):
        names = side.op_names
        step = max(1, len(names) // _SAMPLED_FILES)
        for name in names[::step][:_SAMPLED_FILES]:
            path, size = side.latest_location(name), side.latest_bytes(name)
            if path is not None and size > 0:
                sample.append((flag, path, size))
    return sample


def _sizes_seen(paths: list[str]) -> tuple[str, list[int | str]]:
    """On a Dask worker: its host name, and the size of each file or why it has none."""
    import socket

    sizes: list[int | str] = []
    for path in paths:
        try:
            sizes.append(os.stat(path).st_size)
        except FileNotFoundError:
            sizes.append("missing")
        except OSError as error:
            sizes.append(f"unreadable ({error.strerror or error})")
    return socket.gethostname(), sizes


def _scattered(client, ctx: JobContext, cancel) -> object:
    """``client.scatter(ctx, broadcast=True)``, waited for in steps that check ``cancel``:
    when every worker has died (a terminal's Ctrl-C reaches them too) the scatter does not
    return, and a cancelled job waited 30 s for it and then left its temporary CSV (a kill
    stress, issue 16). The scatter's thread is left to end when the client closes."""
    import threading

    box: dict[str, object] = {}

    def send() -> None:
        try:
            box["shared"] = client.scatter(ctx, broadcast=True)
        except BaseException as error:  # raised again in the job's thread
            box["error"] = error

    sending = threading.Thread(target=send, name="fusion-switch-scatter", daemon=True)
    sending.start()
    while sending.is_alive():
        _check(cancel)
        sending.join(_POLL_SECONDS)
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["shared"]


def _names_a_worker(error: KeyError) -> bool:
    """A KeyError whose key is a worker's address (``tcp://host:port``, ``tls://``, ...)."""
    key = error.args[0] if error.args else None
    return isinstance(key, str) and "://" in key


def _lost(scheduler: str, workers: int | None, memory_budget: int | None, error: Exception) -> str:
    """Why a chunk's future was cancelled or its worker killed, and what to do about it: Dask
    restarts a worker over its memory limit, and the job's context scattered to it is lost."""
    detail = str(error).rstrip(".")
    why = f"--scheduler {scheduler}: a Dask worker stopped before its chunk was done ({detail})"
    if scheduler == "local" and memory_budget:
        count, share = local_cluster(workers, memory_budget)
        mib = 1 << 20
        return (
            f"{why}: --memory-budget {memory_budget // mib} MiB gives each of the {count} "
            f"workers {share // mib} MiB, and a worker process alone takes "
            "about 100 MiB: raise --memory-budget, give fewer --workers, or leave it out"
        )
    return f"{why}: see the workers' logs (a worker over its memory limit is restarted)"
