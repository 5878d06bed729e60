"""Our result CSV against the real msaccucmp's on generated cases (formats.md 7).

Every row must match: same rows in the same order, same pairing (TensorIndex, GroundTruth),
same texts, metrics within 1e-6 relative (or both NaN). If msaccucmp cannot run, these tests
fail with the reason (they are the proof, so they never skip).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
from fusion_switch.compare.engine import CompareRequest, run_compare
from fusion_switch.compare.metrics import ALGORITHMS
from fusion_switch.compare.result_csv import read_result_csv
from fusion_switch.readers.dump_write import TensorSpec, write_dump
from fusion_switch.synth.generator import generate_case
from handmade_graphs import desc, graph_json, op
from oracle import run_msaccucmp

pytestmark = pytest.mark.oracle

METRIC_COLUMNS = set(ALGORITHMS) - {"StandardDeviation"}


def _close(ours: str, theirs: str) -> float | None:
    """Relative difference of two metric cells (0 when equal), None when incomparable."""
    if ours == theirs:
        return 0.0
    try:
        a, b = float(ours), float(theirs)
    except ValueError:
        return None
    if math.isnan(a) and math.isnan(b):
        return 0.0
    if math.isnan(a) or math.isnan(b):
        return None
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


def assert_same_rows(ours: Path, theirs: Path) -> dict[str, float]:
    our_head, our_rows = read_result_csv(ours)
    their_head, their_rows = read_result_csv(theirs)
    assert our_head == their_head
    assert [r[:10] for r in our_rows] == [r[:10] for r in their_rows]  # rows, pairing, shapes
    worst = 0.0
    for ours_row, theirs_row in zip(our_rows, their_rows, strict=True):
        for column, a, b in zip(our_head, ours_row, theirs_row, strict=True):
            if column in METRIC_COLUMNS:
                diff = _close(a, b)
                assert diff is not None and diff <= 1e-6, (ours_row[8], column, a, b)
                worst = max(worst, diff)
            else:
                assert a == b, (ours_row[8], column, a, b)
    return {
        "rows": len(our_rows),
        "max_relative_difference": worst,
        "byte_identical": ours.read_bytes() == theirs.read_bytes(),
    }


def compare_both(
    case,
    out: Path,
    *,
    swap: bool = False,
    extra: tuple[str, ...] = (),
    algorithms: str | None = None,
) -> dict[str, float]:
    theirs = run_msaccucmp(
        case.on_dump,
        case.off_dump,
        case.on_graph,
        case.off_graph,
        out / "msaccucmp",
        extra_args=extra,
    )
    on_dump, off_dump = (case.off_dump, case.on_dump) if swap else (case.on_dump, case.off_dump)
    outcome = run_compare(
        CompareRequest(
            on_dump,
            off_dump,
            case.on_graph,
            case.off_graph,
            out / "ours",
            algorithms=algorithms,
            workers=2,
        )
    )
    assert outcome.swapped_dumps == swap
    return assert_same_rows(outcome.csv_path, theirs)


def test_device_formats_with_faults(tmp_path):
    case = generate_case(
        tmp_path / "case",
        n_ops=60,
        seed=21,
        graph_text=False,
        faults=["wrong_epsilon@0", "dropped_scale@1"],
    )
    found = compare_both(case, tmp_path)
    _, rows = read_result_csv(next((tmp_path / "ours").glob("result_*.csv")))
    shapes = {row[9] for row in rows if row[3] != "NaN"}
    assert found["rows"] > 100 and found["byte_identical"]
    assert any(row[8].endswith(":output:1") for row in rows)  # a multi-output op is compared
    assert len(shapes) > 3


def test_host_formats_and_swapped_dump_folders(tmp_path):
    case = generate_case(
        tmp_path / "case",
        n_ops=60,
        seed=22,
        graph_text=False,
        formats="host",
        faults=["dropped_bias@0", "wrong_perm@1"],
    )
    assert compare_both(case, tmp_path, swap=True)["rows"] > 100


def test_missing_dump_files_and_algorithm_selection(tmp_path):
    case = generate_case(
        tmp_path / "case", n_ops=60, seed=23, graph_text=False, faults=["fp16_saturation@0"]
    )
    on_files = sorted(Path(case.on_dump).iterdir())
    off_files = sorted(Path(case.off_dump).iterdir())
    removed = [
        next(f for f in on_files if f.name.startswith("Add.")),
        next(f for f in off_files if f.name.startswith("Relu.")),
    ]
    for path in removed:
        os.unlink(path)
    found = compare_both(case, tmp_path, extra=("-alg", "0,3,5,9"), algorithms="0,3,5,9")
    _, rows = read_result_csv(next((tmp_path / "ours").glob("result_*.csv")))
    on_op, off_op = (path.name.split(".")[1] for path in removed)
    assert any(
        row[2] == on_op and "There is no dump file for my output operator" in row[-1]
        for row in rows
    )
    assert any(
        off_op in row[5].split(",") and "There is no the ground truth dump file" in row[-1]
        for row in rows
    )
    assert found["rows"] > 100


def test_an_empty_fusion_off_dump_file_is_worded_as_msaccucmp_words_it(tmp_path):
    """Defect (a differential fuzz against msaccucmp): a fusion-off dump file of 0 bytes gave
    its rows our reason ("file is 0 bytes; a dump needs...") where msaccucmp writes its own
    ("Failed to parse dump file '...'. The file size is zero. ..."): the CSV differed."""
    case = generate_case(tmp_path / "case", n_ops=20, seed=1, graph_text=False)
    emptied = next(f for f in sorted(Path(case.off_dump).iterdir()) if f.name.startswith("Relu."))
    emptied.write_bytes(b"")
    found = compare_both(case, tmp_path)
    _, rows = read_result_csv(next((tmp_path / "ours").glob("result_*.csv")))
    worded = [row for row in rows if "The file size is zero" in row[-1]]
    assert worded and all(repr(str(emptied)) in row[-1] for row in worded)
    assert found["byte_identical"]


def test_graph_text_files_pair_like_atc_json(tmp_path):
    case = generate_case(tmp_path / "case", n_ops=40, seed=24, faults=["dropped_bias@0"])
    theirs = run_msaccucmp(
        case.on_dump, case.off_dump, case.on_graph, case.off_graph, tmp_path / "msaccucmp"
    )
    outcome = run_compare(
        CompareRequest(
            case.on_dump,
            case.off_dump,
            case.on_graph_txt,
            case.off_graph_txt,
            tmp_path / "ours",
            workers=1,
        )
    )
    assert assert_same_rows(outcome.csv_path, theirs)["rows"] > 50


# ----------------------------------------------------------------------------- hand-made case

RNG = np.random.default_rng(5)
STAMP = 1700000000000000


def _nz(host: np.ndarray) -> np.ndarray:
    rows, cols = host.shape
    r1, c1 = -(-rows // 16), -(-cols // 16)
    padded = np.zeros((r1 * 16, c1 * 16), host.dtype)
    padded[:rows, :cols] = host
    return padded.reshape(r1, 16, c1, 16).transpose(2, 0, 1, 3).copy()


def _handmade(root: Path) -> tuple[Path, Path, Path, Path]:
    """Paths msaccucmp rarely meets in generated cases: an L1 fusion group (two ops, one kept),
    a two-output op, an op paired with a fusion-off output that does not exist, a FRACTAL_NZ
    output with padding, a TransData standing for nothing, and a float16 Cast."""
    x = RNG.standard_normal((20, 24)).astype(np.float32)
    conv = x * 2
    relu = np.maximum(conv, 0)
    top, bottom = relu[:10], relu[10:]
    mm = (top @ bottom.T).astype(np.float16)
    half = relu.astype(np.float16)
    shape = {"shape": (20, 24), "layout": "ND"}
    off = graph_json(
        "off_graph",
        op("data", "Data", 0, outputs=[desc(**shape)]),
        op("conv", "Conv2D", 1, ("data:0",), outputs=[desc(**shape)]),
        op("relu", "Relu", 2, ("conv:0",), outputs=[desc(**shape)]),
        op("split", "SplitD", 3, ("relu:0",), outputs=[desc(shape=(10, 24), layout="ND")] * 2),
        op("mm", "MatMul", 4, ("split:0", "split:1"), outputs=[desc(shape=(10, 10), layout="ND")]),
        op("cast", "Cast", 5, ("relu:0",), outputs=[desc(dtype="DT_FLOAT16", **shape)]),
        op("out", "NetOutput", 6, ("mm:0", "cast:0")),
    )
    on = graph_json(
        "on_graph",
        op("data", "Data", 0, outputs=[desc(**shape)]),
        op("l1_conv", "Conv2D", 1, ("data:0",), originals=["conv"], l1="7",
           outputs=[desc("conv", 0, **shape)]),
        op("l1_relu", "Relu", 2, ("l1_conv:0",), originals=["relu"], l1="7",
           outputs=[desc("relu", 0, **shape)]),
        op("split", "SplitD", 3, ("l1_relu:0",), originals=["split"],
           outputs=[desc("split", 0, shape=(10, 24), layout="ND"),
                    desc("split", 1, shape=(10, 24), layout="ND")]),
        op("mm", "MatMul", 4, ("split:0", "split:1"), originals=["mm"],
           outputs=[desc("mm", 0, shape=(10, 10), layout="FRACTAL_NZ")]),
        op("trans", "TransData", 5, ("mm:0",), originals=[], outputs=[desc(shape=(10, 10))]),
        op("cast", "Cast", 6, ("l1_relu:0",), outputs=[desc(dtype="DT_FLOAT16", **shape)]),
        op("odd", "Identity", 7, ("cast:0",), originals=["ghost"],
           outputs=[desc("split", 5, shape=(10, 24), layout="ND")]),
        op("out", "NetOutput", 8, ("trans:0", "cast:0")),
    )  # fmt: skip
    nz = TensorSpec(_nz(mm), format=29, original_shape=(10, 10))
    files = {
        "off": [("Conv2D", "conv", [x], [conv]), ("Relu", "relu", [conv], [relu]),
                ("SplitD", "split", [relu], [top, bottom]), ("MatMul", "mm", [top, bottom], [mm]),
                ("Cast", "cast", [relu], [half])],
        "on": [("Conv2D", "l1_conv", [x], [conv]), ("Relu", "l1_relu", [conv], [relu * 1.01]),
               ("SplitD", "split", [relu], [top, bottom]),
               ("MatMul", "mm", [top, bottom], [nz]), ("TransData", "trans", [nz], [mm]),
               ("Cast", "cast", [relu], [half]), ("Identity", "odd", [half], [top])],
    }  # fmt: skip
    paths = []
    for side, model in (("on", on), ("off", off)):
        folder = root / side
        folder.mkdir(parents=True)
        for number, (op_type, name, inputs, outputs) in enumerate(files[side]):
            specs = [
                [t if isinstance(t, TensorSpec) else TensorSpec(t) for t in group]
                for group in (inputs, outputs)
            ]
            write_dump(folder / f"{op_type}.{name}.{number}.1.{STAMP + number}", name, *specs)
        graph_path = root / f"{side}.json"
        graph_path.write_text(json.dumps(model))
        paths += [folder, graph_path]
    return paths[0], paths[2], paths[1], paths[3]


def test_handmade_case_with_l1_group_two_outputs_and_nz(tmp_path):
    on_dump, off_dump, on_graph, off_graph = _handmade(tmp_path / "case")
    theirs = run_msaccucmp(on_dump, off_dump, on_graph, off_graph, tmp_path / "msaccucmp")
    outcome = run_compare(
        CompareRequest(on_dump, off_dump, on_graph, off_graph, tmp_path / "ours", workers=1)
    )
    found = assert_same_rows(outcome.csv_path, theirs)
    rows = {row.tensor_index: row for row in outcome.rows if row.tensor_index}
    assert rows["l1_relu:output:0"].npu_dump == "l1_conv,l1_relu"  # L1 group label
    assert rows["split:output:1"].right_output_index == 1
    assert rows["mm:output:0"].shape == (10, 10)  # FRACTAL_NZ padding cut off
    assert rows["odd:output:0"].fail_reason == [""]  # fusion-off output 5 does not exist
    assert rows["odd:output:0"].ground_truth == "*"  # its original op is not in the off graph
    assert found["rows"] == len(outcome.rows)


X4 = np.arange(1, 5, dtype=np.float32)  # every one-op case's input


def _one_op_case(
    root: Path,
    on_files: list[tuple[str, TensorSpec]],
    off_files: list[tuple[str, TensorSpec]],
    *,
    on_name: str = "f",
    length: int = 4,
    dtype: str = "DT_FLOAT",
) -> tuple[Path, Path, Path, Path]:
    """One fused Relu ``on_name`` standing for the fusion-off Relu ``b``, both reading
    :data:`X4`; each side's dump files as (file name, output tensor), written in that order.
    Returns (on_dump, off_dump, on_graph, off_graph)."""
    shape = {"shape": (length,), "layout": "ND"}
    off = graph_json(
        "g",
        op("data", "Data", 0, outputs=[desc(**shape)]),
        op("b", "Relu", 1, ("data:0",), outputs=[desc(dtype=dtype, **shape)]),
        op("out", "NetOutput", 2, ("b:0",)),
    )
    on = graph_json(
        "g",
        op("data", "Data", 0, outputs=[desc(**shape)]),
        op(on_name, "Relu", 1, ("data:0",), originals=["b"],
           outputs=[desc("b", 0, dtype=dtype, **shape)]),
        op("out", "NetOutput", 2, (f"{on_name}:0",)),
    )  # fmt: skip
    paths = []
    for side, model, name, files in (("on", on, on_name, on_files), ("off", off, "b", off_files)):
        folder = root / side
        folder.mkdir(parents=True)
        for file_name, output in files:
            write_dump(folder / file_name, name, [TensorSpec(X4)], [output])
        graph_path = root / f"{side}.json"
        graph_path.write_text(json.dumps(model))
        paths += [folder, graph_path]
    return paths[0], paths[2], paths[1], paths[3]


def _one_file_each(root: Path, on: TensorSpec, off: TensorSpec, **case) -> tuple:
    """:func:`_one_op_case` with one dump file a side holding ``on`` and ``off``."""
    on_name = case.get("on_name", "f")
    return _one_op_case(
        root, [(f"Relu.{on_name}.1.1.{STAMP}", on)], [(f"Relu.b.1.1.{STAMP}", off)], **case
    )


def _compared_with_msaccucmp(root: Path, case: tuple) -> tuple:
    """Both tools on ``case`` (one process of ours): our outcome and :func:`assert_same_rows`."""
    on_dump, off_dump, on_graph, off_graph = case
    theirs = run_msaccucmp(on_dump, off_dump, on_graph, off_graph, root / "msaccucmp")
    outcome = run_compare(
        CompareRequest(on_dump, off_dump, on_graph, off_graph, root / "ours", workers=1)
    )
    return outcome, assert_same_rows(outcome.csv_path, theirs)


@pytest.mark.parametrize(
    "stamps",
    [
        ["{S}", "{S}", "{S}", "{S}"],  # one timestamp: the folder's order decides
        ["{S}", "1{S}", "{S}"],  # a 17-digit stamp counts as none
        ["{S}.0", "{S}.1", "{S}.0"],  # a device id after the stamp is what is compared
    ],
    ids=["equal stamps", "17 digits", "device suffix"],
)
def test_the_dump_file_compared_of_an_op_dumped_several_times(tmp_path, stamps):
    """A review (fortieth round): msaccucmp sorts an op's files by a key read from the name
    (the last field when it has 16 digits, else 0) with a stable sort over the folder's own
    listing order, and takes the last; we sorted by timestamp, then by name, and compared
    another file whenever keys tied. Names are tried until the listing order differs from
    the name order (it does at once on most file systems). File ``k`` of the fusion-off op
    holds ``X4 * (k + 1)``: which of them is compared shows in every metric."""
    for attempt in range(20):
        names = [
            f"Relu.b.{attempt + task}.1.{stamp.format(S=STAMP)}"
            for task, stamp in enumerate(stamps, start=1)
        ]
        root = tmp_path / f"try{attempt}"
        off_files = [(name, TensorSpec(X4 * (k + 1))) for k, name in enumerate(names)]
        case = _one_op_case(root, [(f"Relu.f.1.1.{STAMP}", TensorSpec(X4))], off_files)
        listed = os.listdir(case[1])
        if listed != sorted(listed):
            break
    _, found = _compared_with_msaccucmp(root, case)
    assert found["rows"] == 4 and found["byte_identical"]  # Data, input, output, NetOutput


@pytest.mark.parametrize("right", [(0, 4), (4,)], ids=["empty both", "empty against four"])
def test_an_empty_tensor_of_two_dimensions_keeps_its_shape(tmp_path, right):
    """A review (fortieth round): msaccucmp keeps a 0-element tensor's own shape ([0,4] in the
    Shape cell, (0, 4, 1, 1) in a shape message); we flattened it to [0] and (0, 1, 1, 1)."""
    on, off = np.zeros((0, 4), np.float32), np.zeros(right, np.float32) + 1
    case = _one_file_each(tmp_path, TensorSpec(on), TensorSpec(off))
    outcome, found = _compared_with_msaccucmp(tmp_path, case)
    assert found["byte_identical"]
    (row,) = (r for r in outcome.rows if r.tensor_index == "f:output:0")
    assert row.shape == (0, 4)


@pytest.mark.parametrize("code", [33, 34, 35], ids=["HiFloat8", "E5M2", "E4M3FN"])
def test_eight_bit_float_tensors_are_written_as_msaccucmp_types_them(tmp_path, code):
    """A review (fortieth round): msaccucmp decodes 8-bit floats into Python floats, so its
    DataType cells say float64; ours said float32 (the metrics agreed)."""
    on = TensorSpec(bytes([0x38, 0x3C, 0x40, 0x44]), data_type=code, shape=(4,))
    off = TensorSpec(bytes([0x38, 0x3C, 0x40, 0x45]), data_type=code, shape=(4,))
    outcome, found = _compared_with_msaccucmp(tmp_path, _one_file_each(tmp_path, on, off))
    assert found["byte_identical"]
    (row,) = (r for r in outcome.rows if r.tensor_index == "f:output:0")
    assert row.compared and row.left_dtype == row.right_dtype == "float64"


def test_an_lxslice_tag_inside_an_op_name_is_dropped_from_its_dump_s_name_too(tmp_path):
    """A review (fortieth round): with -f msaccucmp drops every ``_lxslice<N>`` from the op
    names of the graph and of the dump files, so the op ``a_lxslice1_b`` is ``a_b`` on both
    and its dump is found; we dropped it from the graph's name only and found no dump. (A
    tag that ends the name marks an FFTS+ slice file: test_ffts_slices_oracle.py.)"""
    both = TensorSpec(X4 * 2)
    case = _one_file_each(tmp_path, both, both, on_name="a_lxslice1_b")
    outcome, found = _compared_with_msaccucmp(tmp_path, case)
    assert found["byte_identical"]
    assert any(r.tensor_index == "a_b:output:0" and r.compared for r in outcome.rows)


def test_bfloat16_tensors_match_msaccucmp(tmp_path):
    """bfloat16, the type of most LLM activations on Ascend: msaccucmp reads it through
    ml_dtypes (a test dependency since the fortieth round: without it msaccucmp died on any
    bfloat16 dump, and no oracle test held ours to it)."""
    values = np.random.default_rng(40).standard_normal(64).astype(np.float32)

    def bf16(wide: np.ndarray) -> TensorSpec:  # truncated to bfloat16
        stored = (wide.view(np.uint32) >> 16).astype(np.uint16).tobytes()
        return TensorSpec(stored, data_type=27, shape=(64,))

    case = _one_file_each(
        tmp_path, bf16(values * np.float32(1.01)), bf16(values), length=64, dtype="DT_BF16"
    )
    outcome, found = _compared_with_msaccucmp(tmp_path, case)
    assert found["byte_identical"]
    (row,) = (r for r in outcome.rows if r.tensor_index == "f:output:0")
    assert row.compared and 0.99 < row.metrics["CosineSimilarity"] < 1.0
