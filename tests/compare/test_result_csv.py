"""The result CSV: msaccucmp's header, cells, dialect, and no half-written file."""

from __future__ import annotations

import dataclasses
import os
import re

import pytest
from fusion_switch.compare import result_csv
from fusion_switch.compare.metrics import ALGORITHMS
from fusion_switch.compare.result import ResultRow
from fusion_switch.compare.result_csv import (
    CsvLayout,
    ResultCsvWriter,
    cells,
    header,
    read_result_csv,
    render_rows,
    result_file_name,
    write_result_csv,
)


def tensor_row() -> ResultRow:
    return ResultRow(
        index=3,
        op_type="Conv2D",
        npu_dump="conv_relu",
        ground_truth="conv,relu",
        op_name="conv_relu",
        tensor_index="conv_relu:output:0",
        kind="output",
        position=0,
        shape=(1, 16, 8, 8),
        left_dtype="float16",
        left_address="1234",
        right_dtype="float32",
        metrics={"CosineSimilarity": 0.5, "StandardDeviation": None},
        metric_text={
            "CosineSimilarity": "0.500000",
            "StandardDeviation": "(1.000;2.000),(1.000;2.000)",
        },
        fail_reason=["first", "second"],
    )


def op_row() -> ResultRow:
    return ResultRow(
        index=0,
        op_type="Data",
        npu_dump="input",
        ground_truth="*",
        op_name="input",
        fail_reason=['[input] There is no dump file "x".'],
    )


def test_header_is_msaccucmps():
    assert header(ALGORITHMS) == [
        "Index",
        "OpType",
        "NPUDump",
        "DataType",
        "Address",
        "GroundTruth",
        "DataType",
        "Address",
        "TensorIndex",
        "Shape",
        *ALGORITHMS,
        "CompareFailReason",
    ]


@pytest.mark.parametrize(
    ("left", "right", "dropped"),
    [(False, True, 4), (True, False, 7)],
)
def test_npy_side_has_no_address_column(left, right, dropped):
    full = header(["CosineSimilarity"])
    reduced = header(["CosineSimilarity"], left_address=left, right_address=right)
    assert reduced == full[:dropped] + full[dropped + 1 :]


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        (
            tensor_row(),
            [
                "3",
                "Conv2D",
                "conv_relu",
                "float16",
                "1234",
                "conv,relu",
                "float32",
                "NaN",
                "conv_relu:output:0",
                "[1,16,8,8]",
                "0.500000",
                "(1.000;2.000),(1.000;2.000)",
                "NaN",
                "first,second",
            ],
        ),
        (
            op_row(),
            [
                "0",
                "Data",
                "input",
                "NaN",
                "NaN",
                "*",
                "NaN",
                "NaN",
                "NaN",
                "NaN",
                "NaN",
                "NaN",
                "NaN",
                '[input] There is no dump file "x".',
            ],
        ),
    ],
)
def test_cells(row, expected):
    chosen = ["CosineSimilarity", "StandardDeviation", "MaxAbsoluteError"]
    assert cells(row, chosen) == expected


def test_file_uses_excel_dialect_and_round_trips(tmp_path):
    path = write_result_csv(tmp_path, [tensor_row(), op_row()], ["CosineSimilarity"])
    raw = path.read_bytes()
    assert raw.count(b"\r\n") == 3
    assert b'"conv,relu"' in raw and b'"[1,16,8,8]"' in raw
    head, rows = read_result_csv(path)
    assert head == header(["CosineSimilarity"])
    assert rows[0][2] == "conv_relu" and rows[1][-1] == '[input] There is no dump file "x".'


# ----------------------------------------------------------------------------- rendered rows


def awkward_rows() -> list[ResultRow]:
    """Rows whose cells need quoting, neutralising and the NaN texts."""
    formula = tensor_row()
    formula.op_type = formula.npu_dump = "=HYPERLINK(1)"
    quoted = tensor_row()
    quoted.ground_truth = 'a "quoted", name'
    quoted.shape = None
    return [tensor_row(), op_row(), formula, quoted]


