"""Trials `fusion-switch bisect` needs, beside the bound and beside flipping one rule per run.

For each suite (k guilty of n candidates, 200 random placements) the pure search
(workflow/bisect.py) runs against an exact oracle; one placement per suite also runs through
the real command line with a fake job, and its trial count (preflight included) is printed.
No timing: trials are what a user pays for (each is a training run).

    python tests/benchmarks/bench_bisect.py
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from fusion_switch.workflow.bisect import Search, bound, drive

FAKE_JOB = Path(__file__).resolve().parents[1] / "cli" / "fake_job.py"
SUITES = [
    (10, 1),
    (10, 2),
    (10, 3),
    (48, 1),
    (48, 2),
    (48, 3),
    (100, 2),
    (200, 1),
    (200, 2),
    (200, 3),
]
PLACEMENTS = 200


def search_trials(n: int, k: int, parallel: int = 1) -> tuple[int, float, int]:
    counts, rounds = [], []
    for seed in range(PLACEMENTS):
        candidates = [f"R{i:03d}" for i in range(n)]
        guilty = set(random.Random(seed).sample(candidates, k))
        search = Search(candidates, parallel)
        assert set(drive(search, lambda on, g=guilty: bool(g & set(on)))) == guilty
        counts.append(search.trials)
        rounds.append(search.rounds)
    return max(counts), sum(counts) / len(counts), max(rounds)


def cli_trials(n: int, k: int) -> int:
    guilty = random.Random(7).sample([f"R{i:03d}" for i in range(n)], k)
    with tempfile.TemporaryDirectory() as folder:
        cfg = Path(folder) / "fusion_switch.cfg"
        cfg.write_text('{"Switch": {"GraphFusion": {}}}\n')
        rules = ",".join(f"GraphFusion:R{i:03d}" for i in range(n))
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "fusion_switch",
                "bisect",
                str(cfg),
                f"--rules={rules}",
                "--format",
                "json",
                "--",
                sys.executable,
                str(FAKE_JOB),
                "{cfg}",
            ],
            capture_output=True,
            text=True,
            env={"FAKE_GUILTY": ",".join(guilty), "PATH": "/usr/bin:/bin"},
            check=True,
        )
        result = json.loads(done.stdout.splitlines()[-1])
        assert sorted(g["rule"] for g in result["guilty"]) == sorted(guilty)
        return result["trials"]


def main() -> None:
    print(
        f"{'k of n':>9} | {'search worst':>12} {'mean':>6} | {'bound k(log2n+1)':>16} | "
        f"{'CLI, preflight incl.':>20} | {'-j 4 rounds':>11} | {'one rule per run':>16}"
    )
    for n, k in SUITES:
        worst, mean, _ = search_trials(n, k)
        _, _, rounds4 = search_trials(n, k, 4)
        cli = cli_trials(n, k)
        print(
            f"{k:>4} of {n:<3} | {worst:>12} {mean:>6.1f} | {bound(n, k):>16} | {cli:>20} | "
            f"{rounds4:>11} | {n:>16}"
        )


if __name__ == "__main__":
    main()
