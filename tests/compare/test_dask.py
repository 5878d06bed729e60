"""`compare --scheduler local`: the same CSV, summary and report as one process (issue 16).

Runs the real CLI twice on a generated case: in one process (--workers 1) and on a Dask
LocalCluster of two worker processes, and compares the outputs byte for byte (the CSV's name
carries the second it was written; the output folder's path is normalised)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from compare_cli import compare_command
from fusion_switch.synth.generator import generate_case

pytest.importorskip("distributed", reason="fusion-switch[dask] is part of the test extras")


from output_files import assert_same_run, outputs


def run(case, out: Path, *extra: str) -> subprocess.CompletedProcess:
    command = compare_command(case, out, "--no-progress", *extra)
    return subprocess.run(command, capture_output=True, text=True, check=False, timeout=300)


@pytest.mark.slow
def test_a_local_cluster_of_two_workers_writes_the_same_bytes(tmp_path):
    case = generate_case(tmp_path / "case", n_ops=120, seed=9, graph_text=False)
    single = run(case, tmp_path / "one" / "out", "--workers", "1")
    cluster = run(case, tmp_path / "dask" / "out", "--scheduler", "local", "--workers", "2")
    assert_same_run(single, cluster, tmp_path)


def test_a_budget_with_a_local_cluster_says_what_it_bounds(tmp_path):
    """With --scheduler local the budget sets the Dask workers' memory limits only: the
    cluster's nannies, this process and the replay come on top (a 5,018-op run given 300 MiB
    peaked at 499 MiB, as without a budget), and nothing said so."""
    import json

    case = generate_case(tmp_path / "case", n_ops=10, graph_text=False)
    done = run(
        case,
        tmp_path / "out",
        *("--scheduler", "local", "--workers", "2", "--memory-budget", "2G", "--no-replay"),
    )
    assert done.returncode == 1, done.stderr
    notes = json.loads((tmp_path / "out" / "summary.json").read_text())["inputs"]["notes"]
    (note,) = [n for n in notes if n.startswith("--memory-budget")]
    assert "each of the 2 Dask workers 1024 MiB" in note, note
    assert "without --scheduler" in note, note


def test_an_unreachable_scheduler_is_a_clear_error(tmp_path):
    case = generate_case(tmp_path / "case", n_ops=10, graph_text=False)
    done = run(case, tmp_path / "out", "--scheduler", "tcp://127.0.0.1:9")
    assert done.returncode == 2
    assert "--scheduler tcp://127.0.0.1:9: cannot connect" in done.stderr
    assert "Traceback" not in done.stderr
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(("result_", "."))]


def test_dask_workers_out_of_memory_are_a_clear_error(tmp_path):
    """A budget too small for a Dask worker's own process (50 MB each here): Dask restarts
    the workers, the job's context scattered to them is lost, and the chunks' futures are
    cancelled. That was "internal error: FutureCancelledError"; it names the budget now."""
    case = generate_case(tmp_path / "case", n_ops=10, graph_text=False)
    done = run(
        case,
        tmp_path / "out",
        *("--scheduler", "local", "--workers", "2", "--memory-budget", "100M", "--no-replay"),
    )
    assert done.returncode == 2, done.stderr
    said = done.stderr.splitlines()[-1]
    assert "internal error" not in said and "Traceback" not in done.stderr
    assert "fusion-switch compare: error: --scheduler local: a Dask worker" in said
    assert "--memory-budget 100 MiB gives each of the 2 workers 50 MiB" in said
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(("result_", "."))]


def test_a_worker_restarted_while_the_context_is_broadcast_is_a_clear_error(monkeypatch):
    """Dask restarts a worker over its memory limit; when that happens while the job's context
    is scattered to every worker, the scheduler's replicate step looks the gone worker up and
    raises KeyError('tcp://...') (seen in 4 of 12 runs of the test above). That was "internal
    error: KeyError: 'tcp://127.0.0.1:38317'"; it is the lost worker's error, naming the
    budget."""
    import contextlib

    from fusion_switch.compare import runners

    class Restarting:
        def scatter(self, data, broadcast=False):
            raise KeyError("tcp://127.0.0.1:38317")

        def submit(self, *args, **kwargs):  # pragma: no cover - never reached
            raise AssertionError("submitted after a failed scatter")

    @contextlib.contextmanager
    def session(scheduler, workers, budget):
        yield Restarting()

    monkeypatch.setattr(runners, "dask_session", session)
    with pytest.raises(runners.SchedulerError) as raised:
        list(runners.run_dask(object(), [[0]], "local", 2, 100 << 20))
    said = str(raised.value)
    assert "a Dask worker stopped before its chunk was done" in said
    assert "tcp://127.0.0.1:38317" in said and "--memory-budget 100 MiB" in said


def test_a_key_error_of_ours_is_not_taken_for_a_lost_worker(monkeypatch):
    """Only a worker's address is read as a lost worker: any other KeyError stays a bug."""
    import contextlib

    from fusion_switch.compare import runners

    class Broken:
        def scatter(self, data, broadcast=False):
            raise KeyError("b1_conv1")

    @contextlib.contextmanager
    def session(scheduler, workers, budget):
        yield Broken()

    monkeypatch.setattr(runners, "dask_session", session)
    with pytest.raises(KeyError):
        list(runners.run_dask(object(), [[0]], "local", 2, 100 << 20))


