"""The per-row shortcuts of the measure stage (issue 16) give what the definitions they inline
give: the row's first cells (``_msaccucmp_shape``, ``_address``), the direct path's dtype
table (``DumpTensor.dtype``), the CSV cells (``ResultRow.shape_text``, ``fail_reason_text``,
``neutralised`` on every cell), and numpy's error state held once per chunk.

Each test is differential: the shortcut against the slower definition it replaced, over inputs
that reach every branch (DT_UNDEFINED tensors, a zero address, unknown dtype codes, formula
cells, missing metric cells).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from fusion_switch.compare.metrics import ALGORITHMS, NAN_TEXT
from fusion_switch.compare.metrics.native import STORED_KINDS, stored_dtype
from fusion_switch.compare.result import ResultRow
from fusion_switch.compare.result_csv import cells, neutralised
from fusion_switch.compare.workers import (
    GroupComparer,
    _address,
    _dtype_name,
    _msaccucmp_shape,
)
from fusion_switch.readers.dtypes import DATA_TYPE_NAMES, decode_dtype
from fusion_switch.readers.dump import DumpTensor, read_dump
from fusion_switch.readers.dump_write import TensorSpec, write_dump
from hypothesis import given, settings
from hypothesis import strategies as st


def _reference_raw_dtype(code: int):
    """The check ``stored_tensor`` made on every call before the table."""
    info = decode_dtype(code)
    if not info.plain or info.little.char not in STORED_KINDS:
        return None
    return info.little.char, _dtype_name(info.little), info.little.itemsize


@pytest.mark.parametrize("code", sorted({*DATA_TYPE_NAMES, 0, 99, 1000}))
def test_the_direct_paths_dtype_table_agrees_with_the_dtype_decoder(code):
    tensor = DumpTensor("output", 0, code, 2, (4,))
    expected = _reference_raw_dtype(code)
    assert stored_dtype(tensor) == expected  # first call fills the table
    assert stored_dtype(tensor) == expected  # second call reads it


class _RowsOnly(GroupComparer):
    """compare_tensor's first cells only: the pairing and measuring are stood in for."""

    def __init__(self) -> None:
        self.errors = []

    def load_pair(self, row, op, dump, tensor, is_input, tensor_id, shape=None):
        return None, ""


class _Op:
    name = "conv1"
    type = "Conv2D"
    group = 7


def test_a_tensor_rows_first_cells_are_the_helpers_values(tmp_path: Path):
    path = write_dump(
        tmp_path / "conv1.dump",
        "conv1",
        [
            TensorSpec(np.arange(6, dtype=np.float32).reshape(2, 3)),
            TensorSpec(np.zeros(5, np.uint8)),
        ],
        [TensorSpec(np.float16(1.5).reshape(()))],
    )
    dump = read_dump(path)
    # branches of the inlined helpers: DT_UNDEFINED with bytes, a zero and a set address
    tensors = [
        (replace(dump.inputs[0], address=0), True),
        (replace(dump.inputs[1], data_type=0, address=77), True),
        (replace(dump.outputs[0], address=0x1234), False),
        (dump.outputs[0], False),
    ]
    comparer = _RowsOnly()
    for tensor, is_input in tensors:
        row = comparer.compare_tensor(_Op(), ("a", "b"), dump, tensor, is_input)
        assert row.shape == _msaccucmp_shape(tensor)
        assert row.left_address == _address(tensor)
        assert row.left_path == str(dump.path)
        assert row.tensor_index == f"conv1:{'input' if is_input else 'output'}:{tensor.index}"
        assert (row.index, row.op_type, row.position) == (7, "Conv2D", tensor.index)
    undefined = comparer.compare_tensor(_Op(), ("a", "b"), dump, tensors[1][0], True)
    assert (undefined.shape, undefined.left_address) == ((5,), "77")


def _reference_cells(row: ResultRow, algorithms, left_address=True, right_address=True):
    """``cells`` as written before the inlining: the row's properties, every cell neutralised."""
    out = [str(row.index), row.op_type, row.npu_dump, row.left_dtype]
    if left_address:
        out.append(row.left_address)
    out += [row.ground_truth, row.right_dtype]
    if right_address:
        out.append(row.right_address)
    out += [row.tensor_index if row.tensor_index is not None else NAN_TEXT, row.shape_text]
    out += [row.metric_text.get(name, NAN_TEXT) for name in algorithms]
    out.append(row.fail_reason_text)
    return [neutralised(cell) for cell in out]


TEXT = st.one_of(
    st.sampled_from(["", "NaN", "-0.5", "=SUM(A1)", "a;@b", "＝x", "1e-3", "+1"]), st.text()
)


@settings(max_examples=300, deadline=None)
@given(
    shape=st.one_of(st.none(), st.lists(st.integers(0, 10**6), max_size=6).map(tuple)),
    tensor=st.one_of(st.none(), TEXT),
    reasons=st.lists(TEXT, max_size=3),
    texts=st.dictionaries(st.sampled_from(list(ALGORITHMS)), TEXT),
    names=TEXT,
    addresses=st.tuples(st.booleans(), st.booleans()),
)
def test_the_csv_cells_are_the_rows_properties_neutralised(
    shape, tensor, reasons, texts, names, addresses
):
    row = ResultRow(
        3,
        names,
        names + "x",
        "-g",
        "op",
        tensor,
        shape=shape,
        left_dtype="float16",
        left_address="@1",
        right_address="12",
        metric_text=texts,
        fail_reason=reasons,
    )
    for algorithms in (list(ALGORITHMS), ["MaxAbsoluteError", "CosineSimilarity"]):
        left, right = addresses
        got = cells(row, algorithms, left_address=left, right_address=right)
        assert got == _reference_cells(row, algorithms, left, right)


def test_a_chunk_runs_with_numpys_errors_ignored_and_restores_them(monkeypatch):
    """The direct path's kernel calls np.log without an np.errstate of its own now: the chunk
    holds one around all its groups, and the caller's error state is back afterwards."""
    seen = []

    def group(self, members):
        seen.append(np.geterr())
        return [], len(members)

    monkeypatch.setattr(GroupComparer, "compare_group", group)
    comparer = GroupComparer.__new__(GroupComparer)
    comparer.groups, comparer.errors = [["a"], ["b"]], []
    with np.errstate(all="raise"):
        result = comparer.compare_groups([0, 1], chunk=4)
        assert np.geterr()["divide"] == "raise"
    assert result.ops == 2 and len(seen) == 2
    assert all(set(state.values()) == {"ignore"} for state in seen)
