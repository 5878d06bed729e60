"""Benchmark: the ``discover`` and ``pair`` stages (reading both graphs, the fusion rules, the
fusion-off digest sent back by the helper process, merging) of this tree against a reference
revision, side by side in one run.

    .venv/bin/python tests/benchmarks/bench_discover.py [--ref REV] [--case DIR/case] [--repeat N]

The reference revision's ``server/`` is extracted with ``git archive`` and both are imported in
this process under their own module trees; every step runs --repeat times, the two trees
interleaved, with the cyclic collector off as in the comparison job. Printed per step: the
minimum and median wall time of each tree and the ratio of the minimums (the machine may be
shared: the minimum is the least disturbed run), and the minimum CPU time (this process and
the helper processes it waited for: the steadier figure when other work shares the cores).
Steps: ``load_graph`` of each side (the file read into objects: ``read_graph``, JSON by the
typed msgspec reading, where the tree has it), ``fusion_rule`` of the fusion-on graph, the
fusion-off digest (rule, names, fusion marks) and its pickle both ways, ``merge_rules``,
``discover`` as the job runs it (the fusion-off graph in a forked helper), and the command
line's pick (``plan_runs``) + ``discover`` with both graphs given as folders. Then, in fresh
processes (interleaved, bytecode cached), what the fusion-off digest helper imports before it
can parse (forked from the command line, which has loaded only itself: sixth round, issue 16),
and whether numpy is among it. The case defaults to /tmp/bench5k/case (bench_compare.py --ops
5000 --keep makes one).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import io
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MODULES = {
    "graph": "fusion_switch.readers.graph",
    "folder": "fusion_switch.readers.graph_folder",
    "dumpdir": "fusion_switch.readers.dumpdir",
    "pairing": "fusion_switch.compare.pairing",
    "discover": "fusion_switch.compare.discover",
    "plan": "fusion_switch.cli.compare_tree",
}


def import_tree(server: Path) -> types.SimpleNamespace:
    """Import fusion_switch from ``server`` as its own module tree (kept in the namespace)."""
    for name in [n for n in sys.modules if n == "fusion_switch" or n.startswith("fusion_switch.")]:
        del sys.modules[name]
    sys.path.insert(0, str(server))
    try:
        tree = types.SimpleNamespace(
            **{key: importlib.import_module(name) for key, name in MODULES.items()}
        )
    finally:
        sys.path.remove(str(server))
    tree.modules = {n: m for n, m in sys.modules.items() if n.startswith("fusion_switch")}
    return tree


def activate(tree) -> None:
    """Make ``tree`` the fusion_switch that pickle and late imports find."""
    sys.modules.update(tree.modules)


def _cpu() -> float:
    """CPU seconds of this process and of its children waited for (the forked helper)."""
    used = os.times()
    return used.user + used.system + used.children_user + used.children_system


def case_files(case: Path) -> dict:
    on_graph = sorted((case / "fusion_on").glob("ge_proto_*.json"))[0]
    off_graph = sorted((case / "fusion_off").glob("ge_proto_*.json"))[0]
    return {
        "on_graph": on_graph,
        "off_graph": off_graph,
        "on_dump": case / "fusion_on" / "dump",
        "off_dump": case / "fusion_off" / "dump",
    }


def steps(tree, files: dict, out: Path):
    """(name, callable) per measured step, for one tree."""
    graph, pairing, discover = tree.graph, tree.pairing, tree.discover
    on, off = files["on_graph"], files["off_graph"]
    state: dict = {}

    def read(path: Path):  # a file read, never a graph handed on (older trees: the dict way)
        if hasattr(graph, "read_graph"):
            return graph.read_graph(path)  # JSON by the typed reading (readers.graph_json)
        return graph.graph_from_dict(graph.load_graph_dict(path), path)

    def load(side: str, path: Path):
        def run():
            state[side] = read(path)

        return run

    def request():
        return discover.CompareRequest(files["on_dump"], files["off_dump"], on, off, out, workers=1)

    def folder_discover():
        """As the command line runs it: ``plan_runs`` picks both graphs (the fusion-off one in
        a helper process since this round), then ``discover``."""
        given = argparse.Namespace(
            on_dump=str(files["on_dump"]),
            off_dump=str(files["off_dump"]),
            on_graph=str(on.parent),
            off_graph=str(off.parent),
            out_dir=str(out),
            rank=None,
            iteration=None,
            no_replay=True,  # the picking helper gives its digest and ends, as discover's did
        )
        with contextlib.redirect_stderr(io.StringIO()):  # the pick's notes
            picked = tree.plan.plan_runs(given).runs[0][1]
        asked = request()
        asked.on_graph, asked.off_graph = picked.on_graph, picked.off_graph
        discover.discover(asked)

    return [
        ("load_graph fusion-on", load("on", on)),
        ("load_graph fusion-off", load("off", off)),
        ("fusion_rule fusion-on", lambda: state.update(on_rule=pairing.fusion_rule(state["on"]))),
        ("digest fusion-off", lambda: state.update(digest=discover._digest(state["off"]))),
        ("pickle digest", lambda: state.update(bytes=pickle.dumps(state["digest"], 5))),
        ("unpickle digest", lambda: pickle.loads(state["bytes"])),
        (
            "merge_rules",
            lambda: pairing.merge_rules(pairing.fusion_rule(state["on"]), state["digest"].rule),
        ),
        ("discover (files)", lambda: discover.discover(request())),
        ("pick + discover (folders)", folder_discover),
    ], state


_HELPER_IMPORTS = """
import re, sys, time, inspect
import fusion_switch.cli, fusion_switch.cli.compare_ahead as cli, fusion_switch.compare.forked
module = re.search(r"from \\.\\.compare\\.(\\w+) import digest_in_child",
                   inspect.getsource(cli.fusion_off_digest)).group(1)