def written_bytes(folder, layout: CsvLayout, rows, rendered=None) -> bytes:
    name = "result_20260101000000.csv"
    with ResultCsvWriter(
        folder,
        list(layout.algorithms),
        left_address=layout.left_address,
        right_address=layout.right_address,
        file_name=name,
    ) as writer:
        writer.write(rows[:1])
        writer.write(rows[1:], rendered)
        return writer.commit().read_bytes()


@pytest.mark.parametrize("left, right", [(True, True), (False, True), (True, False)])
def test_rows_rendered_by_a_worker_are_the_bytes_the_writer_writes(tmp_path, left, right):
    layout = CsvLayout(("CosineSimilarity", "StandardDeviation"), left, right)
    rows = awkward_rows()
    rendered = render_rows(rows[1:], layout)
    assert rendered.text.count("\r\n") == 3 and " =HYPERLINK(1)" in rendered.text
    mine = written_bytes(tmp_path / "rendered", layout, rows, rendered)
    assert mine == written_bytes(tmp_path / "plain", layout, rows)


def test_rows_rendered_under_another_layout_are_rendered_again(tmp_path):
    """The text is copied only into a file of its own layout; otherwise the rows decide."""
    rows = awkward_rows()
    layout = CsvLayout(("CosineSimilarity",), True, True)
    for other in (
        CsvLayout(("CosineSimilarity",), False, True),
        CsvLayout(("StandardDeviation",), True, True),
    ):
        rendered = render_rows(rows[1:], other)
        mine = written_bytes(
            tmp_path / f"r{len(other.algorithms)}{other.left_address}", layout, rows, rendered
        )
        assert mine == written_bytes(tmp_path / "plain", layout, rows)
        assert rendered.text.encode() not in mine


def test_result_file_name_is_a_local_timestamp():
    assert re.fullmatch(r"result_\d{14}\.csv", result_file_name())
    assert result_file_name(0).startswith("result_19")


@pytest.fixture(params=["unnamed", "named"])
def temporaries(request, monkeypatch):
    """Both ways of writing: an unnamed file (O_TMPFILE), and the named temporary file taken
    where the file system cannot make one."""
    if request.param == "named":
        monkeypatch.setattr(result_csv, "_open_unnamed", lambda folder: None)
    return request.param


