"""`compare --scheduler ADDRESS` on the cluster set-up README documents (issue 16): a
`dask scheduler` and `dask worker` processes started from their own command lines, as on NPU
hosts, not a LocalCluster this process owns.

The same bytes as one process; and the two ways such a cluster goes wrong, each a clear error
with nothing written: a worker with another fusion-switch, and a worker on a host that does
not see the dumps (a mount namespace with an empty folder over the case, as a host that never
mounted the shared storage)."""

from __future__ import annotations

import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest
from compare_cli import compare_command
from fusion_switch.compare import runners
from fusion_switch.compare.runners import SchedulerError
from fusion_switch.synth.generator import generate_case
from output_files import assert_same_run

pytest.importorskip("distributed", reason="fusion-switch[dask] is part of the test extras")

DASK = str(Path(sys.executable).with_name("dask"))


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    return generate_case(tmp_path_factory.mktemp("case"), n_ops=120, seed=9, graph_text=False)


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory):
    """A `dask scheduler` on a free loopback port; its address."""
    folder = tmp_path_factory.mktemp("scheduler")
    found = folder / "scheduler.json"
    command = [DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard"]
    with _running([*command, "--scheduler-file", str(found)], folder / "log") as process:
        yield json.loads(_appears(found, process).read_text())["address"]


@contextmanager
def _running(command: list[str], log: Path, env: dict | None = None, cwd: str = "/"):
    """``command`` in its own session, stopped with its whole group at the end."""
    with open(log, "wb") as sink:
        process = subprocess.Popen(
            command, stdout=sink, stderr=subprocess.STDOUT, env=env, cwd=cwd,
            start_new_session=True,
        )  # fmt: skip
    try:
        yield process
    finally:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _appears(path: Path, process: subprocess.Popen) -> Path:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert process.poll() is None, f"{process.args[:2]} ended with {process.returncode}"
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.1)
    return path


@contextmanager
def workers(
    address: str,
    tmp_path: Path,
    prefix: list[str] = (),
    env: dict | None = None,
    processes: int = 2,
    threads: int = 1,
):
    """``processes`` `dask worker` processes of ``threads`` threads on ``address`` (``prefix``:
    a command the worker runs under), waited for until the scheduler lists them all; they stop
    at the end."""
    from distributed import Client

    command = [*prefix, DASK, "worker", address, "--nthreads", str(threads)]
    command += ["--nworkers", str(processes), "--no-dashboard", "--memory-limit", "1GiB"]
    with _running(command, tmp_path / "workers.log", env) as process, Client(address) as client:
        deadline = time.monotonic() + 60
        while len(client.scheduler_info()["workers"]) < processes:
            log = (tmp_path / "workers.log").read_text(errors="replace")
            assert process.poll() is None, log
            assert time.monotonic() < deadline, log
            time.sleep(0.1)
        yield
        client.retire_workers()


def run(case, out: Path, *extra: str) -> subprocess.CompletedProcess:
    command = compare_command(case, out, "--no-progress", *extra)
    return subprocess.run(command, capture_output=True, text=True, check=False, timeout=300)


