"""What `compare` loads (issue 16, start-up): a run with --no-replay does not import the replay
(its modules and their imports are ~20 ms of every start); a run with the replay still does."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from fusion_switch.synth.generator import generate_case

PROBE = """
import sys
from fusion_switch.cli import main
status = main(sys.argv[1:])
loaded = sorted(m for m in sys.modules if m.startswith("fusion_switch.diagnose.replay"))
print(f"{status}|{','.join(loaded)}")
"""


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    root = tmp_path_factory.mktemp("startup")
    return generate_case(root / "case", n_ops=12, faults=["dropped_scale"], graph_text=False)


@pytest.mark.parametrize("replay", [False, True])
def test_the_replay_is_imported_only_when_it_runs(case, tmp_path, replay):
    args = [
        *("compare", "-m", str(case.on_dump), "-g", str(case.off_dump)),
        *("-f", str(case.on_graph), "-cf", str(case.off_graph), "-out", str(tmp_path)),
        *("--no-progress", "--workers", "1"),
    ]
    if not replay:
        args.append("--no-replay")
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    status, loaded = done.stdout.strip().splitlines()[-1].split("|")
    assert status == "1"  # the fault is found either way
    if replay:
        assert "fusion_switch.diagnose.replay_background" in loaded.split(",")
    else:
        assert loaded == ""


AHEAD_PROBE = """
import multiprocessing, sys
from fusion_switch.compare import forked
forked.GRAPH_FORK_BYTES = int(sys.argv[1])  # the generated graph is small
seen = {"numpy_at_fork": None, "taken": False}
start, take = forked.start_ahead, forked.take_ahead
def recording_start(*a, **k):
    seen["numpy_at_fork"] = "numpy" in sys.modules
    return start(*a, **k)
def recording_take(key):
    call = take(key)
    seen["taken"] = seen["taken"] or call is not None
    return call
forked.start_ahead, forked.take_ahead = recording_start, recording_take
from fusion_switch.cli import main
status = main(sys.argv[2:])
print(f"{status}|{seen['numpy_at_fork']}|{seen['taken']}|{len(multiprocessing.active_children())}")
"""


def _ahead_run(case, out, fork_bytes: int, on_dump=None) -> tuple[list[str], str]:
    args = [
        *("compare", "-m", str(on_dump or case.on_dump), "-g", str(case.off_dump)),
        *("-f", str(case.on_graph), "-cf", str(case.off_graph), "-out", str(out)),
        *("--no-progress", "--workers", "1", "--no-replay"),
    ]
    done = subprocess.run(
        [sys.executable, "-c", AHEAD_PROBE, str(fork_bytes), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    return lines[-1].split("|"), "\n".join(lines[:-1]) + done.stderr


def test_the_fusion_off_graph_is_read_ahead_before_numpy_and_gives_the_same_outputs(case, tmp_path):
    ahead, ahead_text = _ahead_run(case, tmp_path / "ahead", 0)
    here, here_text = _ahead_run(case, tmp_path / "here", 1 << 40)
    assert ahead == ["1", "False", "True", "0"], ahead_text  # forked before numpy, claimed
    assert here == ["1", "None", "False", "0"], here_text  # a small graph: read in the job
    stamp = re.compile(r"result_\d+\.csv")  # the CSV's name holds the time
    assert stamp.sub("", ahead_text.replace("ahead", "here")) == stamp.sub("", here_text)
    (ahead_csv,) = (tmp_path / "ahead").glob("result_*.csv")
    (here_csv,) = (tmp_path / "here").glob("result_*.csv")
    assert ahead_csv.read_bytes() == here_csv.read_bytes()


def test_a_graph_read_ahead_for_a_job_that_fails_leaves_no_process(case, tmp_path):
    ahead, text = _ahead_run(case, tmp_path / "out", 0, on_dump=tmp_path / "missing")
    status, numpy_at_fork, taken, children = ahead
    assert status == "2" and numpy_at_fork == "False" and taken == "False", text
    assert children == "0"
    assert "missing" in text


NUMPY_PROBE = """
import sys
from fusion_switch.compare import discover, forked
forked.GRAPH_FORK_BYTES = 0  # the generated graph is small: read it in the helper all the same
seen = []
def note(where):
    seen.append(f"{where}:{'numpy' in sys.modules}")
load, digest = discover._load_graph, discover._DigestReader.digest
def recording_load(*a, **k):
    note("graph")
    return load(*a, **k)
def recording_digest(self):
    note("digest")
    return digest(self)
discover._load_graph, discover._DigestReader.digest = recording_load, recording_digest
from fusion_switch.cli import main
status = main(sys.argv[1:])
print(f"{status}|{','.join(seen)}")
"""


@pytest.mark.parametrize("replay", [False, True])
def test_numpy_is_imported_while_the_fusion_off_helper_reads_not_before(case, tmp_path, replay):
    # numpy takes ~0.1 s to import; the job imports it in the time it would wait for the
    # helper's digest, not before it reads the fusion-on graph (issue 16). With the replay,
    # the cores' split was asked of the replay's module, which imported numpy before the job
    args = [
        *("compare", "-m", str(case.on_dump), "-g", str(case.off_dump)),
        *("-f", str(case.on_graph), "-cf", str(case.off_graph), "-out", str(tmp_path)),
        *("--no-progress", "--workers", "2"),
        *(() if replay else ("--no-replay",)),
    ]
    done = subprocess.run(
        [sys.executable, "-c", NUMPY_PROBE, *args], capture_output=True, text=True, check=False
    )
    status, seen = done.stdout.strip().splitlines()[-1].split("|")
    assert status == "1", done.stderr
    assert seen == "graph:False,digest:True", done.stderr
