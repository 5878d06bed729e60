"""The comparison job on small hand-made cases: rows, bad inputs, sides, progress, cancel."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
from fusion_switch.compare.engine import (
    CompareCancelled,
    CompareInputError,
    CompareRequest,
    plan_chunks,
    run_compare,
    unmatched_dumps_note,
)
from fusion_switch.compare.result_csv import ResultCsvWriter, read_result_csv
from fusion_switch.readers.dump_write import TensorSpec, write_dump
from fusion_switch.readers.dumpdir import DumpDir
from fusion_switch.synth.generator import generate_case
from handmade_graphs import desc, graph_json, op

RNG = np.random.default_rng(0)
X = RNG.standard_normal((1, 4, 2, 2)).astype(np.float32)
CONV = (X * 2).astype(np.float32)
RELU = np.maximum(CONV, 0)
STAMP = 1700000000000000


def make_case(tmp_path: Path, *, relu_on=None, skip=()) -> CompareRequest:
    """data -> conv -> relu -> out (off) against data -> convrelu -> out (on)."""
    off = graph_json(
        "off",
        op("data", "Data", 0),
        op("conv", "Conv2D", 1, ("data:0",)),
        op("relu", "Relu", 2, ("conv:0",)),
        op("out", "NetOutput", 3, ("relu:0",)),
    )
    on = graph_json(
        "on",
        op("data", "Data", 0),
        op(
            "convrelu",
            "Conv2D",
            1,
            ("data:0",),
            originals=["conv", "relu"],
            outputs=[desc("relu", 0)],
            passes=("TbeConvRelu",),
        ),
        op("out", "NetOutput", 2, ("convrelu:0",)),
    )
    paths = {}
    for side, model in (("on", on), ("off", off)):
        paths[side] = tmp_path / f"{side}.json"
        paths[side].write_text(json.dumps(model))
        (tmp_path / side).mkdir()
    files = {
        ("off", "Conv2D.conv"): ([X], [CONV]),
        ("off", "Relu.relu"): ([CONV], [RELU]),
        ("on", "Conv2D.convrelu"): ([X], [RELU if relu_on is None else relu_on]),
    }
    for (side, name), (inputs, outputs) in files.items():
        if name in skip:
            continue
        op_name = name.split(".")[1]
        write_dump(
            tmp_path / side / f"{name}.1.1.{STAMP}",
            op_name,
            [TensorSpec(a) for a in inputs],
            [TensorSpec(a) for a in outputs],
        )
    return CompareRequest(
        tmp_path / "on", tmp_path / "off", paths["on"], paths["off"], tmp_path / "out", workers=1
    )


def rows_by_tensor(outcome):
    return {(row.tensor_index or row.op_name): row for row in outcome.rows}


def test_small_case_rows(tmp_path):
    outcome = run_compare(make_case(tmp_path))
    rows = rows_by_tensor(outcome)
    assert list(rows) == ["data", "convrelu:input:0", "convrelu:output:0", "out"]
    data = rows["data"]
    assert data.fail_reason == [
        '[data] There is no dump file for my output operator "data". The type is Data.'
    ]
    assert rows["convrelu:input:0"].fail_reason == [
        "[convrelu] There is no the ground truth dump file for convrelu:input:0."
    ]
    output = rows["convrelu:output:0"]
    assert (output.npu_dump, output.ground_truth) == ("convrelu", "conv,relu")
    assert (output.right_op, output.right_output_index) == ("relu", 0)
    assert output.metrics["CosineSimilarity"] == pytest.approx(1.0)
    assert output.metrics["MaxAbsoluteError"] == 0.0
    assert output.shape == (16,) and output.left_dtype == "float32"  # ND: compared flat
    assert outcome.counts.compared == 1 and outcome.counts.no_left_dump == 2
    head, csv_rows = read_result_csv(outcome.csv_path)
    assert head[-1] == "CompareFailReason" and len(csv_rows) == 4
    assert [p.name for p in outcome.csv_path.parent.iterdir()] == [outcome.csv_path.name]


def test_a_fault_shows_in_the_metrics(tmp_path):
    outcome = run_compare(make_case(tmp_path, relu_on=RELU * 8))
    output = rows_by_tensor(outcome)["convrelu:output:0"]
    assert output.metrics["CosineSimilarity"] == pytest.approx(1.0)  # scale: direction kept
    assert output.metrics["RelativeEuclideanDistance"] == pytest.approx(7.0, rel=1e-6)


def test_swapped_dump_folders_are_detected(tmp_path):
    request = make_case(tmp_path)
    request.on_dump, request.off_dump = request.off_dump, request.on_dump
    outcome = run_compare(request)
    assert outcome.swapped_dumps
    assert any("other way round" in note for note in outcome.notes)
    assert rows_by_tensor(outcome)["convrelu:output:0"].metrics["MaxAbsoluteError"] == 0.0


def _stranger_graph(tmp_path: Path) -> Path:
    """The graph of another network: none of its op names is dumped in make_case's folders."""
    path = tmp_path / "stranger.json"
    model = graph_json(
        "stranger",
        op("input_1", "Data", 0),
        op("fc_1", "MatMul", 1, ("input_1:0",)),
        op("output_1", "NetOutput", 2, ("fc_1:0",)),
    )
    path.write_text(json.dumps(model))
    return path


