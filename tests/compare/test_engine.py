"""The comparison job on small hand-made cases: rows, bad inputs, sides, progress, cancel."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
from fusion_switch.compare.dump import TensorSpec, write_dump
from fusion_switch.compare.engine import (
    CompareCancelled,
    CompareInputError,
    CompareRequest,
    plan_chunks,
    run_compare,
)
from fusion_switch.compare.generator import generate_case
from fusion_switch.compare.result_csv import read_result_csv
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
    with pytest.raises(CompareInputError, match="names no supported algorithm"):
        run_compare(request)


def test_plan_chunks_keeps_order_and_balances_bytes():
    costs = [5 << 20, 1 << 20, 1 << 20, 1 << 20, 8 << 20, 1]
    chunks = plan_chunks(costs, workers=1)
    assert [p for chunk in chunks for p in chunk] == list(range(len(costs)))
    assert chunks[0] == [0]


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
    assert len(calls) > 2  # several chunks were reported
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)
    assert calls[-1][0] == calls[-1][1]


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
