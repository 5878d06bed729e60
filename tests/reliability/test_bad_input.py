"""Bad input through the real command line (issue 12, "Bad input").

Every file here once produced a Python traceback or an "internal error". Now: exit 2 naming
the file when it stops the run (a graph), a row naming the file when it is one dump among many
(the other rows kept), and for a configuration a finding, never a crash.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from bad_files import (
    deep_json_graph,
    deep_text_graph,
    huge_int_json_graph,
    huge_int_text_graph,
    npy_descr,
    npy_with_header,
)
from fusion_switch.readers.dump import read_dump
from fusion_switch.readers.dump_write import TensorSpec, write_dump
from fusion_switch.synth.generator import generate_case


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fusion_switch", *args],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def clean_failure(result: subprocess.CompletedProcess) -> None:
    output = result.stderr + result.stdout
    assert "Traceback" not in output, output[-3000:]
    assert "internal error" not in output, output[-3000:]


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    return generate_case(tmp_path_factory.mktemp("badin") / "case", n_ops=40, graph_text=False)


def compare(case, out: Path, **override: str) -> subprocess.CompletedProcess:
    flags = {
        "-m": str(case.on_dump),
        "-g": str(case.off_dump),
        "-f": str(case.on_graph),
        "-cf": str(case.off_graph),
        "-out": str(out),
    }
    flags.update({f"-{k}": v for k, v in override.items()})
    args = [x for pair in flags.items() for x in pair]
    return cli("compare", *args, "--no-progress", "--workers", "1")


def rows_of(out: Path) -> list[dict]:
    (csv_path,) = out.glob("result_*.csv")
    with csv_path.open(newline="") as handle:
        return list(csv.DictReader(handle))


# --- graphs: exit 2 naming the file ---------------------------------------------------------


@pytest.mark.parametrize("depth", [50_000, 100_000])
@pytest.mark.parametrize("writer", [deep_json_graph, deep_text_graph], ids=["json", "text"])
def test_deeply_nested_graph_is_refused_naming_the_file(tmp_path, writer, depth):
    graph = writer(tmp_path / "deep_graph", depth)
    result = cli("passes", str(graph))
    clean_failure(result)
    assert result.returncode == 2
    assert str(graph) in result.stderr and "nested" in result.stderr


def test_deeply_nested_graph_stops_compare_naming_the_flag(case, tmp_path):
    graph = deep_json_graph(tmp_path / "deep.json", 100_000)
    result = compare(case, tmp_path / "out", f=str(graph))
    clean_failure(result)
    assert result.returncode == 2
    assert str(graph) in result.stderr and "nested" in result.stderr


@pytest.mark.parametrize("writer", [huge_int_json_graph, huge_int_text_graph], ids=["json", "text"])
def test_5000_digit_integer_in_a_graph(tmp_path, writer):
    graph = writer(tmp_path / "graph")
    result = cli("passes", str(graph))
    clean_failure(result)
    assert result.returncode == 2
    assert str(graph) in result.stderr and "digits" in result.stderr
    assert "9" * 100 not in result.stderr  # the number is not echoed in full


def test_dump_file_passed_as_a_graph(case, tmp_path):
    dump = next(case.on_dump.iterdir())
    result = compare(case, tmp_path / "out", cf=str(dump))
    clean_failure(result)
    assert result.returncode == 2
    assert str(dump) in result.stderr and "dump file" in result.stderr


# --- dumps: a row naming the file, the others kept ------------------------------------------


def _rewrite_with_shape(path: Path, dims: tuple[int, ...]) -> None:
    """The same dump with output 0 declaring `dims` (same bytes)."""
    dump = read_dump(path)

    def spec(t, shape=None):
        return TensorSpec(
            data=dump.raw_bytes(t), data_type=t.data_type, format=t.raw_format,
            shape=shape if shape is not None else t.shape, original_shape=t.original_shape,
            original_op=t.original_op, sub_format=t.sub_format, address=t.address,
        )  # fmt: skip

    outputs = [spec(t, dims if t.index == 0 else None) for t in dump.outputs]
    write_dump(path, dump.op_name, [spec(t) for t in dump.inputs], outputs)


def compared(rows: list[dict]) -> set[str]:
    return {r["TensorIndex"] for r in rows if r["CosineSimilarity"] not in ("", "NaN")}


@pytest.fixture(scope="module")
def baseline(case, tmp_path_factory):
    out = tmp_path_factory.mktemp("baseline") / "out"
    assert compare(case, out).returncode in (0, 1)
    return rows_of(out)


def test_65_dimension_tensor_becomes_a_row(case, baseline, tmp_path):
    dumps = tmp_path / "on"
    shutil.copytree(case.on_dump, dumps)
    bad = sorted(p for p in dumps.iterdir() if p.name.startswith("Conv2D."))[0]
    shape = read_dump(bad).outputs[0].shape
    _rewrite_with_shape(bad, (*shape, *(1,) * (65 - len(shape))))
    out = tmp_path / "out"
    result = compare(case, out, m=str(dumps))
    clean_failure(result)
    assert result.returncode in (0, 1)
    rows = rows_of(out)
    op = bad.name.split(".")[1]
    reasons = {r["TensorIndex"]: r["CompareFailReason"] for r in rows if r["NPUDump"] == op}
    assert str(bad) in reasons[f"{op}:output:0"] and "65 dimensions" in reasons[f"{op}:output:0"]
    lost = compared(baseline) - compared(rows)
    assert lost == {f"{op}:output:0"}  # only its own tensor


@pytest.fixture(scope="module")
def npy_golden(case, tmp_path_factory):
    """The fusion-off dumps as a folder of .npy files (as TensorFlow/PyTorch CPU runs write)."""
    folder = tmp_path_factory.mktemp("npy") / "golden"
    folder.mkdir()
    for path in case.off_dump.iterdir():
        dump = read_dump(path)
        op, stamp = path.name.split(".")[1], path.name.split(".")[-1]
        for tensor in dump.outputs:
            np.save(folder / f"{op}.{tensor.index}.{stamp}.npy", dump.array(tensor))
    return folder


@pytest.fixture(scope="module")
def npy_baseline(case, npy_golden, tmp_path_factory):
    out = tmp_path_factory.mktemp("npy_baseline") / "out"
    # .npy goldens hold outputs only: a fused op whose parameters they lack is not verified,
    # and where the outputs diverge the run is "not proven clean" (3)
    assert compare(case, out, g=str(npy_golden)).returncode in (0, 1, 3)
    return rows_of(out)


def test_npy_goldens_are_evidence_the_replay_reads(case, npy_golden, npy_baseline, tmp_path):
    """msaccucmp tags a tensor read from a .npy file with format RESERVED. The replay took that
    for a device layout it cannot convert, so every .npy golden it read was "evidence
    missing", and the run exited 3 unless a rule was proven (issue 16's review)."""
    out = tmp_path / "out"
    result = compare(case, out, g=str(npy_golden))
    clean_failure(result)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["evidence_missing"] == [], summary["evidence_missing"][:2]
    assert "RESERVED" not in result.stdout


