"""Dump files CANN named by number, their real names in ``mapping.csv`` (:mod:`mapping_cases`),
against the real msaccucmp: plain ops and FFTS+ thread and slice files.

Each case is an existing oracle case (:mod:`test_oracle`, :mod:`ffts_cases`) with some or all
of its dump files numbered. The CSV must be msaccucmp's byte for byte, except where msaccucmp
stops, or joins an FFTS+ op's parts out of place because its sort does not look numeric names
up: the op's row then says why, and the other rows stay msaccucmp's.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ffts_cases import CASES, _graphs, _manual, _off, _write
from fusion_switch.compare.result_csv import read_result_csv
from fusion_switch.readers.dump_write import TensorSpec
from fusion_switch.readers.dumpdir import scan_dump_dir
from fusion_switch.synth.generator import generate_case
from mapping_cases import FIRST_NUMBER, MAPPING, listed_real_names, number_files, write_mapping
from oracle import OracleUnavailable
from test_ffts_slices_oracle import STOPS, run_both
from test_oracle import STAMP, X4, _compared_with_msaccucmp, _handmade, _one_op_case, compare_both

pytestmark = pytest.mark.oracle

# an op name long enough that its dump file's name is not allowed (over 255 bytes)
LONG = "model_block3_" + "fp32_vars_conv2d_39_" * 12


def _same_but_for(ours: Path, theirs: Path, op: str) -> None:
    """The two CSVs have one header and the same rows but those of ``op``."""
    our_head, our_rows = read_result_csv(ours)
    their_head, their_rows = read_result_csv(theirs)
    assert our_head == their_head
    assert [r for r in our_rows if r[2] != op] == [r for r in their_rows if r[2] != op]


def _op_row(outcome, op: str):
    (row,) = (row for row in outcome.rows if row.npu_dump == op and not row.tensor_index)
    return row


# ----------------------------------------------------------------------------- plain ops


def test_a_generated_case_with_numeric_names_is_msaccucmp_s(tmp_path):
    """Every fusion-on file and every other fusion-off file numbered: device formats,
    TransData and Cast ops, multi-output ops, all found through mapping.csv."""
    case = generate_case(
        tmp_path / "case", n_ops=60, seed=25, graph_text=False, faults=["dropped_bias@0"]
    )
    number_files(case.on_dump)
    every_other = set(sorted(os.listdir(case.off_dump))[::2])
    number_files(case.off_dump, lambda name: name in every_other)
    found = compare_both(case, tmp_path)
    assert found["byte_identical"] and found["rows"] > 100


def test_a_name_too_long_to_write_is_read_from_mapping_csv(tmp_path):
    """The reason CANN writes mapping.csv: a file named ``Relu.{op}.1.1.{stamp}`` would be
    longer than the file system allows."""
    real = f"Relu.{LONG}.1.1.{STAMP}"
    with pytest.raises(OSError):  # the case is what it says
        (tmp_path / real).write_bytes(b"")
    case = _one_op_case(
        tmp_path,
        [(str(FIRST_NUMBER), TensorSpec(X4 * 1.01))],
        [(f"Relu.b.1.1.{STAMP}", TensorSpec(X4))],
        on_name=LONG,
    )
    write_mapping(case[0], {str(FIRST_NUMBER): real})
    outcome, found = _compared_with_msaccucmp(tmp_path, case)
    assert found["byte_identical"]
    assert any(r.tensor_index == f"{LONG}:output:0" and r.compared for r in outcome.rows)


@pytest.mark.parametrize("numbered", ["newest", "oldest", "all"])
def test_the_file_compared_of_an_op_dumped_several_times_with_numeric_names(tmp_path, numbered):
    """msaccucmp sorts an op's files by their names as listed: a numeric name sorts as stamp
    1, before every real one, and numeric names tie (the folder's listing order decides), so
    with the newest file numbered it compares the next newest. They are all dumps of the op;
    we compare the one it compares. File ``k`` holds ``X4 * (k + 1)``: which file was compared
    shows in every metric."""
    names = [f"Relu.b.{k + 1}.1.{STAMP + 5 * k}" for k in range(3)]
    off_files = [(name, TensorSpec(X4 * (k + 1))) for k, name in enumerate(names)]
    case = _one_op_case(tmp_path, [(f"Relu.f.1.1.{STAMP}", TensorSpec(X4))], off_files)
    chosen = {"newest": names[-1:], "oldest": names[:1], "all": names}[numbered]
    number_files(case[1], lambda name: name in chosen)
    outcome, found = _compared_with_msaccucmp(tmp_path, case)
    assert found["byte_identical"]
    compared = {"newest": 1, "oldest": 2}.get(numbered)  # all: the listing decides
    if compared is not None:
        (row,) = (r for r in outcome.rows if r.tensor_index == "f:output:0")
        assert row.metrics["MaxAbsoluteError"] == 4 * compared


@pytest.mark.parametrize("numbered", ["all", "one member"])
def test_an_l1_group_with_numeric_names(tmp_path, numbered):
    """msaccucmp orders an L1 group's ops by their files' stamps, a numeric name's being 1."""
    case = _handmade(tmp_path / "case")
    if numbered == "all":
        number_files(case[0])
        number_files(case[1])
    else:
        number_files(case[0], lambda name: name.startswith("Relu.l1_relu."))
    _, found = _compared_with_msaccucmp(tmp_path, case)
    assert found["byte_identical"]


def _left_out(mapping: Path, rows: dict[str, str]) -> None:
    mapping.write_text("".join(f"{n},{r}\n" for n, r in rows.items() if r.startswith("Relu")))


def _swapped(mapping: Path, rows: dict[str, str]) -> None:
    mapping.write_text("".join(f"{r},{n}\n" for n, r in rows.items()))


def _three_columns(mapping: Path, rows: dict[str, str]) -> None:
    mapping.write_text(
        "".join(f"{n},{r}{',x' * r.startswith('MatMul')}\n" for n, r in rows.items())
    )


@pytest.mark.parametrize(
    "damage",
    [
        lambda mapping, rows: mapping.unlink(),
        lambda mapping, rows: mapping.rename(mapping.parent.parent / MAPPING),
        _left_out,
        _swapped,
        _three_columns,
    ],
    ids=["none", "one folder up", "a row left out", "columns swapped", "three columns"],
)
def test_numeric_names_mapping_csv_does_not_name(tmp_path, damage):
    """msaccucmp reads the mapping.csv of the dump folder it is given (no other), numeric
    name first, rows of two columns only; a numeric file it does not list is skipped, its op
    has no dump. Two fusion-on files (the second of an L1 group, a MatMul) numbered."""
    case = _handmade(tmp_path / "case")
    rows = number_files(case[0], lambda name: name.startswith(("Relu.l1_relu.", "MatMul.mm.")))
    damage(Path(case[0]) / MAPPING, rows)
    outcome, found = _compared_with_msaccucmp(tmp_path, case)
    assert found["byte_identical"]
    assert any(
        r.npu_dump == "mm" and "There is no dump file" in r.fail_reason[0] for r in outcome.rows
    )


@pytest.mark.parametrize("content", ["", "1000001;MatMul.mm.3.1.1700000000000003\n"])
def test_a_mapping_csv_that_lists_nothing_stops_msaccucmp_and_is_said_here(tmp_path, content):
    """msaccucmp looks a numeric name up in an empty mapping, gets None for its real name and
    stops (an AttributeError): no CSV. Ours compares the rest and names each numeric file it
    cannot match to an op (the guilty op's may be one of them)."""
    case = _handmade(tmp_path / "case")
    number_files(case[0], lambda name: name.startswith(("Relu.l1_relu.", "MatMul.mm.")))
    (Path(case[0]) / MAPPING).write_text(content)
    theirs, outcome = run_both(tmp_path, case)
    assert isinstance(theirs, OracleUnavailable) and "endswith" in str(theirs)
    for number in ("1000001", "1000002"):
        assert any(error.startswith(f"{Path(case[0]) / number}: ") for error in outcome.errors)
    assert any(MAPPING in note for note in outcome.notes)
    assert any(r.tensor_index == "split:output:0" and r.compared for r in outcome.rows)


# ----------------------------------------------------------------------------- FFTS+ files

# msaccucmp stops on these: an FFTS+ op without a cut axis compares the file it picks by the
# fifth dot field of the names as listed, and a numeric name has none (an IndexError)
NO_CUT_AXIS = {"auto_cut_axis_none", "auto_cut_none_no_stream_thread1_older"}
# of three parts or more, the last numbered sorts between the first and the second: msaccucmp
# joins the parts out of place
OUT_OF_PLACE = {"auto_unordered_task_ids_manual_listing", "manual_ten_slices"}


def _number_the_last_part(folder: Path) -> str:
    """Number the last file (in msaccucmp's order) of the folder's op of the most files."""
    index = scan_dump_dir(folder)
    op = max(index.op_names, key=lambda name: (len(index.entries(name)), name != "n"))
    last = index.entries(op)[-1].path.name
    number_files(folder, lambda name: name == last)
    return op


@pytest.mark.parametrize("name", sorted(set(CASES) - STOPS))
def test_an_ffts_op_with_one_file_named_by_number(tmp_path, name):
    """Each FFTS+ case with the last part of its op of several files numbered, on both sides:
    a numeric name sorts as thread or slice 1 of stamp 1, so two parts keep their order."""
    case = CASES[name](tmp_path / "case")
    ops = {_number_the_last_part(Path(case[0])), _number_the_last_part(Path(case[1]))}
    theirs, outcome = run_both(tmp_path, case)
    if name not in NO_CUT_AXIS | OUT_OF_PLACE:
        assert outcome.csv_path.read_text() == theirs.read_text()
        return
    (op,) = ops - {"b"}
    row = _op_row(outcome, op)
    assert not row.compared and MAPPING in row.fail_reason[0]
    if name in NO_CUT_AXIS:
        assert read_result_csv(theirs)[1] == []  # msaccucmp stopped: its header alone
        numbered = Path(case[0]) / str(FIRST_NUMBER)  # the file named, not the first one
        assert f"[{op}] {numbered}: " in row.fail_reason[0]
        assert "fifth dot field" in row.fail_reason[0]
        return
    assert "out of place" in row.fail_reason[0]
    _same_but_for(outcome.csv_path, theirs, op)


def _long_slices(root: Path) -> tuple:
    """Two slices of an op whose name makes its files' names too long: written under short
    names (numbered later), listed under their real ones."""
    return _write(root, *_graphs(on_name=f"{LONG}f"), [_manual(0), _manual(1)], _off())


def _long_real(name: str) -> str:
    return name.replace(".f_lxslice", f".{LONG}f_lxslice")


BUILDS = {
    "auto threads": (CASES["auto_two_threads"], "f", lambda name: name),
    "threads on both sides": (CASES["auto_both_sides"], "f", lambda name: name),
    "manual slices": (CASES["manual_two_slices"], "f", lambda name: name),
    "long-named slices": (_long_slices, f"{LONG}f", _long_real),
}


def _all_numbered(root: Path, build: str, in_order: bool, side: int = 0) -> tuple:
    """The case ``build`` with every file of one side (0: fusion-on) numbered, numbers tried
    until the folder lists the op's two parts in their order (``in_order``) or not."""
    builder, _, real = BUILDS[build]
    for attempt in range(50):
        case = builder(root / f"try{attempt}")
        renamed = number_files(case[side], first=FIRST_NUMBER + 10 * attempt, real=real)
        parts = [n for n in listed_real_names(case[side], renamed) if not n.startswith("Neg.")]
        if (parts == sorted(parts)) == in_order:
            return case
    raise AssertionError(
        f"the file system never listed the parts {['out of', 'in'][in_order]} order"
    )


@pytest.mark.parametrize("in_order", [True, False], ids=["listed in order", "listed out of order"])
@pytest.mark.parametrize("build", sorted(BUILDS))
def test_ffts_parts_all_named_by_number(tmp_path, build, in_order):
    """Numeric names tie in msaccucmp's sorts, so it joins the parts in the folder's listing
    order: the op's tensor when the folder lists them in their order (byte for byte), else
    a tensor of misplaced parts (cosine 0 here, the fused op innocent): not imitated, the
    op's row says why."""
    case = _all_numbered(tmp_path / "case", build, in_order)
    theirs, outcome = run_both(tmp_path, case)
    if in_order:
        assert outcome.csv_path.read_text() == theirs.read_text()
        return
    op = BUILDS[build][1]
    their_row = next(r for r in read_result_csv(theirs)[1] if r[8] == f"{op}:output:0")
    assert their_row[10] == "0.000000"  # msaccucmp's CosineSimilarity of the misplaced parts
    row = _op_row(outcome, op)
    assert not row.compared and "out of place" in row.fail_reason[0]
    _same_but_for(outcome.csv_path, theirs, op)


def test_fusion_off_parts_joined_out_of_place_are_said_in_the_fused_op_s_row(tmp_path):
    """The same on the fusion-off side: the row of the fused op's output paired with them
    says why, msaccucmp's compares the misplaced parts."""
    case = _all_numbered(tmp_path / "case", "threads on both sides", False, side=1)
    theirs, outcome = run_both(tmp_path, case)
    their_row = next(r for r in read_result_csv(theirs)[1] if r[8] == "f:output:0")
    assert their_row[10] == "0.000000"
    (row,) = (r for r in outcome.rows if r.tensor_index == "f:output:0")
    assert not row.compared and "out of place" in row.fail_reason[0]
    assert row.fail_reason[0].startswith(f"{Path(case[1])}{os.sep}")
    _same_but_for(outcome.csv_path, theirs, "f")