def test_only_the_final_file_remains(tmp_path, temporaries):
    with ResultCsvWriter(tmp_path, ["CosineSimilarity"]) as writer:
        writer.write([tensor_row()])
        assert writer.unnamed == (temporaries == "unnamed")
        assert writer.temp_path.exists() == (temporaries == "named")
        assert not writer.path.exists()
        if temporaries == "unnamed":  # nothing to see until the file is complete
            assert list(tmp_path.iterdir()) == []
        final = writer.commit()
    assert [p.name for p in tmp_path.iterdir()] == [final.name]
    assert final.read_text().startswith("Index,")
    assert oct(final.stat().st_mode & 0o777) == oct(0o644 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_commit_replaces_a_result_of_the_same_name(tmp_path, temporaries):
    name = "result_20260101000000.csv"
    (tmp_path / name).write_text("an older run of the same second")
    path = write_result_csv(tmp_path, [tensor_row()], ["CosineSimilarity"], file_name=name)
    assert path.read_text().startswith("Index,")
    assert [p.name for p in tmp_path.iterdir()] == [name]


def test_runs_of_the_same_second_keep_a_result_each(tmp_path, temporaries, monkeypatch):
    """A review: two runs into one folder within a second wrote one result_<time>.csv, the
    later replacing the earlier, and the earlier's summary named the later's rows. The
    timestamped name is now the first run's; the next take _1, _2."""
    monkeypatch.setattr(result_csv, "result_file_name", lambda: "result_20260101000000.csv")
    paths = []
    for number in range(3):
        with ResultCsvWriter(tmp_path, ["CosineSimilarity"]) as writer:
            writer.write([dataclasses.replace(tensor_row(), npu_dump=f"op{number}")])
            paths.append(writer.commit())
    assert [p.name for p in paths] == [
        "result_20260101000000.csv",
        "result_20260101000000_1.csv",
        "result_20260101000000_2.csv",
    ]
    for number, path in enumerate(paths):
        assert f"op{number}" in path.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == [p.name for p in paths]


def test_where_no_hard_link_can_be_made_the_first_free_name_is_taken(tmp_path, monkeypatch):
    def no_links(*args, **kwargs):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(result_csv, "result_file_name", lambda: "result_20260101000000.csv")
    monkeypatch.setattr(result_csv, "_open_unnamed", lambda folder: None)
    (tmp_path / "result_20260101000000.csv").write_text("an earlier run's")
    with ResultCsvWriter(tmp_path, ["CosineSimilarity"]) as writer:
        writer.write([tensor_row()])
        monkeypatch.setattr(result_csv.os, "link", no_links)
        path = writer.commit()
    assert path.name == "result_20260101000000_1.csv" and path.read_text().startswith("Index,")
    assert (tmp_path / "result_20260101000000.csv").read_text() == "an earlier run's"
    assert len(list(tmp_path.iterdir())) == 2


def test_an_unnamed_file_that_cannot_be_linked_is_copied_to_its_name(tmp_path, monkeypatch):
    """Where /proc cannot link the unnamed file (a sandbox, no /proc), its text is copied: the
    comparison's result is never lost at the last step."""
    import errno

    def no_link(*args, **kwargs):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    rows = [tensor_row(), tensor_row()]
    expected = (write_result_csv(tmp_path / "linked", rows, ["CosineSimilarity"])).read_bytes()
    monkeypatch.setattr(result_csv.os, "link", no_link)
    with ResultCsvWriter(tmp_path / "copied", ["CosineSimilarity"]) as writer:
        assert writer.unnamed
        writer.write(rows)
        path = writer.commit()
    assert path.read_bytes() == expected
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_a_copy_that_fails_leaves_nothing_behind(tmp_path, monkeypatch):
    """The copy of an unnamed file that /proc cannot link, cut short (a full disk): neither
    the result nor half a copy under the temporary name is left."""
    import errno
    import shutil

    def no_link(*args, **kwargs):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    def full(source, target):
        target.write(source.read(10))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(result_csv.os, "link", no_link)
    monkeypatch.setattr(shutil, "copyfileobj", full)
    with pytest.raises(OSError, match="No space"):
        write_result_csv(tmp_path, [tensor_row()], ["CosineSimilarity"])
    assert list(tmp_path.iterdir()) == []


def test_an_error_leaves_nothing_behind(tmp_path, temporaries):
    with pytest.raises(RuntimeError), ResultCsvWriter(tmp_path, ["CosineSimilarity"]) as writer:
        writer.write([tensor_row()])
        raise RuntimeError("stop")
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------- trust (issue 12)


@pytest.mark.parametrize(
    "name",
    ["=HYPERLINK(1)", "+cmd", "-2+3", "@SUM(A1)", "%0A", "＝x", "conv;=1+1", "a;@b"],
)
def test_formula_cells_are_neutralised_as_msaccucmp_would(tmp_path, name):
    """msaccucmp's sanitize_csv_value pattern; the 'replace' form puts a space in front."""
    row = tensor_row()
    row.op_name = row.npu_dump = row.ground_truth = row.op_type = name
    written = cells(row, ["CosineSimilarity"])
    assert written[1] == written[2] == " " + name
    path = write_result_csv(tmp_path, [row], ["CosineSimilarity"])
    _, rows = read_result_csv(path)
    assert rows[0][1] == " " + name


@pytest.mark.parametrize("value", ["-0.5", "-inf", "+1e-3", "NaN", "conv-1", "a+b", "x@y"])
def test_numbers_and_inner_signs_are_left_alone(value):
    row = tensor_row()
    row.op_type = value
    assert cells(row, [])[1] == value


def test_a_symlink_planted_at_the_temporary_path_is_not_followed(
    tmp_path, monkeypatch, temporaries
):
    target = tmp_path / "victim.txt"
    target.write_text("keep me")
    monkeypatch.setattr("fusion_switch.compare.result_csv.os.getpid", lambda: 4242)
    name = "result_20260101000000.csv"
    planted = tmp_path / f".{name}.4242.part"
    planted.symlink_to(target)
    with pytest.raises(OSError):  # the named file at once, the unnamed one when it is named
        write_result_csv(tmp_path, [tensor_row()], ["CosineSimilarity"], file_name=name)
    assert target.read_text() == "keep me"
    assert planted.is_symlink(), "a file this run did not make was removed"
    assert sorted(p.name for p in tmp_path.iterdir()) == [planted.name, "victim.txt"]


def test_a_symlink_planted_at_the_output_path_is_replaced_not_followed(tmp_path):
    target = tmp_path / "victim.txt"
    target.write_text("keep me")
    name = "result_20260101000000.csv"
    (tmp_path / name).symlink_to(target)
    path = write_result_csv(tmp_path, [tensor_row()], ["CosineSimilarity"], file_name=name)
    assert target.read_text() == "keep me"
    assert not path.is_symlink() and path.read_text().startswith("Index")


def _ended_pid() -> str:
    """The pid of a process that has ended."""
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_a_live_runs_temporary_file_is_kept_though_its_pid_looks_dead(tmp_path):
    """A review: a run in another pid namespace (a container binding the folder) or on another
    host (shared storage) has a pid this one sees as ended, and its temporary files were
    removed under it. A run holds a lock on each of its temporary files; a file whose lock is
    held is kept, whatever its pid."""
    import fcntl

    dead = _ended_pid()
    live = [
        tmp_path / f".result_20250101000000.csv.{dead}.part",
        tmp_path / f".summary.json.{dead}.0123abcd.tmp",
    ]
    held = []
    for path in live:
        handle = path.open("w")
        fcntl.flock(handle, fcntl.LOCK_EX)  # as the other run holds it
        held.append(handle)
    try:
        write_result_csv(tmp_path, [tensor_row()], ["CosineSimilarity"])
        assert all(path.exists() for path in live)
    finally:
        for handle in held:
            handle.close()
    write_result_csv(tmp_path, [tensor_row()], ["CosineSimilarity"])  # its run has ended now
    assert not any(path.exists() for path in live)


def test_a_run_locks_its_temporary_files(tmp_path, monkeypatch, temporaries):
    import fcntl

    locked = []
    real = fcntl.flock

    def recording(fd, operation):
        locked.append(operation)
        return real(fd, operation)

    monkeypatch.setattr(result_csv.fcntl, "flock", recording)
    with ResultCsvWriter(tmp_path, ["CosineSimilarity"]) as writer:
        writer.write([tensor_row()])
        assert locked and locked[0] & fcntl.LOCK_EX
        writer.commit()


def test_a_stale_temporary_file_of_a_dead_run_is_removed(tmp_path):
    dead = _ended_pid()
    stale = [
        tmp_path / f".result_20250101000000.csv.{dead}.part",
        tmp_path / f".summary.json.{dead}.0123abcd.tmp",
        tmp_path / f".report.html.{dead}.0123abcd.tmp",
    ]
    alive = tmp_path / f".result_20250101000000.csv.{os.getpid()}.part"
    foreign = tmp_path / ".notes.part"
    for path in [*stale, alive, foreign]:
        path.write_text("half")
    write_result_csv(tmp_path, [tensor_row()], ["CosineSimilarity"])
    assert not any(path.exists() for path in stale)
    assert alive.exists() and foreign.exists()