@pytest.mark.parametrize(
    "shape, message",
    [((-3, 4), "negative dimension"), ((1,) * 65, "65 dimensions")],
    ids=["negative-dimension", "65-dimensions"],
)
def test_bad_npy_header_becomes_a_row_of_its_own(
    case, npy_golden, npy_baseline, tmp_path, shape, message
):
    # an op whose fusion-off output the baseline reads from its own .npy file and compares
    row = next(r for r in npy_baseline if r["TensorIndex"] == "b0_softmax:output:0")
    assert row["CosineSimilarity"] not in ("", "NaN")
    golden = tmp_path / "golden"
    shutil.copytree(npy_golden, golden)
    (bad,) = golden.glob("b0_softmax.0.*.npy")
    descr = npy_descr(np.load(bad))
    npy_with_header(bad, {"descr": descr, "fortran_order": False, "shape": shape})
    out = tmp_path / "out"
    result = compare(case, out, g=str(golden))
    clean_failure(result)
    # the replay reads the file too: with no rule proven, the run says evidence is missing
    summary = json.loads((out / "summary.json").read_text())
    assert result.returncode == (1 if summary["suspects"] else 3)
    assert any(str(bad) in line for line in summary["evidence_missing"])
    rows = rows_of(out)
    reasons = {r["TensorIndex"]: r["CompareFailReason"] for r in rows}
    assert str(bad) in reasons[row["TensorIndex"]] and message in reasons[row["TensorIndex"]]
    lost = compared(npy_baseline) - compared(rows)
    assert row["TensorIndex"] in lost
    # its own tensor, and at most where it is an input of the next op
    assert len(lost) <= 2, lost


# --- configuration: a finding, never a crash ------------------------------------------------

SURROGATES = {
    "escaped-key": '{"Switch": {"GraphFusion": {"\\ud800": "on"}}}',
    "escaped-value": '{"Switch": {"GraphFusion": {"ConvBatchnormFusionPass": "o\\udfff"}}}',
    "escaped-in-name": '{"Switch": {"GraphFusion": {"Conv\\udc00Pass": "off"}}}',
}


@pytest.mark.parametrize("text", SURROGATES.values(), ids=SURROGATES.keys())
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_cfg_with_a_lone_surrogate(tmp_path, text, fmt):
    path = tmp_path / "fusion_switch.cfg"
    path.write_text(text, encoding="ascii")
    result = cli("check", "--format", fmt, str(path))
    clean_failure(result)
    assert result.returncode == 1
    if fmt == "json":
        report = json.loads(result.stdout)
        messages = json.dumps(report)
    else:
        messages = result.stdout
        assert str(path) in messages
    assert "surrogate" in messages
