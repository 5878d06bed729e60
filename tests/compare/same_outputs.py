"""Check that `fusion-switch compare` writes byte-identical outputs at two revisions.

    .venv/bin/python tests/compare/same_outputs.py [--base main] [--ops 300]

Exports the ``server/`` tree of ``--base`` (a git revision) into a temporary folder, generates
cases (the demo's faulty case in device and host formats, a clean case, npy-free and with one
damaged dump file), and runs `python -m fusion_switch compare` from both trees into output
folders of the same name. Then compares: the result CSV byte for byte, ``summary.json`` (parsed;
the paths differ only by the output folder, which is normalised) and ``report.html`` byte for byte
after the same normalisation. Prints one line per case and file; exit status 1 on any difference.

Used to show that restructuring the engine (issue 10, the pipeline of named stages) and the
performance work (issue 16) change no output. Also imported by the test of the same name.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def export_tree(revision: str, into: Path) -> Path:
    """``server/`` of ``revision`` under ``into``; returns the folder to put on PYTHONPATH."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", revision, "server"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "server"


def make_cases(root: Path, ops: int) -> dict[str, object]:
    sys.path.insert(0, str(REPO / "server"))
    from fusion_switch.synth.generator import generate_case

    cases = {
        "demo-device": generate_case(root / "device", n_ops=ops, faults=["dropped_scale"]),
        "demo-host": generate_case(root / "host", n_ops=ops, formats="host", seed=3),
        "clean": generate_case(root / "clean", n_ops=ops, faults=[], seed=5, graph_text=False),
    }
    damaged = generate_case(root / "damaged", n_ops=ops, seed=7, graph_text=False)
    victim = sorted(Path(damaged.on_dump).iterdir())[len(os.listdir(damaged.on_dump)) // 2]
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    cases["damaged"] = damaged
    return cases


def run_cli(server: Path, case, out: Path, extra: list[str]) -> int:
    env = dict(os.environ, PYTHONPATH=str(server))
    command = [
        sys.executable,
        "-m",
        "fusion_switch",
        "compare",
        "-m",
        str(case.on_dump),
        "-g",
        str(case.off_dump),
        "-f",
        str(case.on_graph),
        "-cf",
        str(case.off_graph),
        "-out",
        str(out),
        "--no-progress",
        *extra,
    ]
    return subprocess.run(command, env=env, capture_output=True, check=False).returncode


def outputs(out: Path) -> dict[str, bytes]:
    """The files a run wrote, by kind, with the output folder's own path replaced."""
    found: dict[str, bytes] = {}
    for path in out.iterdir():
        kind = "csv" if path.name.startswith("result_") else path.name
        found[kind] = path.read_bytes().replace(os.fsencode(out), b"<OUT>")
    if "summary.json" in found:
        summary = json.loads(found["summary.json"])
        for key in ("csv", "report", "elapsed", "created"):
            summary.pop(key, None)
        found["summary.json"] = json.dumps(summary, sort_keys=True).encode()
    if "report.html" in found:
        found["report.html"] = _without_csv_name(found["report.html"])
    return found


def _without_csv_name(data: bytes) -> bytes:
    """The CSV's name holds the second it was written; that is the only expected difference."""
    import re

    return re.sub(rb"result_\d{14}\.csv", b"result_<STAMP>.csv", data)


def check(base: str, ops: int, extra: list[str] | None = None) -> list[str]:
    """Differences between ``base`` and this tree (empty: identical)."""
    extra = extra or []
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="same-outputs-") as temp:
        root = Path(temp)
        (root / "base").mkdir()
        base_server = export_tree(base, root / "base")
        cases = make_cases(root / "cases", ops)
        for name, case in cases.items():
            results = {}
            for label, server in (("base", base_server), ("here", REPO / "server")):
                out = root / "out" / name
                if out.exists():
                    shutil.rmtree(out)
                status = run_cli(server, case, out, extra)
                results[label] = (status, outputs(out))
                shutil.move(out, root / f"out-{label}-{name}")
            (status_a, files_a), (status_b, files_b) = results["base"], results["here"]
            if status_a != status_b:
                problems.append(f"{name}: exit status {status_a} at {base}, {status_b} here")
            for kind in sorted(set(files_a) | set(files_b)):
                same = files_a.get(kind) == files_b.get(kind)
                print(f"{name:12} {kind:13} {'same' if same else 'DIFFERENT'}")
                if not same:
                    problems.append(f"{name}: {kind} differs")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="main", help="git revision to compare with")
    parser.add_argument("--ops", type=int, default=300)
    parser.add_argument("--workers", default=None, help="passed to both runs as --workers")
    args = parser.parse_args()
    extra = ["--workers", args.workers] if args.workers else []
    problems = check(args.base, args.ops, extra)
    for problem in problems:
        print(problem)
    print("identical" if not problems else f"{len(problems)} difference(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