def _mismatch_notes(outcome) -> list[str]:
    return [n for n in outcome.notes if "is named after an op of" in n or n.startswith("Only ")]


@pytest.mark.parametrize(
    ("stranger_for", "swap_dumps", "expected"),
    [
        ("on_graph", False, [("on", "-m", "fusion-on", "stranger", "-f")]),
        ("off_graph", False, [("off", "-g", "fusion-off", "stranger", "-cf")]),
        (
            "both",
            False,
            [
                ("on", "-m", "fusion-on", "stranger", "-f"),
                ("off", "-g", "fusion-off", "stranger", "-cf"),
            ],
        ),
        # -m and -g swapped: the folders are put right, the note names the flags as given
        ("off_graph", True, [("off", "-m", "fusion-off", "stranger", "-cf")]),
        (None, False, []),
        (None, True, []),
    ],
)
def test_a_graph_that_does_not_match_its_dumps_gets_a_note_per_side(
    tmp_path, stranger_for, swap_dumps, expected
):
    request = make_case(tmp_path)
    stranger = _stranger_graph(tmp_path)
    for attr in ("on_graph", "off_graph"):
        if stranger_for in (attr, "both"):
            setattr(request, attr, stranger)
    if swap_dumps:
        request.on_dump, request.off_dump = request.off_dump, request.on_dump
    notes = _mismatch_notes(run_compare(request))
    assert len(notes) == len(expected), notes
    for note, (folder, dump_flag, role, graph, graph_flag) in zip(notes, expected, strict=True):
        assert note == (
            f"No dump file in {tmp_path / folder} ({dump_flag}) is named after an op of the "
            f"{role} graph {tmp_path / graph}.json ({graph_flag}): check that {graph_flag} is "
            f"the graph of the run dumped in {dump_flag} (same network, same build)."
        )


def test_swapped_graphs_keep_their_flags_in_the_note(tmp_path):
    request = make_case(tmp_path)
    # -f has no fused op and -cf has: the graphs are swapped back; -f (now fusion-off) is a
    # stranger to the fusion-off dumps.
    request.on_graph, request.off_graph = _stranger_graph(tmp_path), request.on_graph
    outcome = run_compare(request)
    assert any("graphs were given the other way round" in n for n in outcome.notes)
    (note,) = _mismatch_notes(outcome)
    assert note.startswith(f"No dump file in {tmp_path / 'off'} (-g) is named after an op of")
    assert f"fusion-off graph {tmp_path / 'stranger.json'} (-f): check that -f is" in note


def test_the_fusion_on_graph_is_read_without_input_descs(generated, tmp_path):
    """Nothing of the comparison reads a fusion-on op's input descs (issue 16); the fusion-off
    graph keeps them (the replay's original ops take their layout)."""
    outcome = run_compare(request_for(generated, tmp_path / "out", 1))
    assert not outcome.on_graph.input_descs_read
    assert all(not op.input_descs for op in outcome.on_graph.ops)
    assert outcome.off_graph.input_descs_read
    assert any(op.input_descs for op in outcome.off_graph.ops)


