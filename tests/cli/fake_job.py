"""A stand-in for a training job, for bisect tests: bad (exit 1, low accuracy) when any of the
rules named in FAKE_GUILTY is on in the configuration it is given.

FAKE_GUILTY   comma-separated rule names
FAKE_MODE     "exit" (default), "flaky" (a guilty configuration fails every other run, counted
              in FAKE_STATE), "always-bad", "slow" (writes its pid to FAKE_STATE; from the
              FAKE_SLOW_FROM-th run on it sleeps FAKE_SLEEP seconds, so a test can interrupt it),
              "spurious" (the runs numbered in FAKE_FAIL_RUNS fail whatever the configuration,
              counted in FAKE_STATE: a job that fails for reasons of its own)
FAKE_GE       comma-separated rule names GE's pass executor runs: it reads their switches from
              JSON only, so a file in the old line format (`Name:off` lines) leaves them on
The configuration is argv[1] (the `{cfg}` of the command line) or $FUSION_SWITCH_CFG.
"""

import json
import os
import sys
import time
from pathlib import Path

path = sys.argv[1] if len(sys.argv) > 1 else os.environ["FUSION_SWITCH_CFG"]
mode = os.environ.get("FAKE_MODE", "exit")
guilty = [g for g in os.environ.get("FAKE_GUILTY", "").split(",") if g]
ge_passes = [g for g in os.environ.get("FAKE_GE", "").split(",") if g]
text = Path(path).read_text(encoding="utf-8")
try:
    switch = json.loads(text).get("Switch", {})
except ValueError:  # the old line format: FE reads it, GE does not
    lines = dict(line.strip().split(":", 1) for line in text.splitlines() if ":" in line)
    switch = {"GraphFusion": {k: v for k, v in lines.items() if k not in ge_passes}}


def is_on(rule):
    for section in switch.values():
        if rule in section:
            return section[rule] == "on"
    return all(section.get("ALL") != "off" for section in switch.values())


bad = any(is_on(g) for g in guilty) or mode == "always-bad"
if mode == "slow":
    with open(os.environ["FAKE_STATE"], "a") as fh:
        fh.write(f"{os.getpid()}\n")
    with open(os.environ["FAKE_STATE"]) as fh:
        started = len(fh.read().split())
    if started >= int(os.environ.get("FAKE_SLOW_FROM", "1")):
        time.sleep(float(os.environ.get("FAKE_SLEEP", "60")))
if mode == "flaky" and bad:
    state = os.environ["FAKE_STATE"]
    count = int(Path(state).read_text() or 0) if os.path.exists(state) else 0
    with open(state, "w") as fh:
        fh.write(str(count + 1))
    bad = count % 2 == 1  # the fault shows only on every other run
if mode == "spurious":
    state = os.environ["FAKE_STATE"]
    count = (int(Path(state).read_text() or 0) if os.path.exists(state) else 0) + 1
    Path(state).write_text(str(count))
    bad = bad or str(count) in os.environ.get("FAKE_FAIL_RUNS", "").split(",")
print(f"step 100 loss 0.1 accuracy={0.42 if bad else 0.91:.2f}")
sys.exit(1 if bad and mode != "metric-only" else 0)