wall, cpu = time.perf_counter(), time.process_time()
__import__("fusion_switch.compare." + module)
print(time.perf_counter() - wall, time.process_time() - cpu, "numpy" in sys.modules)
"""


def helper_imports(server: Path, repeat: int) -> tuple[list[float], list[float], bool]:
    """(wall s, CPU s, numpy loaded) of the digest helper's imports, each run in a new process."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(server)
    walls, cpus, numpy = [], [], False
    for run in range(repeat + 1):  # the first run writes the bytecode caches
        done = subprocess.run(
            [sys.executable, "-c", _HELPER_IMPORTS], env=env, capture_output=True, text=True
        )
        wall, cpu, loaded = done.stdout.split()
        if run:
            walls.append(float(wall))
            cpus.append(float(cpu))
        numpy = loaded == "True"
    return walls, cpus, numpy


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", default="main", help="reference revision (default main)")
    parser.add_argument("--case", type=Path, default=Path("/tmp/bench5k/case"))
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    if not (args.case / "fusion_on").is_dir():
        print(f"no case at {args.case}: run bench_compare.py --ops 5000 --keep DIR first")
        return 2
    files = case_files(args.case)
    with tempfile.TemporaryDirectory() as tmp:
        ref_root = Path(tmp) / "ref"
        ref_root.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", args.ref, "server"],
            capture_output=True,
            check=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(ref_root)], input=archive, check=True)
        trees = {"ref": import_tree(ref_root / "server"), "this": import_tree(REPO / "server")}
        times: dict[tuple[str, str], list[float]] = {}
        cpus: dict[tuple[str, str], list[float]] = {}
        sizes = {}
        gc.disable()
        for _ in range(args.repeat):
            for label, tree in trees.items():
                activate(tree)
                planned, state = steps(tree, files, Path(tmp) / f"out_{label}")
                for name, run in planned:
                    start, cpu = time.perf_counter(), _cpu()
                    run()
                    times.setdefault((name, label), []).append(time.perf_counter() - start)
                    cpus.setdefault((name, label), []).append(_cpu() - cpu)
                sizes[label] = len(state["bytes"])
                state.clear()
        gc.enable()
        helper = {}
        for _ in range(args.repeat):  # interleaved, one run of each tree at a time
            for label, server in (("ref", ref_root / "server"), ("this", REPO / "server")):
                walls, used, numpy = helper_imports(server, 1)
                entry = helper.setdefault(label, ([], [], numpy))
                entry[0].extend(walls)
                entry[1].extend(used)
    print(f"case {args.case} (ref {args.ref}; {args.repeat} runs each, interleaved)")
    print(f"machine load (1, 5, 15 min): {os.getloadavg()}")
    heads = ("ref min", "this min", "ref med", "this med", "this/ref", "CPU ref", "CPU this")
    print(f"{'step (wall s; CPU s: min)':28} " + " ".join(f"{h:>9}" for h in heads))
    for name in dict.fromkeys(n for n, _ in times):
        ref, this = times[(name, "ref")], times[(name, "this")]
        print(
            f"{name:28} {min(ref):9.3f} {min(this):9.3f} {statistics.median(ref):9.3f} "
            f"{statistics.median(this):9.3f} {min(this) / min(ref):9.2f} "
            f"{min(cpus[(name, 'ref')]):9.3f} {min(cpus[(name, 'this')]):9.3f}"
        )
    ref, this = helper["ref"], helper["this"]
    print(
        f"{'helper imports (new process)':28} {min(ref[0]):9.3f} {min(this[0]):9.3f} "
        f"{statistics.median(ref[0]):9.3f} {statistics.median(this[0]):9.3f} "
        f"{min(this[0]) / min(ref[0]):9.2f} {min(ref[1]):9.3f} {min(this[1]):9.3f}"
    )
    print(f"numpy in the digest helper: ref {ref[2]}, this {this[2]}")
    print(f"digest pickle: ref {sizes['ref']:,} bytes, this {sizes['this']:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