def test_swapped_graphs_give_the_fusion_off_side_its_input_descs(generated, tmp_path):
    """-f and -cf given the other way round: the graph read as the fusion-on one (without
    input descs) turns out to be the fusion-off one, which the replay reads whole."""
    request = request_for(generated, tmp_path / "out", 1)
    request.on_graph, request.off_graph = request.off_graph, request.on_graph
    outcome = run_compare(request)
    assert any("graphs were given the other way round" in n for n in outcome.notes)
    assert Path(outcome.off_graph.path) == Path(generated.off_graph)
    assert outcome.off_graph.input_descs_read
    assert any(op.input_descs for op in outcome.off_graph.ops)


def test_swapped_graphs_read_whole_are_not_read_again(generated, tmp_path, monkeypatch):
    """A graph given as fusion-on that was read with its input descs (here a text graph, which
    the typed JSON reading never takes) is the fusion-off graph as it is: no second reading."""
    from fusion_switch.readers import graph as graph_module
    from fusion_switch.readers.graph_text import write_graph_text

    text = tmp_path / "off.txt"
    text.write_text(write_graph_text(json.loads(Path(generated.off_graph).read_text())))
    reads: list[str] = []
    real = graph_module.read_graph

    def counting(path, *args, **kwargs):
        reads.append(Path(path).name)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(graph_module, "read_graph", counting)
    request = request_for(generated, tmp_path / "out", 1)
    request.on_graph, request.off_graph = text, request.on_graph
    outcome = run_compare(request)
    assert any("graphs were given the other way round" in n for n in outcome.notes)
    assert outcome.off_graph.input_descs_read
    assert any(op.input_descs for op in outcome.off_graph.ops)
    assert reads.count("off.txt") == 1, reads


def _dump_dir(*op_names: str) -> DumpDir:
    return DumpDir(Path("dumps"), Path("dumps"), _files={name: [] for name in op_names})


GRAPH_OPS = {f"op{i}" for i in range(30)}


@pytest.mark.parametrize(
    ("dumped", "note"),
    [
        ((), None),  # nothing dumped: the dump folder scan reports that
        (("op1", "op2"), None),  # a partial dump: all dumped ops are in the graph
        ((*(f"x{i}" for i in range(60)), *(f"op{i}" for i in range(30))), None),  # 2 models
        (("Node_Output", "op1", *(f"x{i}" for i in range(40))), "Only 1 of the 42 ops dumped"),
        (("op1", "op2", *(f"x{i}" for i in range(40))), "Only 2 of the 42 ops dumped"),
        (("x1",), "No dump file in dumps (-m) is named after an op of the g.json (-f): check"),
    ],
)
def test_unmatched_dumps_note_thresholds(dumped, note):
    found = unmatched_dumps_note(_dump_dir(*dumped), GRAPH_OPS, "g.json", "-m", "-f")
    if note is None:
        assert found is None
    else:
        assert found is not None and found.startswith(note), found
        assert found.endswith(
            "check that -f is the graph of the run dumped in -m (same network, same build)."
        )


def test_missing_fusion_off_dump_gives_a_reason_and_the_rest_goes_on(tmp_path):
    outcome = run_compare(make_case(tmp_path, skip=("Relu.relu",)))
    output = rows_by_tensor(outcome)["convrelu:output:0"]
    assert output.fail_reason == [
        "[convrelu] There is no the ground truth dump file for convrelu:output:0."
    ]
    assert output.metrics["CosineSimilarity"] is None
    assert outcome.counts.no_right_dump == 2


def test_truncated_fusion_on_dump_is_reported_with_its_file(tmp_path):
    request = make_case(tmp_path)
    (path,) = Path(request.on_dump).iterdir()
    path.write_bytes(path.read_bytes()[:-10])
    outcome = run_compare(request)
    row = rows_by_tensor(outcome)["convrelu"]
    assert row.tensor_index is None
    assert str(path) in row.fail_reason[0]
    assert len(outcome.errors) == 1 and str(path) in outcome.errors[0]
    assert len(outcome.rows) == 3  # data, convrelu (op-level), out


def test_unsupported_dtype_gives_a_row_with_the_reason(tmp_path):
    request = make_case(tmp_path)
    (path,) = Path(request.on_dump).iterdir()
    write_dump(
        path, "convrelu", [TensorSpec(X)], [TensorSpec(b"\x00" * 16, data_type=13, shape=(4,))]
    )
    output = rows_by_tensor(run_compare(request))["convrelu:output:0"]
    assert output.metrics["CosineSimilarity"] is None
    assert "DT_STRING" in output.fail_reason[0] and str(path) in output.fail_reason[0]


