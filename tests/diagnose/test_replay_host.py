"""The replay in the fusion-off graph's helper (issue 16): the helper `compare` forks at its start
to read that graph stays after the digest and runs the replay there, on a view of the fusion-on
graph (`diagnose/on_view.py`). The view must make the replay find exactly what the whole graph
makes it find, on real graphs and generated cases; the command line must read the fusion-off
graph once, in that helper, and write the same outputs as the forked child it replaces; any
failure of the helper must leave the outputs as they were and no process behind."""

from __future__ import annotations

import json
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fusion_switch.compare.engine import CompareRequest, run_compare
from fusion_switch.diagnose.evidence import EvidenceStore
from fusion_switch.diagnose.on_view import Producer, graph_of_view, on_view
from fusion_switch.diagnose.replay import replay_run
from fusion_switch.diagnose.replay_job import dump_dirs
from fusion_switch.diagnose.rules import op_rules
from fusion_switch.diagnose.subgraph import (
    PASS_THROUGH_TYPES,
    GraphIndex,
    NotReconstructible,
    build_subgraph,
    fused_ops,
    is_fused,
)
from fusion_switch.readers.graph import load_graph
from fusion_switch.synth.generator import generate_case

GRAPHS = Path(__file__).resolve().parents[1] / "data" / "real" / "graphs"  # copy of shared/
REAL = sorted(p.name for p in GRAPHS.glob("ge_proto_*.txt") if p.stat().st_size > 1000)


def _sent(graph):
    """The view as the helper gets it: pickled, unpickled, rebuilt."""
    view = on_view(graph)
    assert view is not None
    return graph_of_view(pickle.loads(pickle.dumps(view, protocol=pickle.HIGHEST_PROTOCOL)))


def _desc_facts(desc) -> tuple:
    return (
        desc.dtype,
        desc.layout,
        tuple(desc.shape),
        desc.origin_name,
        desc.origin_output_index,
        desc.origin_data_type,
        desc.origin_shape,
        desc.origin_format,
    )


def _op_facts(op) -> tuple:
    """Everything the replay reads of a fused op."""
    return (
        op.name,
        op.type,
        op.data_inputs,
        op.has_original_names,
        op.original_names,
        op.msaccucmp_original_names,
        op.is_fused,
        op.pass_names,
        op.attr("pass_name_ub"),
        op.attr("_single_op_ub_pass_name"),
        [_desc_facts(d) for d in op.output_descs],
    )


def _subgraph_facts(op, on: GraphIndex, off: GraphIndex):
    try:
        sub = build_subgraph(op, on, off)
    except NotReconstructible as error:
        return ("not reconstructible", error.reason)
    return ([m.name for m in sub.members], sub.boundary, sub.outputs, sub.absent)


def _producer_facts(op) -> tuple:
    """What the replay reads of an op that feeds a fused op (``origin_of_input``)."""
    origins = [(d.origin_name, d.origin_output_index) for d in op.output_descs]
    through = op.data_inputs if op.type in PASS_THROUGH_TYPES else []
    names = (op.has_original_names, op.original_names, op.msaccucmp_original_names)
    return (op.name, op.type, is_fused(op), list(through), *names, origins)


def _same_subgraphs(graph, off_graph) -> int:
    view = _sent(graph)
    whole, part, off = GraphIndex.of(graph), GraphIndex.of(view), GraphIndex.of(off_graph)
    for op, position in zip(view.ops, view.positions, strict=True):
        if isinstance(op, Producer):
            assert _producer_facts(op) == _producer_facts(graph.ops[position])
    fused, seen = fused_ops(graph), fused_ops(view)
    assert [_op_facts(op) for op in seen] == [_op_facts(op) for op in fused]
    for op, viewed in zip(fused, seen, strict=True):
        assert part.order[viewed.name] == whole.order[op.name]
        assert _subgraph_facts(viewed, part, off) == _subgraph_facts(op, whole, off)
        types = [op.type for op in off.ops.values()][:3]
        assert op_rules(viewed, types, None) == op_rules(op, types, None)
    return len(fused)


@pytest.mark.parametrize("name", REAL)
def test_the_view_of_a_real_graph_rebuilds_every_fused_ops_subgraph(name):
    """Real GE graphs (ResNet-50 and others: TransData/Cast chains, pass attributes, ops standing
    for several originals), against themselves and against the largest real graph."""
    graph = load_graph(GRAPHS / name)
    other = load_graph(GRAPHS / "ge_proto_00000062_Build.txt")
    counted = _same_subgraphs(graph, graph) + _same_subgraphs(graph, other)
    if name in ("ge_proto_00000062_Build.txt", "ge_proto_00026_afterUBMatch.txt"):
        assert counted > 0  # graphs with fused ops: the comparison above had something to see