def test_memory_budget_must_be_a_size(tmp_path):
    done = run(
        generate_case(tmp_path / "c", n_ops=10, graph_text=False),
        tmp_path / "o",
        "--memory-budget",
        "lots",
    )
    assert done.returncode == 2 and "'lots' is not a size like 4G or 512M" in done.stderr


def two_rank_tree(case) -> dict[str, Path]:
    """The case's dumps as ranks 0 and 1 of a dump tree; the tree roots by side."""
    for side in (case.on_dump, case.off_dump):
        device = Path(side).parents[2]  # dump/<time>/<device>/<model>/<model id>/<iteration>
        shutil.copytree(device, device.parent / "1")
    return {side: Path(getattr(case, f"{side}_dump")).parents[4] for side in ("on", "off")}


@pytest.mark.slow
def test_rank_all_on_a_local_cluster_writes_the_same_bytes_per_rank(tmp_path):
    """A two-rank dump tree (`--rank all`): every rank pair on the LocalCluster gives the same
    files as in one process."""
    case = generate_case(tmp_path / "case", n_ops=60, seed=5, graph_text=False)
    tree = two_rank_tree(case)

    def run_tree(out: Path, *extra: str) -> subprocess.CompletedProcess:
        command = [
            *(sys.executable, "-m", "fusion_switch", "compare"),
            *("-m", str(tree["on"]), "-g", str(tree["off"])),
            *("-f", str(case.on_graph), "-cf", str(case.off_graph)),
            *("-out", str(out), "--rank", "all", "--no-progress", *extra),
        ]
        return subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)

    single = run_tree(tmp_path / "one" / "out", "--workers", "1")
    cluster = run_tree(tmp_path / "dask" / "out", "--scheduler", "local", "--workers", "2")
    assert single.returncode == 1, single.stderr
    assert cluster.returncode == single.returncode, cluster.stderr
    for rank in ("rank_0", "rank_1"):
        one = outputs(tmp_path / "one" / "out" / rank)
        two = outputs(tmp_path / "dask" / "out" / rank)
        assert sorted(one) == ["csv", "report.html", "summary.json"]
        assert one == two, rank


@pytest.mark.slow
def test_rank_all_starts_one_cluster_for_every_rank(tmp_path, monkeypatch, capsys):
    """`--rank all --scheduler local`: the LocalCluster starts once, not once per rank."""
    from fusion_switch.cli import main
    from fusion_switch.compare import runners

    case = generate_case(tmp_path / "case", n_ops=30, seed=6, graph_text=False)
    tree = two_rank_tree(case)
    started = []
    real = runners.dask_client

    def counting(*args, **kwargs):
        started.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(runners, "dask_client", counting)
    status = main(
        [
            *("compare", "-m", str(tree["on"]), "-g", str(tree["off"])),
            *("-f", str(case.on_graph), "-cf", str(case.off_graph)),
            *("-out", str(tmp_path / "out"), "--rank", "all", "--no-progress"),
            *("--scheduler", "local", "--workers", "1"),
        ]
    )
    assert status == 1, capsys.readouterr().err
    assert [(tmp_path / "out" / f"rank_{r}" / "summary.json").is_file() for r in (0, 1)] == [
        True,
        True,
    ]
    assert started == [("local", 1, None)]


_CLUSTER_TRACEBACK = """
import logging
from fusion_switch.compare.runners import dask_client

def main():
    with dask_client("local", 1, None):
        try:
            raise KeyError("tcp://127.0.0.1:45857")
        except KeyError:  # as the in-process scheduler logs it in its replicate step
            logging.getLogger("distributed.core").exception("Exception while handling op scatter")
    print("done")

if __name__ == "__main__":
    main()
"""


def test_the_local_clusters_own_tracebacks_do_not_reach_the_user(tmp_path):
    """The LocalCluster's scheduler runs in the comparing process: a worker restarted over
    its memory limit while the context was broadcast made it log its own traceback (a
    KeyError in its replicate step) beside the error the command line words for it, in some
    runs of the test above. Only critical lines of the cluster reach stderr now."""
    script = tmp_path / "cluster_traceback.py"
    script.write_text(_CLUSTER_TRACEBACK)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.stdout.split() == ["done"], done.stderr
    assert "Traceback" not in done.stderr