def test_npy_fusion_off_dumps_pair_by_output_file(tmp_path):
    request = make_case(tmp_path)
    for path in Path(request.off_dump).iterdir():
        path.unlink()
    np.save(Path(request.off_dump) / f"relu.0.{STAMP}.npy", RELU)
    outcome = run_compare(request)
    output = rows_by_tensor(outcome)["convrelu:output:0"]
    assert output.metrics["MaxAbsoluteError"] == 0.0
    head, _ = read_result_csv(outcome.csv_path)
    assert head[:8] == [
        "Index",
        "OpType",
        "NPUDump",
        "DataType",
        "Address",
        "GroundTruth",
        "DataType",
        "TensorIndex",
    ]  # no Address for the .npy side


def test_unreadable_graph_is_an_input_error(tmp_path):
    request = make_case(tmp_path)
    Path(request.off_graph).write_text("{ not json")
    with pytest.raises(CompareInputError, match=r"fusion-off graph: .*off\.json"):
        run_compare(request)


def test_algorithm_selection_sets_the_columns(tmp_path):
    request = make_case(tmp_path)
    request.algorithms = "3,0"
    outcome = run_compare(request)
    head, _ = read_result_csv(outcome.csv_path)
    assert head[10:12] == ["RelativeEuclideanDistance", "CosineSimilarity"]
    assert outcome.algorithms == ["RelativeEuclideanDistance", "CosineSimilarity"]


def test_bad_algorithm_selection_is_an_input_error(tmp_path):
    request = make_case(tmp_path)
    request.algorithms = "Nope"
    with pytest.raises(CompareInputError, match=r"^-alg Nope: unknown algorithm\. Valid: 0\.\.9"):
        run_compare(request)


def test_plan_chunks_keeps_order_and_balances_bytes():
    costs = [5 << 20, 1 << 20, 1 << 20, 1 << 20, 8 << 20, 1]
    chunks = plan_chunks(costs, workers=1)
    assert [p for chunk in chunks for p in chunk] == list(range(len(costs)))
    assert chunks[0] == [0]


def test_plan_chunks_get_smaller_towards_the_end():
    """The processes finish together: no big chunk is left for one while the others idle."""
    costs = [1 << 20] * 400  # 400 MB, as at 5,000 ops
    chunks = plan_chunks(costs, workers=2)
    assert [p for chunk in chunks for p in chunk] == list(range(len(costs)))
    sizes = [len(chunk) for chunk in chunks]
    assert sizes[0] == max(sizes) == 17  # 400 MB / (2 workers x 12 chunks), rounded up
    assert sizes[-2:] == [1, 1]  # never below a megabyte
    left = len(costs)
    for size in sizes:  # each chunk is at most half of what is left per process
        assert size == 1 or size * 4 <= left + 3
        left -= size


# ----------------------------------------------------------------------------- pool, cancel


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    return generate_case(tmp_path_factory.mktemp("case"), n_ops=60, seed=11, graph_text=False)


def request_for(case, out: Path, workers: int) -> CompareRequest:
    return CompareRequest(
        case.on_dump, case.off_dump, case.on_graph, case.off_graph, out, workers=workers
    )


def test_process_pool_gives_the_same_rows_as_one_process(generated, tmp_path):
    calls: list[tuple[int, int]] = []
    pooled = run_compare(
        request_for(generated, tmp_path / "pool", 2),
        progress=lambda done, total, _: calls.append((done, total)),
    )
    single = run_compare(request_for(generated, tmp_path / "one", 1))
    assert read_result_csv(pooled.csv_path) == read_result_csv(single.csv_path)
    assert pooled.csv_path.read_bytes() == single.csv_path.read_bytes()
    assert len(calls) > 2  # several chunks were reported
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)
    assert calls[-1][0] == calls[-1][1]