def assert_refused(done: subprocess.CompletedProcess, out: Path, *said: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    for text in said:
        assert text in done.stderr, done.stderr
    assert not out.exists() or list(out.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize(
    ("processes", "threads"),
    [(2, 1), (1, 4)],  # README's set-up; and dask worker's default, threads sharing a process
)
def test_external_workers_write_the_same_bytes_as_one_process(
    case, scheduler, tmp_path, processes, threads
):
    single = run(case, tmp_path / "one" / "out", "--workers", "1")
    with workers(scheduler, tmp_path, processes=processes, threads=threads):
        cluster = run(case, tmp_path / "dask" / "out", "--scheduler", scheduler)
    assert_same_run(single, cluster, tmp_path)


@pytest.mark.slow
def test_a_worker_with_another_fusion_switch_is_a_clear_error(case, scheduler, tmp_path):
    """It failed with "internal error: ... Can't get attribute" where the chunks' code was
    not the same; a worker now names its version and the run stops before writing."""
    import fusion_switch

    other = tmp_path / "other"
    shutil.copytree(Path(fusion_switch.__file__).parent, other / "fusion_switch")
    init = other / "fusion_switch" / "__init__.py"
    init.write_text(init.read_text().replace(fusion_switch.__version__, "0.0.9"))
    env = {**os.environ, "PYTHONPATH": str(other)}
    with workers(scheduler, tmp_path, env=env):
        done = run(case, tmp_path / "out", "--scheduler", scheduler)
    assert_refused(
        done,
        tmp_path / "out",
        f"--scheduler {scheduler}: Dask worker tcp://",
        f"has fusion-switch 0.0.9, this machine {fusion_switch.__version__}",
        "install the same version on every host",
    )


def _can_hide(folder: Path) -> bool:
    probe = ["unshare", "--map-root-user", "--mount", "sh", "-c"]
    probe += [f"mount -t tmpfs none {folder} && test ! -e {folder}/fusion_on"]
    try:
        return subprocess.run(probe, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.slow
def test_a_worker_that_does_not_see_the_dumps_is_a_clear_error(case, scheduler, tmp_path):
    """A host that never mounted the shared storage: its workers read no file, and the run
    wrote a CSV of failed rows, told the user to dump every file again ("skipped a bad dump
    file ... No such file or directory", 738 times on a 1,500-op case) and still gave a
    verdict; now it stops, naming the worker, the host and a file, with nothing written."""
    if not _can_hide(case.root):
        pytest.skip("this machine cannot make a mount namespace (unshare) to hide the dumps in")
    hide = ["unshare", "--map-root-user", "--mount", "sh", "-c"]
    hide += [f'mount -t tmpfs none {case.root} && exec "$0" "$@"']
    with workers(scheduler, tmp_path, prefix=hide):
        done = run(case, tmp_path / "out", "--scheduler", scheduler)
    assert_refused(
        done,
        tmp_path / "out",
        "does not see the dump files this machine sees: -m ",
        "bytes here, missing there",
        "put the dump folders on storage every worker mounts under the same path",
    )
    assert "skipped a bad dump file" not in done.stderr


class _Answers:
    """A Dask client whose workers answer ``client.run`` with what the test gives."""

    def __init__(self, version, sizes) -> None:
        self.version, self.sizes = version, sizes

    def run(self, function, *args, on_error="raise"):
        assert on_error == "return"  # one worker's failure is reported, not raised
        if args == ("fusion_switch:__version__",):
            return {"tcp://10.0.0.7:4000": self.version}
        return {"tcp://10.0.0.7:4000": self.sizes(args[0])}


def test_a_worker_that_cannot_run_our_code_is_named(case, tmp_path):
    """The same version number with other code (a worker started before an upgrade in place):
    the check's own function cannot be found there. And sizes: equal pass, one differing
    byte is named."""
    from fusion_switch import __version__
    from fusion_switch.compare.discover import CompareRequest, discover
    from fusion_switch.compare.engine import pair

    request = CompareRequest(
        case.on_dump, case.off_dump, case.on_graph, case.off_graph, tmp_path / "out"
    )
    ctx = pair(discover(request)).job
    stale = AttributeError("Can't get attribute '_sizes_seen'")
    with pytest.raises(SchedulerError) as raised:
        runners._check_the_workers(_Answers(__version__, lambda _: stale), ctx, "X")
    said = str(raised.value)
    assert "Dask worker tcp://10.0.0.7:4000 cannot run this fusion-switch's code" in said
    assert "restart the workers" in said
    seen = runners._sizes_seen  # what a worker that sees the same files answers: no error
    runners._check_the_workers(_Answers(__version__, seen), ctx, "X")

    def shorter(paths):
        host, sizes = seen(paths)
        return host, [sizes[0] - 1, *sizes[1:]]

    with pytest.raises(SchedulerError, match=r"is [\d,]+ bytes here, [\d,]+ bytes there"):
        runners._check_the_workers(_Answers(__version__, shorter), ctx, "X")


class _Arriving:
    """A Dask client whose scheduler has no worker until the ``arrives``-th time it is asked."""

    def __init__(self, arrives: int | None) -> None:
        self.arrives, self.asked = arrives, 0

    def nthreads(self):
        self.asked += 1
        there = self.arrives is not None and self.asked >= self.arrives
        return {"tcp://10.0.0.7:4000": 1} if there else {}


def test_a_scheduler_without_workers_is_a_clear_error(monkeypatch):
    """The scatter waited 10 s for a worker and failed as "internal error: TimeoutError: No
    valid workers found"; the wait is now ours, and says what to start."""
    import threading

    from fusion_switch.compare.runners import CompareCancelled

    monkeypatch.setattr(runners, "_WORKERS_AWAITED_SECONDS", 0.3)
    with pytest.raises(SchedulerError) as raised:
        runners._wait_for_a_worker(_Arriving(None), "tcp://h:8786", None)
    said = str(raised.value)
    assert "--scheduler tcp://h:8786: the scheduler has no workers" in said
    assert "dask worker tcp://h:8786" in said
    late = _Arriving(3)  # a worker that joins while we wait is taken
    runners._wait_for_a_worker(late, "tcp://h:8786", None)
    assert late.asked == 3
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(CompareCancelled):
        runners._wait_for_a_worker(_Arriving(None), "tcp://h:8786", cancel)


@pytest.mark.slow
def test_workers_started_after_the_compare_are_waited_for(case, scheduler, tmp_path):
    out = tmp_path / "out"
    command = compare_command(case, out, "--no-progress", "--scheduler", scheduler)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)
        with workers(scheduler, tmp_path):
            stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 1, stderr
    assert "compared" in stdout and "no workers" not in stderr


def test_a_memory_budget_with_a_scheduler_address_says_it_is_not_applied(case, tmp_path):
    """--memory-budget bounds this machine's processes and a LocalCluster's workers; with a
    scheduler's address it bounded nothing, and the run took it without a word."""
    from fusion_switch.compare.discover import CompareRequest, discover
    from fusion_switch.compare.engine import pair

    def notes(scheduler: str | None) -> list[str]:
        request = CompareRequest(
            case.on_dump, case.off_dump, case.on_graph, case.off_graph, tmp_path / "out",
            scheduler=scheduler, memory_budget=300 << 20,
        )  # fmt: skip
        said = pair(discover(request)).notes  # (in process: a budget note of its own may come)
        return [n for n in said if n.startswith("--memory-budget is not applied")]

    (said,) = notes("tcp://10.0.0.7:8786")
    assert said.startswith("--memory-budget is not applied with --scheduler tcp://10.0.0.7:8786:")
    assert "dask worker --memory-limit" in said
    assert notes("local") == [] and notes(None) == []


class _Finished:
    def __init__(self, error: Exception) -> None:
        self.error = error

    def done(self) -> bool:
        return True

    def result(self):
        raise self.error


def test_a_worker_that_joins_later_without_the_dumps_stops_the_run(case, tmp_path, monkeypatch):
    """The check before the first chunk asks the workers there at the time; a worker that
    joins later on a host without the storage read no file, and its chunks were rows of
    failed reads. Its chunk now fails, and the run stops naming the host and the folder."""
    import contextlib

    from fusion_switch.compare.discover import CompareRequest, discover
    from fusion_switch.compare.engine import pair

    request = CompareRequest(
        case.on_dump, case.off_dump, case.on_graph, case.off_graph, tmp_path / "out"
    )
    plan = pair(discover(request))
    unseen = plan.job.left.path.parent / "not-mounted-here"
    blind = copy.copy(plan.job)
    blind.left = copy.copy(plan.job.left)
    blind.left.path = unseen
    with pytest.raises(runners.DumpsNotSeen, match=f"does not see -m {unseen}"):
        runners._dask_chunk(blind, 0, plan.chunks[0])
    assert runners._dask_chunk(plan.job, 0, plan.chunks[0]).rows  # where it does see them

    class Client:
        def scatter(self, data, broadcast=False):
            return data

        def submit(self, function, ctx, number, positions, pure=True):
            try:
                return _Finished(AssertionError(function(ctx, number, positions)))
            except Exception as error:  # what Dask hands back from the worker
                return _Finished(error)

        def cancel(self, futures):
            pass

    @contextlib.contextmanager
    def session(scheduler, workers, budget):
        yield Client()

    monkeypatch.setattr(runners, "dask_session", session)
    with pytest.raises(SchedulerError) as raised:
        list(runners.run_dask(blind, plan.chunks, "local"))
    said = str(raised.value)
    assert f"does not see -m {unseen}" in said and "put the dump folders on storage" in said


def test_a_worker_that_joins_later_with_other_dump_files_stops_the_run(tmp_path, monkeypatch):
    """A worker that joins after the check, on a host whose storage holds another copy of the
    dumps (a partial copy, or another run's at the same path): it was checked for the two
    folders only, and read its files as this run's. It now checks the same sample of files
    at its first chunk of a job, and only then."""
    from fusion_switch.compare.discover import CompareRequest, discover
    from fusion_switch.compare.engine import pair

    case = generate_case(tmp_path / "case", n_ops=40, seed=3, graph_text=False)  # one is cut
    request = CompareRequest(
        case.on_dump, case.off_dump, case.on_graph, case.off_graph, tmp_path / "out"
    )
    plan = pair(discover(request))
    flag, path, size = runners._sample_of_dump_files(plan.job)[-1]
    assert flag == "-g"
    whole = Path(path).read_bytes()
    Path(path).write_bytes(whole[:-1])  # the copy on that worker's host was cut short
    with pytest.raises(runners.DumpsNotSeen) as raised:
        runners._dask_chunk(plan.job, 0, plan.chunks[0])
    assert str(raised.value).endswith(
        f"does not see the dump files this machine sees: -g {path} is {size:,} bytes here, "
        f"{size - 1:,} bytes there"
    )
    Path(path).write_bytes(whole)
    asked, seen = [], runners._sizes_seen
    monkeypatch.setattr(runners, "_sizes_seen", lambda paths: asked.append(paths) or seen(paths))
    monkeypatch.setattr(runners, "_CHECKED_HERE", set())
    assert runners._dask_chunk(plan.job, 0, plan.chunks[0]).rows
    assert runners._dask_chunk(plan.job, 1, plan.chunks[1]).rows
    assert len(asked) == 1  # once per job on a worker: 32 stats, not 32 per chunk