def test_the_view_keeps_fewer_attributes_than_the_graph_holds():
    """What makes it worth sending: the view of the largest real graph is a small part of it."""
    graph = load_graph(GRAPHS / "ge_proto_00000062_Build.txt")
    view = pickle.dumps(on_view(graph), protocol=pickle.HIGHEST_PROTOCOL)
    whole = pickle.dumps(
        [(op.raw_attrs, [d.raw_attrs for d in op.output_descs]) for op in graph.ops]
    )
    assert len(view) < len(whole) / 2


@pytest.fixture(scope="module")
def device_case(tmp_path_factory):
    """Device formats (TransData between fused ops), several faults, a missing dump."""
    root = tmp_path_factory.mktemp("host")
    return generate_case(
        root / "case",
        n_ops=120,
        faults=["wrong_epsilon", "dropped_scale", "fp16_saturation"],
        graph_text=False,
        gaps="producers",
    )


def _report_json(report) -> tuple:
    results = json.dumps([r.to_json() for r in report.results], sort_keys=True)
    return (results, repr(report.noise.samples), report.files_read, report.unreadable)


def test_the_replay_of_the_view_finds_what_the_replay_of_the_graph_finds(device_case, tmp_path):
    case = device_case
    request = CompareRequest(case.on_dump, case.off_dump, case.on_graph, case.off_graph, tmp_path)
    outcome = run_compare(request)
    on_graph, off_graph = load_graph(case.on_graph), load_graph(case.off_graph)
    assert _same_subgraphs(on_graph, off_graph) > 10
    reports = []
    for graph in (on_graph, _sent(on_graph)):
        store = EvidenceStore(*dump_dirs(outcome))
        reports.append(replay_run(graph, off_graph, store, workers=1))
    assert _report_json(reports[1]) == _report_json(reports[0])
    assert reports[0].replayed > 0 and reports[0].files_read == reports[1].files_read


def test_a_graph_built_in_memory_without_raw_attributes_gets_no_view():
    from fusion_switch.readers.graph import Graph, Op

    fused = Op("fused", "Conv2D", attrs={"_datadump_original_op_names": ["a", "b"]})
    assert fused.is_fused and on_view(Graph("g", ops=[fused])) is None


# ----------------------------------------------------------------------------- the command line

PROBE = """
import json, multiprocessing, os, sys
from fusion_switch.compare import forked
from fusion_switch.diagnose import replay_background
from fusion_switch.readers import graph
forked.GRAPH_FORK_BYTES = int(sys.argv[1])
log = sys.argv[2]
def note(what):
    with open(log, "a") as f:
        f.write(json.dumps([os.getpid(), what]) + "\\n")
real_load, real_replay = graph.read_graph, replay_background.replay_outcome
def load(path, *args, **kwargs):
    note("read " + os.path.basename(str(path)))
    return real_load(path, *args, **kwargs)
def replay(*a, **k):
    note("replay")
    if os.environ.get("HOST_DIES") and os.getpid() != int(os.environ["MAIN_PID"]):
        os._exit(9)
    return real_replay(*a, **k)
graph.read_graph, replay_background.replay_outcome = load, replay
from fusion_switch.diagnose import replay_job
def counted(module, what):
    real = getattr(module, "scan_dump_dir", None)
    if real is None:
        return
    def scan(path, *a, **k):
        note(what)
        return real(path, *a, **k)
    module.scan_dump_dir = scan
counted(replay_background, "index ahead")
counted(replay_job, "index in the replay")
os.environ["MAIN_PID"] = str(os.getpid())
note("main")
from fusion_switch.cli import main
status = main(sys.argv[3:])
print(f"{status}|{len(multiprocessing.active_children())}")
"""