def test_pool_workers_send_their_chunks_rendered(generated, tmp_path, monkeypatch):
    """A pool worker renders its chunks' CSV lines, so that the comparing process only copies
    them (issue 16); the file is the same bytes as one process writes."""
    copied: list[bool] = []
    write = ResultCsvWriter.write

    def spy(self, rows, rendered=None):
        copied.append(rendered is not None and rendered.layout == self.layout)
        return write(self, rows, rendered)

    monkeypatch.setattr(ResultCsvWriter, "write", spy)
    request = request_for(generated, tmp_path / "pool", 2)
    request.algorithms = "0,1,4"  # fewer columns than the default: the layout follows the job
    pooled = run_compare(request)
    assert any(copied), "no chunk came rendered from the pool's worker"
    single = request_for(generated, tmp_path / "one", 1)
    single.algorithms = "0,1,4"
    assert run_compare(single).csv_path.read_bytes() == pooled.csv_path.read_bytes()


def test_swapped_parent_folders_with_several_models(generated, tmp_path):
    # Dump roots given the other way round, each holding a second (decoy) model folder: the
    # model folder is found by the graph name of the side the folder turns out to belong to.
    roots = {}
    for side in ("on", "off"):
        leaf = Path(getattr(generated, f"{side}_dump"))
        model = leaf.parents[1]  # .../{time}/{device}/{model}/{model_id}/{iteration}
        root = tmp_path / side
        shutil.copytree(model.parent, root / "0")
        decoy = root / "0" / "ge_decoy" / "1" / "0"
        decoy.mkdir(parents=True)
        shutil.copy(next(leaf.iterdir()), decoy)
        roots[side] = root
    request = CompareRequest(
        roots["off"],
        roots["on"],
        generated.on_graph,
        generated.off_graph,
        tmp_path / "out",
        workers=1,
    )
    outcome = run_compare(request)
    assert outcome.swapped_dumps
    assert outcome.on_dump_dir.name == Path(generated.on_dump).name
    assert "ge_decoy" not in str(outcome.on_dump_dir) + str(outcome.off_dump_dir)
    assert outcome.counts.compared > 50


@pytest.mark.parametrize("workers", [1, 2])
def test_cancel_stops_and_leaves_no_csv(generated, tmp_path, workers):
    cancel = threading.Event()

    def progress(done, total, _message):
        cancel.set()  # cancel as soon as the job starts reporting

    with pytest.raises(CompareCancelled):
        run_compare(request_for(generated, tmp_path, workers), progress=progress, cancel=cancel)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("workers", [1, 2])
def test_a_cancel_during_the_last_report_leaves_no_csv(generated, tmp_path, workers):
    """Ctrl-C while the last chunk is being reported (every result is in): the job is still
    cancelled, not committed (a CSV without its summary was left behind under load)."""
    cancel = threading.Event()

    def progress(done, total, _message):
        if total and done == total:
            cancel.set()

    with pytest.raises(CompareCancelled):
        run_compare(request_for(generated, tmp_path, workers), progress=progress, cancel=cancel)
    assert list(tmp_path.iterdir()) == []


def test_the_first_progress_report_comes_before_the_graphs_are_read(tmp_path):
    """Issue 16: first progress at once on any case size: before the (slow) graph reading."""
    request = make_case(tmp_path)
    calls = []

    def progress(done, total, message):
        if not calls:  # nothing was read yet: no CSV, and the op count is unknown
            assert not list(Path(request.out_dir).glob("result_*.csv"))
        calls.append((done, total, message))

    run_compare(request, progress=progress)
    assert calls[0] == (0, 0, "reading the graphs and the dump folders")
    assert calls[1][0] == 0 and calls[1][1] > 0
    assert calls[-1][0] == calls[-1][1]


def test_a_memory_budget_caps_the_workers(generated, tmp_path):
    from fusion_switch.compare.engine import discover, pair

    unlimited = pair(discover(request_for(generated, tmp_path / "a", 2)))
    assert unlimited.workers == 2
    tight = request_for(generated, tmp_path / "b", 2)
    tight.memory_budget = 150 << 20
    assert pair(discover(tight)).workers == 1
    roomy = request_for(generated, tmp_path / "c", 2)
    roomy.memory_budget = 8 << 30
    assert pair(discover(roomy)).workers == 2


