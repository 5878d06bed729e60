"""Bad inputs through the command line, as a user makes them.

Each run is a subprocess. It must end with a clear message that names the file (and the line
and column, or the op and tensor) and what to do, never a Python traceback; and when one dump
file is bad the rest of the comparison must go on.
"""

from __future__ import annotations

import csv
import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from fusion_switch.synth.generator import generate_case

OTHER_NETWORK = Path(__file__).resolve().parents[1] / "data" / "graphs" / "msit_tdnn_test.om.json"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fusion_switch", *args], capture_output=True, text=True, timeout=120
    )


def no_traceback(result: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in result.stderr + result.stdout, result.stderr


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    return generate_case(
        tmp_path_factory.mktemp("bad") / "case",
        n_ops=40,
        faults=["dropped_scale"],
        graph_text=False,
    )


def compare(case, out: Path, **override: str) -> subprocess.CompletedProcess:
    """`fusion-switch compare` on the case, with some flags replaced."""
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


# --- inputs that stop the comparison: exit 2 and one clear line --------------------------------


def test_missing_dump_folder(case, tmp_path):
    missing = tmp_path / "no_such_dump"
    result = compare(case, tmp_path / "out", m=str(missing))
    no_traceback(result)
    assert result.returncode == 2
    assert f"-m {missing}: no such folder" in result.stderr
    assert not (tmp_path / "out" / "summary.json").exists()


@pytest.mark.parametrize("content", [{}, {"readme.txt": b"hello\n", "x.bin": b"abc"}])
def test_dump_folder_without_dump_files(case, tmp_path, content):
    folder = tmp_path / "dumps"
    folder.mkdir()
    for name, data in content.items():
        (folder / name).write_bytes(data)
    result = compare(case, tmp_path / "out", m=str(folder))
    no_traceback(result)
    assert result.returncode == 2
    assert str(folder) in result.stderr and "no dump files found" in result.stderr
    assert "expected names like" in result.stderr  # says what a dump file looks like


def test_graph_that_is_not_json_names_line_and_column(case, tmp_path):
    graph = tmp_path / "broken.json"
    graph.write_text('{"graph": [ {"op": [')
    result = compare(case, tmp_path / "out", f=str(graph))
    no_traceback(result)
    assert result.returncode == 2
    assert "fusion-on graph" in result.stderr and f"{graph}:1:21:" in result.stderr


def _a_dump_file(case) -> Path:
    return next(p for p in sorted(Path(case.on_dump).rglob("Conv2D.*")) if p.is_file())


@pytest.mark.parametrize(
    ("flag", "content", "message"),
    [
        ("f", b"", "empty file; is this an atc/GE graph file?"),
        ("cf", b"\n  \n", "empty file; is this an atc/GE graph file?"),
        ("f", b'[{"graph": []}]', "not an atc graph JSON: the top level is an array"),
        ("cf", None, "binary file, not a graph (did you pass a dump file as -f/-cf?)"),
    ],
    ids=["empty", "blank", "array", "dump-file"],
)
def test_a_file_that_is_no_graph_says_what_it_is(case, tmp_path, flag, content, message):
    graph = _a_dump_file(case) if content is None else tmp_path / "graph.json"
    if content is not None:
        graph.write_bytes(content)
    result = compare(case, tmp_path / "out", **{flag: str(graph)})
    no_traceback(result)
    assert result.returncode == 2
    role = "fusion-on" if flag == "f" else "fusion-off"
    assert f"{role} graph: {graph}: {message}" in result.stderr, result.stderr
    assert "unexpected character" not in result.stderr


@pytest.mark.parametrize("below", ["", "sub", "sub/deeper"])
def test_output_folder_that_is_or_lies_below_a_file(case, tmp_path, below):
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    out = blocker / below if below else blocker
    result = compare(case, out)
    no_traceback(result)
    assert result.returncode == 2
    where = f"-out {out}: {blocker}" if below else f"-out {blocker}"
    assert (
        f"{where} is a file, not a folder; give a folder for -out (it is created when missing)"
        in result.stderr
    )
    assert "Errno" not in result.stderr
    assert blocker.read_text() == "x"  # left alone


def _alias(kind: str, target: Path, folder: Path) -> Path:
    """Another name for `target`: the path itself, a symbolic link, `x/../x`, a hard link."""
    folder.mkdir(exist_ok=True)
    if kind == "same":
        return target
    if kind == "symlink":
        link = folder / f"link_{target.name}"
        link.symlink_to(target)
        return link
    if kind == "dotdot":
        return target / ".." / target.name
    link = folder / f"hard_{target.name}"
    link.hardlink_to(target)
    return link


@pytest.mark.parametrize("kind", ["same", "symlink", "dotdot"])
def test_the_same_dump_folder_on_both_sides_is_refused(case, tmp_path, kind):
    other = _alias(kind, case.on_dump, tmp_path / "alias")
    result = compare(case, tmp_path / "out", g=str(other))
    no_traceback(result)
    assert result.returncode == 2
    assert (
        f"-m and -g are the same folder ({case.on_dump.resolve()}): give the fusion-on dump "
        "as -m and the fusion-off dump as -g"
    ) in result.stderr
    assert not (tmp_path / "out").exists()  # refused before anything was written


@pytest.mark.parametrize("kind", ["same", "symlink", "hardlink"])
def test_the_same_graph_on_both_sides_is_refused(case, tmp_path, kind):
    # a hard link has its own real path: os.path.samefile tells it is the same file
    source = tmp_path / "graphs" / case.off_graph.name
    source.parent.mkdir()
    shutil.copy(case.off_graph, source)
    other = _alias(kind, source, tmp_path / "alias")
    result = compare(case, tmp_path / "out", f=str(source), cf=str(other))
    no_traceback(result)
    assert result.returncode == 2
    assert (
        f"-f and -cf are the same file ({source.resolve()}): give the fusion-on graph as -f "
        "and the fusion-off graph as -cf"
    ) in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_copy_of_the_graph_is_not_the_same_file(case, tmp_path):
    copy = tmp_path / "copy.json"
    shutil.copy(case.off_graph, copy)
    result = compare(case, tmp_path / "out", cf=str(copy))
    no_traceback(result)
    assert "same file" not in result.stderr and result.returncode == 1


@pytest.mark.parametrize("flag", ["m", "g"])
def test_a_file_given_for_a_dump_folder(case, tmp_path, flag):
    result = compare(case, tmp_path / "out", **{flag: str(case.on_graph)})
    no_traceback(result)
    assert result.returncode == 2
    assert (
        f"-{flag} {case.on_graph} is a file; give the dump folder (or a folder above it)"
        in result.stderr
    )
    assert "no such folder" not in result.stderr


@pytest.mark.parametrize("flag", ["f", "cf"])
def test_a_folder_given_for_a_graph(case, tmp_path, flag):
    result = compare(case, tmp_path / "out", **{flag: str(case.on_dump)})
    no_traceback(result)
    assert result.returncode == 2
    assert (
        f"-{flag} {case.on_dump} is a folder; give the graph file "
        "(ge_proto_*_Build.json or .txt)" in result.stderr
    )
    assert "no such file" not in result.stderr


@pytest.mark.parametrize(
    ("alg", "message"),
    [
        ("Cosine", "-alg Cosine: unknown algorithm; did you mean CosineSimilarity? Valid: 0..9"),
        ("12", "-alg 12: unknown algorithm (indexes go from 0 to 9). Valid: 0..9"),
    ],
)
def test_unknown_algorithm_lists_the_valid_names(case, tmp_path, alg, message):
    result = cli(
        "compare",
        *("-m", str(case.on_dump), "-g", str(case.off_dump)),
        *("-f", str(case.on_graph), "-cf", str(case.off_graph)),
        *("-out", str(tmp_path), "-alg", alg, "--no-progress"),
    )
    no_traceback(result)
    assert result.returncode == 2
    assert message in result.stderr
    assert "CosineSimilarity, MaxAbsoluteError, AccumulatedRelativeError" in result.stderr


def test_unknown_threshold_name(case, tmp_path):
    result = cli(
        "compare",
        *("-m", str(case.on_dump), "-g", str(case.off_dump)),
        *("-f", str(case.on_graph), "-cf", str(case.off_graph)),
        *("-out", str(tmp_path), "--threshold", "cosine"),
    )
    no_traceback(result)
    assert result.returncode == 2 and "bad threshold 'cosine'" in result.stderr


@pytest.mark.parametrize(
    ("option", "message"),
    [
        # numbers float() reads that are no size: a traceback before (a review)
        (["--memory-budget", "inf"], "--memory-budget: 'inf' is not a size like 4G or 512M"),
        (["--memory-budget", "1e400"], "--memory-budget: '1e400' is not a size like 4G"),
        (["--memory-budget", "nan"], "--memory-budget: 'nan' is not a size like 4G or 512M"),
        # a negative count ran as one process, without a word
        (["--workers", "-1"], "--workers: -1: give 0 (every core) or a number of processes"),
    ],
)
def test_option_values_that_are_no_size_or_count(case, tmp_path, option, message):
    result = cli(
        "compare",
        *("-m", str(case.on_dump), "-g", str(case.off_dump)),
        *("-f", str(case.on_graph), "-cf", str(case.off_graph)),
        *("-out", str(tmp_path / "out"), "--no-progress", *option),
    )
    no_traceback(result)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()


# --- inputs that do not match: the run completes and says what to check -------------------------


def test_graph_of_another_network_says_what_to_check(case, tmp_path):
    result = compare(case, tmp_path, f=str(OTHER_NETWORK))
    no_traceback(result)
    assert result.returncode == 2  # nothing could be compared
    assert "verdict: nothing compared" in result.stdout
    assert "check that -f is the graph of the run dumped in -m" in result.stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["suspects"] == [] and summary["counts"]["compared"] == 0


@pytest.mark.parametrize(("flag", "dump_flag"), [("f", "-m"), ("cf", "-g")])
def test_graph_of_another_network_on_one_side_gets_a_note(case, tmp_path, flag, dump_flag):
    """The other side is right, so some tensors may still pair up; the note says which graph
    does not belong to which dumps."""
    result = compare(case, tmp_path, **{flag: str(OTHER_NETWORK)})
    no_traceback(result)
    notes = [line for line in result.stdout.splitlines() if line.startswith("note: ")]
    (note,) = [line for line in notes if str(OTHER_NETWORK) in line]
    role = "fusion-on" if flag == "f" else "fusion-off"
    assert "No dump file in" in note or "ops dumped in" in note
    assert f"({dump_flag}) " in note and f"{role} graph {OTHER_NETWORK} (-{flag})" in note
    assert f"check that -{flag} is the graph of the run dumped in {dump_flag}" in note
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert note.removeprefix("note: ") in summary["inputs"]["notes"]


def test_swapped_graphs_are_detected_and_said(case, tmp_path):
    result = compare(case, tmp_path, f=str(case.off_graph), cf=str(case.on_graph))
    no_traceback(result)
    assert result.returncode == 1
    assert "graphs were given the other way round" in result.stdout
    assert "AConv2dMulFusion                         introduces   b1_conv2" in result.stdout


def test_dumps_and_graphs_both_swapped(case, tmp_path):
    result = compare(
        case,
        tmp_path,
        m=str(case.off_dump),
        g=str(case.on_dump),
        f=str(case.off_graph),
        cf=str(case.on_graph),
    )
    no_traceback(result)
    assert result.returncode == 1
    assert "dump folders were given the other way round" in result.stdout
    assert "graphs were given the other way round" in result.stdout
    assert "verdict: proven by replay: AConv2dMulFusion" in result.stdout


# --- one bad dump file: named, and the rest of the comparison goes on ---------------------------


def _conv_dumps(folder: Path) -> list[Path]:
    """Convolution dumps away from the faulty block (b1)."""
    return sorted(
        p for p in folder.iterdir() if p.name.startswith("Conv2D.") and ".b1_" not in p.name
    )


def test_bad_dump_files_are_named_and_the_rest_is_compared(case, tmp_path):
    dumps = tmp_path / "on"
    shutil.copytree(case.on_dump, dumps)
    short, huge_header, cut_data = _conv_dumps(dumps)[:3]
    short.write_bytes(short.read_bytes()[:100])  # header cut
    data = huge_header.read_bytes()  # header length field beyond the file
    huge_header.write_bytes(struct.pack("<Q", 10**9) + data[8:])
    cut_data.write_bytes(cut_data.read_bytes()[:-1000])  # tensor bytes cut

    result = compare(case, tmp_path / "out", m=str(dumps))
    no_traceback(result)
    assert result.returncode == 1  # compared, and the injected fault is still found
    # the unreadable files are evidence missing, said first in the verdict
    assert "verdict: evidence missing: " in result.stdout
    assert "AConv2dMulFusion (GraphFusion) introduces the error at b1_conv2" in result.stdout
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    notes = "\n".join(summary["inputs"]["notes"])
    assert f"skipped a bad dump file (dump it again to compare its op): {huge_header}: " in notes
    assert f"{huge_header}: header length 1000000000" in notes
    assert f"{short}: header length" in notes and "truncated" in notes
    assert f"{cut_data}: output:0 claims" in notes  # names the tensor
    (csv_path,) = (tmp_path / "out").glob("result_*.csv")
    with csv_path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    reasons = {r["NPUDump"]: r["CompareFailReason"] for r in rows}
    for bad in (short, huge_header, cut_data):
        op = bad.name.split(".")[1]
        assert str(bad) in reasons[op], (op, reasons[op])
    compared = [r for r in rows if r["CosineSimilarity"] not in ("", "NaN")]
    assert len(compared) > len(rows) // 3  # the other files were compared


# --- fusion-switch passes -----------------------------------------------------------------------


def test_passes_on_a_missing_file(tmp_path):
    missing = tmp_path / "nope.json"
    result = cli("passes", str(missing))
    no_traceback(result)
    assert result.returncode == 2
    assert f"{missing}: cannot read" in result.stderr and result.stdout == ""


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        ("broken.json", '{"graph": [ {"op": [', ":1:21: invalid JSON"),
        ("broken.txt", "hello world\n", ":1:7: expected ':'"),
        ("empty.json", "", "is this an atc/GE graph file?"),
    ],
)
def test_passes_on_a_malformed_graph(tmp_path, name, text, where):
    graph = tmp_path / name
    graph.write_text(text)
    result = cli("passes", str(graph))
    no_traceback(result)
    assert result.returncode == 2
    assert str(graph) in result.stderr and where in result.stderr