def test_a_cancel_stops_a_scatter_that_never_ends(monkeypatch):
    """The job's context is scattered before any chunk is submitted. When the Dask workers
    had died (a terminal's Ctrl-C reaches them too), the scatter never returned and Ctrl-C
    waited 30 s, then exited with the temporary CSV left (a kill stress). It now stops at
    the cancel, as waiting for a chunk does."""
    import contextlib
    import threading

    from fusion_switch.compare import runners
    from fusion_switch.compare.engine import CompareCancelled

    never = threading.Event()

    class Stuck:
        def scatter(self, data, broadcast=False):
            never.wait(30)
            raise AssertionError("the scatter was waited for")

    @contextlib.contextmanager
    def session(scheduler, workers, budget):
        yield Stuck()

    monkeypatch.setattr(runners, "dask_session", session)
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    started = time.monotonic()
    try:
        with pytest.raises(CompareCancelled):
            list(runners.run_dask(object(), [[0]], "local", 2, None, cancel))
        assert time.monotonic() - started < 5
    finally:
        never.set()


_WORKERS_AND_CTRL_C = """
import logging, signal
from fusion_switch.compare.runners import dask_client

def ignores_ctrl_c():
    return signal.getsignal(signal.SIGINT) is signal.SIG_IGN

def born_with_ctrl_c_blocked():
    # the worker's main thread: its mask is the one the process was born with
    status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
    return bool(int(status["SigBlk"], 16) & (1 << (signal.SIGINT - 1)))

def main():
    with dask_client("local", 2, None) as client:
        print(sorted(client.run(ignores_ctrl_c).values()))
        print(sorted(client.run(born_with_ctrl_c_blocked).values()))
        print(signal.pthread_sigmask(signal.SIG_BLOCK, set()) == set())  # ours: as it was
        # as asyncio reports the scheduler's replicate step failing under a cancelled job
        logging.getLogger("asyncio").error("Task exception was never retrieved")
    print(logging.getLogger("asyncio").level)

if __name__ == "__main__":
    main()
"""


def test_the_local_clusters_workers_leave_ctrl_c_to_the_command(tmp_path):
    """A terminal's Ctrl-C reaches the whole process group: each worker of `--scheduler
    local` died of it with a KeyboardInterrupt traceback on the user's terminal, and a job
    cancelled during the context's scatter had asyncio print the scheduler's failed replicate
    step (a kill stress). The workers are born with SIGINT blocked (a Ctrl-C during their
    first second, their imports, printed a traceback still) and ignore it once built, and
    asyncio's log is quiet while the cluster is ours (and back to what it was after)."""
    script = tmp_path / "workers_and_ctrl_c.py"
    script.write_text(_WORKERS_AND_CTRL_C)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.stdout.split("\n")[:4] == ["[True, True]"] * 2 + ["True", "0"], done.stderr
    assert "never retrieved" not in done.stderr, done.stderr


_PAUSE_OF_OUR_WORKERS = """
from fusion_switch.compare.runners import dask_client

if __name__ == "__main__":
    with dask_client("local", 1, 1 << 30) as client:
        config = client.run(lambda: __import__("dask").config.get("distributed.worker.memory"))
    (memory,) = config.values()
    print(memory["pause"], memory["spill"], memory["target"])
"""


def test_the_local_clusters_workers_never_pause(tmp_path):
    """A review: --scheduler local --memory-budget 200M on a 3,000-op case waited at "0/2735
    ops" for ever: Dask pauses a worker at 80% of its memory limit, and a paused worker runs
    no chunk. Our workers never pause (over their limit they are restarted, which is said)."""
    script = tmp_path / "pause.py"
    script.write_text(_PAUSE_OF_OUR_WORKERS)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False", "False"], done.stdout


def test_workers_paused_for_good_are_a_clear_error(monkeypatch):
    """A cluster's own workers may pause (its dask worker --memory-limit): every worker paused
    for the grace period ends the wait with a SchedulerError saying what to do."""
    import contextlib

    from fusion_switch.compare import runners

    class Never:
        def done(self):
            return False

    class Paused:
        def scatter(self, data, broadcast=False):
            return data

        def submit(self, *args, **kwargs):
            return Never()

        def cancel(self, futures):
            pass

        def scheduler_info(self):
            return {"workers": {"tcp://10.0.0.8:4000": {"status": "paused"}}}

    @contextlib.contextmanager
    def session(scheduler, workers, budget):
        yield Paused()

    monkeypatch.setattr(runners, "dask_session", session)
    monkeypatch.setattr(runners, "_PAUSED_SECONDS", 0.2)
    monkeypatch.setattr(runners, "_PAUSED_LOOK_SECONDS", 0.05)
    monkeypatch.setattr(runners, "_wait_for_a_worker", lambda *a: None)
    monkeypatch.setattr(runners, "_check_the_workers", lambda *a: None)
    started = time.monotonic()
    with pytest.raises(runners.SchedulerError) as raised:
        list(runners.run_dask(object(), [[0]], "tcp://10.0.0.7:8786"))
    assert time.monotonic() - started < 10
    said = str(raised.value)
    assert "every Dask worker (1) has been paused" in said and "--memory-limit" in said