def test_memory_held_beside_the_comparison_is_taken_from_its_budget(
    generated, tmp_path, monkeypatch
):
    """What ``discovered`` returns (the bytes the replay beside the comparison holds) is not
    the workers' to use: the budget that fits two workers fits one once it is taken."""
    from fusion_switch.compare import engine

    planned = []
    real_pair = engine.pair
    monkeypatch.setattr(engine, "pair", lambda *a: planned.append(real_pair(*a)) or planned[-1])
    request = request_for(generated, tmp_path / "out", 2)
    request.memory_budget = 8 << 30
    for reserved in (None, 0, (8 << 30) - (1 << 20)):
        run_compare(request, discovered=lambda inputs, held=reserved: held)
    assert [plan.workers for plan in planned] == [2, 2, 1]


def test_stages_run_alone_and_compose_into_run_compare(generated, tmp_path):
    """Issue 10: each stage is a function over plain dataclasses; run one at a time they
    give what run_compare gives."""
    from fusion_switch.compare.engine import discover, measure, pair, write
    from fusion_switch.compare.result_csv import read_result_csv

    inputs = discover(request_for(generated, tmp_path / "staged", 1))
    assert inputs.on_dir.path.name == "0" and inputs.algorithms
    plan = pair(inputs)
    assert sum(len(chunk) for chunk in plan.chunks) == len(plan.groups)
    results = list(measure(plan))
    assert [r.chunk for r in results] == list(range(len(plan.chunks)))
    staged = write(plan, results)
    whole = run_compare(request_for(generated, tmp_path / "whole", 1))
    assert read_result_csv(staged.csv_path) == read_result_csv(whole.csv_path)
    assert staged.counts == whole.counts and staged.notes == whole.notes


def test_a_tensor_that_breaks_the_engine_loses_only_its_own_row(generated, tmp_path, monkeypatch):
    """Issue 12: one bad file may remove only its own tensor. An unexpected failure while
    comparing one tensor pair (planted here in the load step, which both the direct and the
    general measure path run) used to turn its whole group into a single "internal error" row,
    dropping the rows of every other tensor and op of it."""
    import fusion_switch.compare.workers as workers

    clean = run_compare(request_for(generated, tmp_path / "clean", 1))
    by_op: dict[str, list] = {}
    for row in clean.rows:
        by_op.setdefault(row.op_name, []).append(row)
    op_rows = next(rows for rows in by_op.values() if sum(r.compared for r in rows) >= 2)
    name = op_rows[0].op_name
    real_load = workers.GroupComparer.load_pair
    calls = []

    def planted(self, row, op, *args, **kwargs):
        if op.name == name:
            calls.append(op.name)
            if len(calls) == 1:  # the op's first compared tensor
                raise RuntimeError("planted")
        return real_load(self, row, op, *args, **kwargs)

    monkeypatch.setattr(workers.GroupComparer, "load_pair", planted)
    broken = run_compare(request_for(generated, tmp_path / "broken", 1))
    after = {r.tensor_index: r for r in broken.rows}
    assert set(after) == {r.tensor_index for r in clean.rows}  # every row is still there
    hit = [r for r in broken.rows if "planted" in r.fail_reason_text]
    assert len(hit) == 1 and hit[0].op_name == name
    assert any("planted" in error for error in broken.errors)
    kept = [r for r in op_rows if r.tensor_index != hit[0].tensor_index]
    assert kept and all(after[r.tensor_index].metric_text == r.metric_text for r in kept)


def test_the_comparison_lets_its_work_buffers_go_when_it_returns(tmp_path):
    """The metrics' scratch buffers grow to the largest tensor (three float32 arrays of its
    size: 77 MB for a 224x224x128 activation) and were kept while the process went on to the
    replay's share and the outputs (issue 16: the comparing process's peak on real-sized
    dumps). They are let go once the comparison returns."""
    from fusion_switch.compare.metrics import SCRATCH

    run_compare(make_case(tmp_path))
    assert SCRATCH.held_bytes() == 0


