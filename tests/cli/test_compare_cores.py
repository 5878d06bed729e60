"""How `compare` shares the cores with the replay that runs beside it (issue 16).

The replay's child takes half of the cores; the comparison takes the rest, not all of them
again: on two cores a pool worker beside the replay's child made three busy processes for two
cores and one more forked copy of the calling process in the tree."""

from __future__ import annotations

import subprocess
import sys

import pytest
from fusion_switch.diagnose import replay_background
from fusion_switch.diagnose.replay_cores import comparison_processes, overlapping_processes
from fusion_switch.synth.generator import generate_case

PROBE = """
import sys
from fusion_switch.compare import engine
from fusion_switch.diagnose import replay_background
seen = {}
run_compare, start = engine.run_compare, replay_background.BackgroundReplay.start
def recording_run(request, **kw):
    seen["comparison"] = request.workers
    return run_compare(request, **kw)
def recording_start(self):
    seen["replay"] = (self.workers, self.processes)
    return start(self)
engine.run_compare, replay_background.BackgroundReplay.start = recording_run, recording_start
from fusion_switch.cli import main
status = main(sys.argv[1:])
print(f"{status}|{seen.get('comparison')}|{seen.get('replay')}")
"""


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    root = tmp_path_factory.mktemp("cores")
    return generate_case(root / "case", n_ops=12, faults=["dropped_scale"], graph_text=False)


@pytest.mark.parametrize(
    "flags, comparison, replay",
    [
        (
            ["--workers", "2"],
            "1",
            "(2, 1)",
        ),  # the replay's child on one core, the rows on the other
        (["--workers", "4"], "2", "(4, 2)"),
        (["--workers", "3"], "2", "(3, 1)"),
        (["--workers", "1"], "1", "(1, 1)"),  # no child: the replay runs after the rows
        (["--workers", "2", "--no-replay"], "2", "None"),  # no replay: every core compares
    ],
)
def test_the_comparison_takes_the_cores_the_replay_does_not(
    case, tmp_path, flags, comparison, replay
):
    args = [
        *("compare", "-m", str(case.on_dump), "-g", str(case.off_dump)),
        *("-f", str(case.on_graph), "-cf", str(case.off_graph), "-out", str(tmp_path)),
        *("--no-progress", *flags),
    ]
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=False
    )
    status, got_comparison, got_replay = done.stdout.strip().splitlines()[-1].split("|")
    assert status == "1", done.stderr  # the fault is found
    assert (got_comparison, got_replay) == (comparison, replay)


@pytest.mark.parametrize(
    "cores, comparison, child", [(1, None, 1), (2, 1, 1), (3, 2, 1), (8, 4, 4)]
)
def test_every_core_is_used_once_when_the_workers_are_not_given(
    monkeypatch, cores, comparison, child
):
    monkeypatch.setattr(replay_background.os, "cpu_count", lambda: cores)
    assert comparison_processes(None) == comparison
    assert overlapping_processes(None) == child
    if comparison is not None:
        assert comparison + child == cores