def test_passes_warns_about_a_broken_fusion_result_and_goes_on(case, tmp_path):
    graph = tmp_path / case.on_graph.name
    shutil.copy(case.on_graph, graph)
    (tmp_path / "fusion_result.json").write_text('{"graph_fusion": {')
    result = cli("passes", str(graph))
    no_traceback(result)
    assert result.returncode == 0
    assert "warning: fusion_result.json ignored" in result.stderr
    assert f"{tmp_path / 'fusion_result.json'}: line 1 column 19" in result.stderr
    assert "PassName: AConv2dMulFusion  [GraphFusion]" in result.stdout
    asked = cli("passes", str(graph), "--fusion-result", str(tmp_path / "fusion_result.json"))
    assert asked.returncode == 2 and "error: --fusion-result:" in asked.stderr


def test_passes_names_a_graph_without_a_name_after_its_file(tmp_path):
    graph = tmp_path / "mini.json"
    op = {"name": "a", "type": "Conv2D"}
    op["attr"] = [{"key": "pass_name", "value": {"list": {"s": ["SomePass"]}}}]
    graph.write_text(json.dumps({"graph": [{"op": [op]}]}))
    result = cli("passes", str(graph))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("mini.json: 1 fused ops, 1 passes")


# --- fusion-switch demo -------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "message"), [(["--ops", "0"], "give at least 1")])
def test_demo_rejects_bad_options(args, message):
    result = cli("demo", *args)
    no_traceback(result)
    assert result.returncode == 2 and message in result.stderr


