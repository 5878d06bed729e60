"""What `compare` loads (issue 16, start-up): a run with --no-replay does not import the replay
(its modules and their imports are ~20 ms of every start); a run with the replay still does."""

from __future__ import annotations

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
