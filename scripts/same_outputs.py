"""Check that a change kept the compare outputs: run the `compare` and `passes` commands of an
older revision and of this working tree on the same generated cases and compare what they write.

    .venv/bin/python scripts/same_outputs.py [--old REV] [--cases N] [--ops N] [--keep DIR]

The cases are generated once with this tree's generator (one per fault kind, fixed seeds) and
compared by both revisions in separate processes. Compared: the exit status, the CSV bytes, and
`summary.json`, `report.html` and stdout with the output folder and time stamps masked. Exit 0
when everything is identical, 1 otherwise (each difference is printed).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FAULTS = ("dropped_scale", "wrong_perm", "fp16_saturation", "dropped_bias", "wrong_axis")


def _run(source: Path, args: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(source / "server")}
    return subprocess.run(
        [sys.executable, "-m", "fusion_switch", *args],
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
        env=env,
    )


TIMING_KEY = re.compile(r"elapsed\w*|seconds|wall\w*|created|started|finished")


def _mask_names(text: str, folder: Path) -> str:
    """The output folder and the time stamps in file names."""
    return re.sub(r"\d{14}", "STAMP", text.replace(str(folder), "OUT"))


def _mask(text: str, folder: Path) -> str:
    text = _mask_names(text, folder)
    text = re.sub(r" in [0-9.]+ s\b", " in T s", text)  # the replay's wall time on stdout
    return re.sub(rf'"({TIMING_KEY.pattern})": ?[^,}}\n]+', "T", text)


def _compare(source: Path, case, out: Path) -> tuple[int, str]:
    shutil.rmtree(out, ignore_errors=True)
    args = ["compare", "-m", str(case.on_dump), "-g", str(case.off_dump), "-f", str(case.on_graph)]
    args += ["-cf", str(case.off_graph), "-out", str(out), "--no-progress", "--workers", "2"]
    done = _run(source, args)
    return done.returncode, done.stdout


def _read(path: Path, out: Path):
    """The masked text; for summary.json its parsed value, masked the same way (how floats are
    spelt, ``1e-05`` or ``1e-5``, is the JSON encoder's business, not the comparison's)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".json":
        return _mask(text, out)
    return _masked_json(json.loads(text), out)


def _masked_json(value, out: Path):
    if isinstance(value, dict):
        return {
            k: "T" if TIMING_KEY.fullmatch(k) else _masked_json(v, out) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_masked_json(v, out) for v in value]
    if isinstance(value, str):
        return _mask_names(value, out)
    return value


def _differences(old_out: Path, new_out: Path, old_run, new_run) -> list[str]:
    found = []
    if old_run[0] != new_run[0]:
        found.append(f"exit status {old_run[0]} vs {new_run[0]}")
    if _mask(old_run[1], old_out) != _mask(new_run[1], new_out):
        found.append("stdout")
    old_csv, new_csv = sorted(old_out.glob("result_*.csv")), sorted(new_out.glob("result_*.csv"))
    if len(old_csv) != 1 or len(new_csv) != 1:
        found.append(f"CSV files: {len(old_csv)} vs {len(new_csv)}")
    elif old_csv[0].read_bytes() != new_csv[0].read_bytes():
        found.append("CSV bytes")
    for name in ("summary.json", "report.html"):
        a, b = old_out / name, new_out / name
        if not a.is_file() or not b.is_file():
            found.append(f"{name} missing")
        elif _read(a, old_out) != _read(b, new_out):
            found.append(name)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", default="HEAD", help="revision to compare with (default HEAD)")
    parser.add_argument("--cases", type=int, default=3, help=f"at most {len(FAULTS)}")
    parser.add_argument("--ops", type=int, default=60)
    parser.add_argument("--keep", type=Path, help="keep cases and outputs in this folder")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "server"))
    from fusion_switch.synth.generator import generate_case

    work = args.keep or Path(tempfile.mkdtemp(prefix="same-outputs-"))
    old_tree = work / "old-tree"
    if old_tree.exists():
        subprocess.run(["git", "worktree", "remove", "--force", str(old_tree)], cwd=REPO)
    subprocess.run(
        ["git", "worktree", "add", "--detach", "-q", str(old_tree), args.old], cwd=REPO, check=True
    )
    failures = 0
    try:
        for seed, fault in enumerate(FAULTS[: args.cases]):
            case = generate_case(work / f"case-{fault}", n_ops=args.ops, faults=(fault,), seed=seed)
            runs = {
                side: _compare(tree, case, work / f"out-{fault}-{side}")
                for side, tree in (("old", old_tree), ("new", REPO))
            }
            diff = _differences(
                work / f"out-{fault}-old", work / f"out-{fault}-new", runs["old"], runs["new"]
            )
            graphs = [case.on_graph, case.off_graph, case.on_graph_txt]
            for graph in (g for g in graphs if g):
                old_p, new_p = (_run(t, ["passes", str(graph)]) for t in (old_tree, REPO))
                if (old_p.returncode, old_p.stdout) != (new_p.returncode, new_p.stdout):
                    diff.append(f"passes {graph.name}")
            rows = sum(1 for _ in next((work / f"out-{fault}-new").glob("result_*.csv")).open())
            verdict = "identical" if not diff else "DIFFERS: " + ", ".join(diff)
            print(f"{fault}: {rows} CSV lines, exit {runs['new'][0]}: {verdict}")
            failures += bool(diff)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(old_tree)], cwd=REPO)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