def test_a_forked_worker_inherits_the_kernel_probe_and_the_group_order(
    generated, tmp_path, monkeypatch
):
    """The kernel's first-use probe and the groups' sort run once, before the pool forks: a
    worker that ran them again spent ~20 ms before its first chunk (issue 16)."""
    from fusion_switch.compare import pairing, workers
    from fusion_switch.compare.metrics import native

    calls = tmp_path / "calls"

    def recorded(what, function):
        def call(*args, **kwargs):
            with open(calls, "a") as out:
                out.write(f"{what} {os.getpid()}\n")
            return function(*args, **kwargs)

        return call

    monkeypatch.setattr(native, "_KERNEL_STATE", [])
    monkeypatch.setattr(
        native,
        "_kernel_agrees_with_numpy",
        recorded("probe", native._kernel_agrees_with_numpy),
    )
    monkeypatch.setattr(
        pairing.MergedRule, "ordered_groups", recorded("sort", pairing.MergedRule.ordered_groups)
    )
    monkeypatch.setattr(
        workers.GroupComparer,
        "compare_groups",
        recorded("chunk", workers.GroupComparer.compare_groups),
    )
    pooled = run_compare(request_for(generated, tmp_path / "pool", 2))
    single = run_compare(request_for(generated, tmp_path / "one", 1))
    assert read_result_csv(pooled.csv_path) == read_result_csv(single.csv_path)
    assert pooled.csv_path.read_bytes() == single.csv_path.read_bytes()
    seen: dict[str, set[int]] = {}
    for line in calls.read_text().splitlines():
        what, pid = line.split()
        seen.setdefault(what, set()).add(int(pid))
    assert len(seen["chunk"]) == 2, seen  # this process and the pool's worker compared chunks
    assert seen["probe"] == {os.getpid()}
    assert seen["sort"] == {os.getpid()}


def test_counts_classify_every_row_as_its_definition_says():
    """_count (inlined for speed) against the plain reading of each row's kind."""
    from fusion_switch.compare.engine import _count
    from fusion_switch.compare.result import ResultRow

    rng = np.random.default_rng(7)
    reasons = (
        [],
        ["[op] There is no the ground truth dump file for op:output:0."],
        ["bad shape"],
        ["bad shape", "There is no the ground truth dump file"],
    )
    values = (None, float("nan"), 0.5, 1.0)
    rows = []
    for i in range(400):
        names = ("CosineSimilarity", "MaxAbsoluteError")[: int(rng.integers(0, 3))]
        rows.append(
            ResultRow(
                index=i,
                op_type=("T", "Const", "Data", "Reshape", "NoOp")[int(rng.integers(0, 5))],
                npu_dump="x",
                ground_truth="y",
                op_name=f"op{int(rng.integers(0, 50))}",
                tensor_index=None if rng.random() < 0.2 else f"op:output:{i}",
                metrics={n: values[int(rng.integers(0, 4))] for n in names},
                fail_reason=list(reasons[int(rng.integers(0, 4))]),
            )
        )
    counts = _count(rows, [[1], [2], [3]], ["e1", "e2"])
    no_left = [r for r in rows if r.tensor_index is None]
    compared = [r for r in rows if r.compared]
    rest = [r for r in rows if r.tensor_index is not None and not r.compared]
    no_right = [r for r in rest if any("no the ground truth" in x for x in r.fail_reason)]
    assert counts.as_dict() == {
        "groups": 3,
        "ops": len({r.op_name for r in rows}),
        "rows": 400,
        "compared": len(compared),
        "no_left_dump": len(no_left),
        "undumped_tasks": len([r for r in no_left if r.op_type == "T"]),  # none of the others
        "no_right_dump": len(no_right),
        "failed": len(rest) - len(no_right),
        "bad_files": 2,
        "dumped_ops": 0,  # set from the graph and the dump folder (engine._graph_coverage)
        "unnamed_dumps": 0,
    }
    assert min(len(no_left), len(compared), len(no_right), len(rest) - len(no_right)) > 10


@pytest.mark.parametrize("step", ["write", "commit"])
def test_a_full_disk_while_writing_the_csv_says_what_to_do(tmp_path, monkeypatch, step):
    """A review: a full disk came out as "internal error: OSError: [Errno 28] ..." with no
    folder named and no advice. Nothing is left behind either way."""
    import errno

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ResultCsvWriter, step, full)
    request = make_case(tmp_path)
    with pytest.raises(CompareInputError) as caught:
        run_compare(request)
    assert str(caught.value).endswith(
        f"into {tmp_path / 'out'}: No space left on device (free space there, or give another -out)"
    ), caught.value
    assert str(caught.value).startswith("cannot write result_")
    assert list((tmp_path / "out").iterdir()) == []
