"""A second signal while `compare` stops does not cut its clean-up short (issue 16, found by a
kill stress: a second Ctrl-C, or the SIGTERM a job manager or `--rank all` sends after the
terminal's SIGINT, raised inside the clean-up).

It used to end with a traceback ("release unlocked lock", raised inside a threading wait) and
exit 1, the status of a proven rule; or exit 143 with "interrupted" printed twice. Either way
the process left before the comparison thread had removed its temporary CSV.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from fusion_switch.synth.generator import generate_case


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    return generate_case(tmp_path_factory.mktemp("second") / "case", n_ops=300, graph_text=False)


def start(case, out, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "fusion_switch", "compare", "-m", str(case.on_dump),
         "-g", str(case.off_dump), "-f", str(case.on_graph), "-cf", str(case.off_graph),
         "-out", str(out), "--progress", "jsonl", *extra],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        # each progress report waits 1 s: the comparison thread is asleep when the signals come,
        # so the main thread is still waiting for it to clean up when the second one lands
        env={**os.environ, "FUSION_SWITCH_COMPARE_DELAY": "1.0"},
    )  # fmt: skip


def until_comparing(process: subprocess.Popen) -> list[str]:
    """The lines read until a progress report says a tensor was compared (the CSV's temporary
    file is then open)."""
    seen = []
    for line in process.stderr:
        seen.append(line)
        try:
            if json.loads(line).get("done", 0) > 0:
                return seen
        except ValueError:
            continue
    raise AssertionError(f"the comparison ended before comparing anything: {seen}")


@pytest.mark.parametrize(
    ("first", "second", "status"),
    [
        (signal.SIGINT, signal.SIGTERM, 130),
        (signal.SIGINT, signal.SIGINT, 130),
        (signal.SIGTERM, signal.SIGINT, 143),
    ],
)
@pytest.mark.parametrize("replay", [False, True], ids=["no-replay", "replay"])
def test_a_second_signal_lets_the_clean_up_finish(case, tmp_path, first, second, status, replay):
    out = tmp_path / "out"
    process = start(case, out, *(() if replay else ("--no-replay",)))
    try:
        said = until_comparing(process)
        process.send_signal(first)
        time.sleep(0.1)
        process.send_signal(second)
        said += process.stderr.readlines()
        code = process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stderr.close()
    text = "".join(said)
    assert code == status, text
    assert "Traceback" not in text, text
    assert text.count("interrupted") == 1, text
    assert sorted(p.name for p in out.iterdir()) == [], text