def _run(
    case,
    out: Path,
    fork_bytes: int,
    *extra: str,
    env: dict | None = None,
    swap: bool = False,
    on_dump: Path | None = None,
    off_dump: Path | None = None,
):
    """(exit status, children left, [(pid, event)], output) of `compare` in a fresh process."""
    log = out.parent / f"{out.name}.log"
    graphs = [str(case.on_graph), str(case.off_graph)]
    if swap:
        graphs.reverse()
    args = [
        *("compare", "-m", str(on_dump or case.on_dump), "-g", str(off_dump or case.off_dump)),
        *("-f", graphs[0], "-cf", graphs[1], "-out", str(out), "--no-progress"),
        *extra,
    ]
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(fork_bytes), str(log), *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
    )
    lines = done.stdout.strip().splitlines()
    status, children = lines[-1].split("|")
    events = [tuple(json.loads(line)) for line in log.read_text().splitlines()]
    return int(status), int(children), events, "\n".join(lines[:-1]) + done.stderr


_STAMP = re.compile(r"result_\d+\.csv|in \d+\.\d+ s")


def _outputs(out: Path) -> tuple:
    summary = json.loads((out / "summary.json").read_text())
    summary["replay"].pop("seconds")
    summary.pop("timings", None)
    for key in ("csv", "report"):
        summary.pop(key, None)
    summary.pop("inputs", None)
    (csv,) = out.glob("result_*.csv")
    report = _STAMP.sub("", (out / "report.html").read_text()).replace(str(out), "OUT")
    return summary, csv.read_bytes(), len(report)


@pytest.fixture(scope="module")
def forked_child(device_case, tmp_path_factory):
    """The replay as before: no helper (graph read in the job), the replay's child forked."""
    out = tmp_path_factory.mktemp("forked") / "out"
    status, children, events, text = _run(device_case, out, 1 << 40, "--workers", "2")
    assert status in (1, 3) and children == 0, text
    return out, events, text, status


def test_the_replay_runs_in_the_helper_that_read_the_fusion_off_graph_once(
    device_case, forked_child, tmp_path
):
    status, children, events, text = _run(device_case, tmp_path / "o", 0, "--workers", "2")
    assert status == forked_child[3] and children == 0, text
    main = next(pid for pid, what in events if what == "main")
    off = Path(device_case.off_graph).name
    reads = [pid for pid, what in events if what == f"read {off}"]
    replays = [pid for pid, what in events if what == "replay"]
    assert len(reads) == 1 and reads[0] != main  # read once, in the helper
    assert replays == reads  # the replay answered by that same process
    # which indexed both dump folders while it waited for the request, and not again after
    assert [what for pid, what in events if pid == reads[0] and "index" in what] == [
        "index ahead",
        "index ahead",
    ]
    before = forked_child[1]
    assert len([e for e in before if e[1] == f"read {off}"]) == 2  # what it replaces read it twice
    assert _outputs(tmp_path / "o") == _outputs(forked_child[0])
    assert _STAMP.sub("", text).replace(str(tmp_path / "o"), "OUT") == _STAMP.sub(
        "", forked_child[2]
    ).replace(str(forked_child[0]), "OUT")


def _tree(leaf: Path) -> Path:
    """The dump tree a leaf was written in (its ``dump`` folder: time, device, model...)."""
    return next(parent for parent in leaf.parents if parent.name == "dump")


def test_the_helper_indexes_dump_trees_while_it_waits(device_case, forked_child, tmp_path):
    """Issue 16: given the dump trees users point at (``dump/<time>/<device>/<model>/...``),
    not the leaves, the helper indexed nothing while it waited, and the replay indexed both
    leaves after the request (0.05 s at 5,000 ops, before its first sub-graph). It now
    follows each tree to its leaf as the comparison's first try does (the fusion-off graph's
    name picks the model folder) and indexes it then; the request names the leaves the
    comparison used, and an index of one of those is all the replay takes."""
    on_tree, off_tree = _tree(device_case.on_dump), _tree(device_case.off_dump)
    assert on_tree != device_case.on_dump and off_tree != device_case.off_dump
    out = tmp_path / "o"
    status, children, events, text = _run(
        device_case, out, 0, "--workers", "2", on_dump=on_tree, off_dump=off_tree
    )
    assert status == forked_child[3] and children == 0, text
    off = Path(device_case.off_graph).name
    (helper,) = [pid for pid, what in events if what == f"read {off}"]
    assert [what for pid, what in events if pid == helper and "index" in what] == [
        "index ahead",
        "index ahead",
    ]
    # the report shows the folders given, and the picks made in the trees
    assert _outputs(out)[:2] == _outputs(forked_child[0])[:2]


