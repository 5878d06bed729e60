"""The measure stage reads each dump file by its path text (issue 16, nineteenth round): a
``Path`` made per file (joined, hashed as a cache key, turned back into text for the row) was
~10% of the stage. ``read_dump`` of a text path gives the DumpFile it gives for the Path (the
path kept as given), ``DumpDir.latest_location`` is ``latest`` as text, and a comparison makes
no Path for any dump file."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from fusion_switch.compare import engine
from fusion_switch.compare.engine import CompareRequest, run_compare
from fusion_switch.readers import dumpdir
from fusion_switch.readers.dump import DumpError, read_dump
from fusion_switch.readers.dumpdir import scan_dump_dir
from fusion_switch.synth.generator import generate_case


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    return generate_case(tmp_path_factory.mktemp("case"), n_ops=40, seed=3, graph_text=False)


def _leaf(root: Path) -> Path:
    return Path(next(folder for folder, _, files in os.walk(root) if files))


def _fields(dump) -> tuple:
    return (
        dump.op_name,
        dump.version,
        dump.file_size,
        dump.header_len,
        [(t.index, t.data_type, t.format, tuple(t.shape), t.data_offset) for t in dump.inputs],
        [(t.index, t.data_type, t.format, tuple(t.shape), t.data_offset) for t in dump.outputs],
        dump._content,
    )


def test_a_text_path_reads_as_its_path_does(case):
    leaf = _leaf(case.on_dump)
    for path in sorted(leaf.iterdir())[:25]:
        as_path, as_text = read_dump(path), read_dump(str(path))
        assert as_path.path == path
        assert as_text.path == str(path)
        assert _fields(as_text) == _fields(as_path)
        assert str(as_text.path) == str(as_path.path)


def test_a_text_path_names_the_file_in_its_errors(tmp_path):
    bad = tmp_path / "Relu.relu.1.2.1700000000000000"
    bad.write_bytes(b"\x00" * 4)
    with pytest.raises(DumpError) as by_path:
        read_dump(bad)
    with pytest.raises(DumpError) as by_text:
        read_dump(str(bad))
    assert str(by_text.value) == str(by_path.value)
    assert by_text.value.path == str(bad)


def test_a_text_npy_path_reads_as_its_path_does(tmp_path):
    path = tmp_path / "relu.0.1700000000000000.npy"
    np.save(path, np.arange(6, dtype=np.float32).reshape(2, 3))
    as_text, as_path = read_dump(str(path)), read_dump(path)
    assert [tuple(t.shape) for t in as_text.outputs] == [tuple(t.shape) for t in as_path.outputs]


def test_latest_location_is_latest_as_text(case):
    folder = scan_dump_dir(_leaf(case.off_dump))
    assert folder.op_names
    for name in folder.op_names:
        assert folder.latest_location(name) == str(folder.latest(name))
    assert folder.latest_location("no such op") is None


def test_a_comparison_makes_no_path_per_dump_file(case, tmp_path, monkeypatch):
    made = []
    joined = dumpdir._joined

    def counting(location):
        made.append(location)
        return joined(location)

    measure = engine.measure

    def measuring(plan, cancel=None):
        monkeypatch.setattr(dumpdir, "_joined", counting)
        yield from measure(plan, cancel)

    monkeypatch.setattr(engine, "measure", measuring)
    request = CompareRequest(
        case.on_dump, case.off_dump, case.on_graph, case.off_graph, tmp_path, workers=1
    )
    outcome = run_compare(request)
    assert outcome.counts.compared > 0
    assert made == []
    rows = [row for row in outcome.rows if row.right_path]
    assert rows and all(
        type(row.right_path) is str and os.path.isfile(row.right_path) for row in rows
    )
    assert all(type(row.left_path) is str for row in outcome.rows if row.left_path)