def test_demo_output_below_a_file(tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    result = cli("demo", "--out", str(blocker / "sub"), "--no-progress")
    no_traceback(result)
    assert result.returncode == 2
    assert f"{blocker} is a file, not a folder" in result.stderr
    assert result.stdout == ""  # refused before doing anything


def test_a_dump_name_with_four_numbers_is_read_not_a_crash(case, tmp_path):
    """`Type.op.1.2.3.4` matches msaccucmp's pattern (task.stream.timestamp.device); it used
    to be read as an FFTS+ name and `compare` and `dumps` ended in an IndexError."""
    on, off = tmp_path / "on", tmp_path / "off"
    shutil.copytree(case.on_dump, on)
    shutil.copytree(case.off_dump, off)
    for folder in (on, off):
        (folder / "Odd.odd_op.1.2.3.4").write_bytes(b"")

    result = compare(case, tmp_path / "out", m=str(on), g=str(off))
    no_traceback(result)
    assert result.returncode == 1  # compared, and the injected fault is still found
    assert "AConv2dMulFusion (GraphFusion) introduces the error at b1_conv2" in result.stdout
    baseline = compare(case, tmp_path / "baseline")
    assert baseline.returncode == 1, baseline.stderr

    def rows(out: Path) -> list[tuple[str, str]]:
        (csv_path,) = out.glob("result_*.csv")
        with csv_path.open(newline="") as handle:
            return [(r["NPUDump"], r["CosineSimilarity"]) for r in csv.DictReader(handle)]

    # odd_op is in neither graph, so like msaccucmp the comparison leaves it out
    assert rows(tmp_path / "out") == rows(tmp_path / "baseline")

    listed = cli("dumps", "--format", "json", str(on))
    no_traceback(listed)
    assert listed.returncode == 0, listed.stderr
    (leaf,) = json.loads(listed.stdout)["leaves"]
    assert leaf["kind"] == "tensor"