def test_a_helper_that_dies_in_the_replay_leaves_the_outputs_as_they_were(
    device_case, forked_child, tmp_path
):
    env = {"HOST_DIES": "1"}
    status, children, events, text = _run(device_case, tmp_path / "o", 0, "--workers", "2", env=env)
    assert status == forked_child[3] and children == 0, text
    main = next(pid for pid, what in events if what == "main")
    replays = [pid for pid, what in events if what == "replay"]
    assert replays[-1] == main and len(replays) == 2  # died there, run again here
    assert _outputs(tmp_path / "o") == _outputs(forked_child[0])


def test_graphs_given_the_other_way_round_end_the_helper_and_replay_as_before(
    device_case, forked_child, tmp_path
):
    """The helper read the graph given as fusion-off, which is the fusion-on one: it must not
    host the replay. The graph given as fusion-on was read without its input descs (as the
    fusion-on graph is), so the replay's child reads it again, whole, as the fusion-off one."""
    status, children, events, text = _run(
        device_case, tmp_path / "o", 0, "--workers", "2", swap=True
    )
    assert status == forked_child[3] and children == 0, text
    assert "other way round" in text
    main = next(pid for pid, what in events if what == "main")
    replays = [pid for pid, what in events if what == "replay"]
    assert len(replays) == 1 and replays[0] != main
    readers = {pid for pid, what in events if what.startswith("read")}
    helper = readers - {main, *replays}
    assert len(helper) == 1 and replays[0] not in helper
    child_reads = [what for pid, what in events if pid == replays[0] and what.startswith("read")]
    assert len(child_reads) == 1, events
    summary, csv, _ = _outputs(tmp_path / "o")
    before, before_csv, _ = _outputs(forked_child[0])
    assert csv == before_csv and summary["replay"] == before["replay"]


def test_a_job_that_fails_leaves_no_kept_helper(device_case, tmp_path):
    (tmp_path / "empty").mkdir()
    empty = tmp_path / "empty"
    status, children, _, text = _run(device_case, tmp_path / "o", 0, on_dump=empty)
    assert status == 2 and children == 0, text
    assert "no dump files found" in text


FAILING_START = """
import sys
from fusion_switch.compare import forked
from fusion_switch.diagnose import on_view, replay_background
forked.GRAPH_FORK_BYTES = 0
def broken(graph):
    raise RuntimeError("the view failed")
replay_background.on_view = broken
from fusion_switch.cli import main
sys.argv = ["fusion-switch", *sys.argv[1:]]
main()  # as the program: exits through the interpreter's exit handlers
"""


def test_a_replay_request_that_fails_to_build_does_not_keep_compare_from_exiting(
    device_case, tmp_path
):
    """The kept helper is not daemonic (it may fork the replay's workers): a helper nobody
    closes would be joined at exit for ever. An error while the request is built must end it."""
    case = device_case
    args = [
        *("compare", "-m", str(case.on_dump), "-g", str(case.off_dump)),
        *("-f", str(case.on_graph), "-cf", str(case.off_graph), "-out", str(tmp_path / "o")),
        *("--no-progress", "--workers", "2"),
    ]
    try:
        done = subprocess.run(
            [sys.executable, "-c", FAILING_START, *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("compare did not exit: the kept helper was left running")
    assert "the view failed" in done.stderr


class _Host:
    """A kept helper that takes nothing: records whether it was closed."""

    kept, busy, companion = True, True, None

    def __init__(self) -> None:
        self.closed = False

    def follow(self, request) -> bool:
        raise AssertionError("not reached")

    def close(self) -> None:
        self.closed = True


def test_a_request_that_cannot_be_built_ends_the_helper(monkeypatch):
    from fusion_switch.diagnose import replay_background

    def broken(source, *rest):
        raise KeyboardInterrupt  # e.g. Ctrl-C while the view is built

    monkeypatch.setattr(replay_background, "_request", broken)
    host = _Host()
    replay = replay_background.BackgroundReplay(object(), None, workers=2, host=host)
    with pytest.raises(KeyboardInterrupt):
        replay.start()
    assert host.closed


def test_start_replay_ends_the_helper_it_was_given_when_it_fails(monkeypatch):
    """From the hand-over on, the helper is start_replay's: whatever fails before the
    BackgroundReplay holds it (here the rule table) must not leave it running."""
    from fusion_switch.diagnose import summary

    def broken(*args, **kwargs):
        raise RuntimeError("no rule table")

    monkeypatch.setattr(summary, "rule_table", broken)
    host = _Host()
    with pytest.raises(RuntimeError, match="no rule table"):
        summary.start_replay(object(), {}, None, 2, host)
    assert host.closed
