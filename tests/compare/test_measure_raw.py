"""The direct measure path (``workers.GroupComparer._measure_raw`` over ``_kernel.metrics_raw``)
writes the same row cells as the general path (read, align, ``metric_cells``) it short-cuts.

Each test reads real dump files (written in CANN's layout, or cut from the real samples) and
measures one tensor pair both ways: through the direct path, and through the calls the general
path makes (``_values``, ``align``, ``measure_pair``). Rows are compared field by field, values
by ``repr`` (NaN equal, -0.0 distinct). Whatever the direct path does not handle exactly must
be turned down so that the general path writes its usual message.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from fusion_switch.compare import metrics
from fusion_switch.compare.align import AlignError, TensorView, align
from fusion_switch.compare.metrics import ALGORITHMS, SizeMismatchError, native
from fusion_switch.compare.metrics.native import stored_tensor
from fusion_switch.compare.result import ResultRow
from fusion_switch.compare.workers import GroupComparer, _msaccucmp_shape, _values
from fusion_switch.readers.dump import SMALL_FILE_BYTES, DumpError, read_dump, read_npy_dump
from fusion_switch.readers.dump_write import TensorSpec, encode_dump, write_dump
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

REAL = Path(__file__).resolve().parents[1] / "data" / "real" / "dumps"  # samples/real
DTYPES = ["<f4", "<f2", "i1", "u1"]
# numpy's pairwise sum changes shape at 8, 128 and numpy's cast chunk (8192 elements)
SIZES = st.one_of(st.integers(1, 300), st.sampled_from([1, 8, 9, 127, 128, 129, 8192, 8193]))


class _Context:
    def __init__(self, algorithms: list[str]) -> None:
        self.algorithms = algorithms
        self.max_cmp_size = 0


def comparer(algorithms: list[str] | None = None) -> GroupComparer:
    """A GroupComparer with only what the measure steps read (the algorithms)."""
    made = GroupComparer.__new__(GroupComparer)
    made.ctx = _Context(list(ALGORITHMS) if algorithms is None else algorithms)  # type: ignore[assignment]
    made.errors = []
    return made


def row_for(left_path: Path, right_path: Path) -> ResultRow:
    return ResultRow(0, "Op", "a", "b", "a", left_path=str(left_path), right_path=str(right_path))


def general_row(dump, tensor, right_dump, right_tensor, algorithms=None) -> ResultRow:
    """The general path's cells (``load_pair``'s read and align, then ``measure_pair``)."""
    row = row_for(dump.path, right_dump.path)
    aligned = align(
        TensorView(
            tensor.format,
            _msaccucmp_shape(tensor),
            _values(dump, tensor),
            tensor.original_shape,
            tensor.sub_format,
        ),
        TensorView(
            right_tensor.format, _msaccucmp_shape(right_tensor), _values(right_dump, right_tensor)
        ),
    )
    comparer(algorithms).measure_pair(row, aligned, row.left_path, row.right_path)
    return row


def direct_row(dump, tensor, right_dump, right_tensor, algorithms=None) -> ResultRow | None:
    row = row_for(dump.path, right_dump.path)
    with np.errstate(all="ignore"):  # as GroupComparer.compare_groups holds it for a chunk
        taken = comparer(algorithms)._measure_raw(row, dump, tensor, right_dump, right_tensor)
    return row if taken else None


def cells(row: ResultRow) -> str:
    return repr(
        (
            row.shape,
            row.left_dtype,
            row.right_dtype,
            row.metrics,
            row.metric_text,
            row.fail_reason,
            row.std,
        )
    )


def write_pair(folder: Path, left: np.ndarray, right: np.ndarray, prefix: bytes = b""):
    """Two dump files; ``prefix`` bytes as a first input move the tensor off any alignment."""
    specs = [TensorSpec(np.frombuffer(prefix, np.uint8))] if prefix else []
    left_path = write_dump(folder / "left", "Left", [*specs, TensorSpec(left)])
    right_path = write_dump(folder / "right", "Right", outputs=[TensorSpec(right)])
    left_dump, right_dump = read_dump(left_path), read_dump(right_path)
    return left_dump, left_dump.inputs[-1], right_dump, right_dump.outputs[0]


def assert_same(left: np.ndarray, right: np.ndarray, prefix: bytes = b"", algorithms=None):
    with tempfile.TemporaryDirectory() as folder:
        pair = write_pair(Path(folder), left, right, prefix)
        direct = direct_row(*pair, algorithms=algorithms)
        assert direct is not None, "the direct path turned a plain ND pair down"
        assert cells(direct) == cells(general_row(*pair, algorithms=algorithms))


def test_the_kernel_has_the_direct_entry_and_the_workers_use_it():
    assert metrics.kernel_in_use()
    assert hasattr(native._kernel, "metrics_raw")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), n=SIZES, left=st.sampled_from(DTYPES), right=st.sampled_from(DTYPES))
def test_any_accepted_dtype_pair_gives_the_general_paths_cells(data, n, left, right):
    def values(dtype: str) -> np.ndarray:
        elements = None
        if dtype[-2] == "f":  # every float: NaN, infinities, zeros, subnormals
            elements = st.floats(width=32 if dtype == "<f4" else 16, allow_subnormal=True)
        return data.draw(hnp.arrays(np.dtype(dtype), n, elements=elements))

    prefix = data.draw(st.binary(max_size=3))
    assert_same(values(left), values(right), prefix)


@pytest.mark.parametrize("selection", [["CosineSimilarity"], ["KullbackLeiblerDivergence",
                                       "StandardDeviation", "MaxRelativeError"]])  # fmt: skip
def test_a_selection_of_metrics_gives_the_same_cells(selection):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(500).astype(np.float16)
    assert_same(x, (x * 1.01).astype(np.float32), b"\x01", selection)


@pytest.mark.parametrize(
    "left,right",
    [
        (np.zeros(64, np.float32), np.zeros(64, np.float32)),  # cosine 1.0, KL all-zero floor
        (np.zeros(64, np.float32), np.ones(64, np.float32)),  # left all zero
        (np.ones(64, np.float16), np.zeros(64, np.float16)),  # right all zero, KL inf
        (np.ones(1, np.float32), np.full(1, 2, np.float32)),  # one element: msaccucmp's scalar
    ],
)
def test_early_exits_and_their_messages(left, right):
    assert_same(left, right)


def real_tensor_bytes() -> list[bytes]:
    """Tensor bytes of the real (exception) dumps in the shared samples."""
    found = []
    for path in sorted(REAL.rglob("*"))[:12]:
        if not path.is_file():
            continue
        dump = read_dump(path)
        found += [dump.raw_bytes(t) for t in dump.tensors() if t.size >= 8]
    return found


def test_real_dump_bytes_read_as_each_dtype():
    chunks = real_tensor_bytes()
    assert chunks, f"no real dumps under {REAL}"
    for chunk in chunks[:20]:
        for dtype in DTYPES:
            size = np.dtype(dtype).itemsize
            values = np.frombuffer(chunk[: len(chunk) // size * size], dtype)[:20000]
            other = values[::-1].copy()  # a different tensor of the same values
            assert_same(values, other, b"\x05")


def test_what_the_direct_path_does_not_handle_is_left_to_the_general_path(tmp_path):
    x = np.arange(1, 25, dtype=np.float32)
    files = {
        "bool": [TensorSpec(x > 3)],
        "int32": [TensorSpec(x.astype(np.int32))],
        "undefined": [TensorSpec(x.tobytes(), data_type=0)],
        "empty shape": [TensorSpec(x, shape=[])],
        "zero dim": [TensorSpec(x, shape=[0, 4])],
        "short": [TensorSpec(x, shape=[48])],  # needs 192 bytes, size gives 96
    }
    for name, specs in files.items():
        dump = read_dump(write_dump(tmp_path / name.replace(" ", "_"), "Op", outputs=specs))
        assert stored_tensor(dump, dump.outputs[0]) is None, name
    np.save(tmp_path / "x.npy", x)
    npy = read_npy_dump(tmp_path / "x.npy")
    assert stored_tensor(npy, npy.outputs[0]) is None


@pytest.mark.parametrize("dtype", ["<f4", "<f2", "i1"])
def test_files_bigger_than_what_read_dump_keeps_are_measured_directly_too(tmp_path, dtype):
    # beyond SMALL_FILE_BYTES the header is read alone; the direct path then reads each
    # tensor's bytes itself: the same cells, without the general path's float32 copies
    n = SMALL_FILE_BYTES // np.dtype(dtype).itemsize + 1_001
    rng = np.random.default_rng(3)
    with np.errstate(all="ignore"):
        left = (rng.standard_normal(n) * 50).astype(dtype)
        right = (left.astype(np.float32) + rng.standard_normal(n).astype(np.float32)).astype(dtype)
    pair = write_pair(tmp_path, left, right, b"\x03")
    assert pair[0]._content is None and pair[2]._content is None  # not kept in memory
    direct = direct_row(*pair)
    assert direct is not None, "the direct path turned a big plain ND pair down"
    assert cells(direct) == cells(general_row(*pair))


def test_a_big_file_cut_short_after_its_header_was_read_is_left_to_the_general_path(tmp_path):
    n = SMALL_FILE_BYTES // 4 + 5_000
    left, right = np.ones(n, np.float32), np.full(n, 2, np.float32)
    pair = write_pair(tmp_path, left, right)
    path = Path(pair[2].path)
    path.write_bytes(path.read_bytes()[:-40])  # the fusion-off file loses its last values
    assert direct_row(*pair) is None
    with pytest.raises(DumpError, match="truncated"):
        general_row(*pair)


def test_different_element_counts_are_left_to_the_general_path(tmp_path):
    pair = write_pair(tmp_path, np.ones(10, np.float32), np.ones(12, np.float32))
    assert direct_row(*pair) is None


@pytest.mark.parametrize("left_format,right_format", [(0, 2), (2, 0), (3, 2), (29, 29)])
def test_layouts_other_than_nd_are_left_to_the_general_path(tmp_path, left_format, right_format):
    x = np.arange(1, 25, dtype=np.float32)
    left = read_dump(write_dump(tmp_path / "l", "L", outputs=[TensorSpec(x, format=left_format)]))
    right = read_dump(write_dump(tmp_path / "r", "R", outputs=[TensorSpec(x, format=right_format)]))
    assert direct_row(left, left.outputs[0], right, right.outputs[0]) is None


GOOD = encode_dump("Op", outputs=[TensorSpec(np.linspace(-3, 5, 40, dtype=np.float32))])


def damages(good: bytes) -> dict:
    """Hypothesis arguments for :func:`damaged`: where ``good`` is cut, and up to four bytes
    flipped."""
    return {
        "cut": st.integers(9, len(good)),
        "flips": st.lists(
            st.tuples(st.integers(0, len(good) - 1), st.integers(1, 255)), max_size=4
        ),
    }


def damaged(good: bytes, cut: int, flips: list[tuple[int, int]]) -> bytes:
    data = bytearray(good[:cut])
    for at, mask in flips:
        if at < len(data):
            data[at] ^= mask
    return bytes(data)


def assert_damaged_file_same_or_declined(left_path: Path, right_path: Path) -> None:
    """A damaged left file: each output's direct cells equal the general path's, or the direct
    path declines where the general one raises (its message stays the user's answer)."""
    try:
        dump = read_dump(left_path)
    except DumpError:
        return  # reported when the op's dump is read; neither path runs
    right_dump = read_dump(right_path)
    for tensor in dump.outputs:
        direct = direct_row(dump, tensor, right_dump, right_dump.outputs[0])
        try:
            general = general_row(dump, tensor, right_dump, right_dump.outputs[0])
        except (DumpError, AlignError, SizeMismatchError):
            assert direct is None
            continue
        if direct is not None:
            assert cells(direct) == cells(general)


@settings(max_examples=200, deadline=None)
@given(**damages(GOOD))
def test_corrupt_or_truncated_files_get_the_same_cells_or_the_general_paths_error(cut, flips):
    with tempfile.TemporaryDirectory() as folder:
        left_path, right_path = Path(folder) / "left", Path(folder) / "right"
        left_path.write_bytes(damaged(GOOD, cut, flips))
        right_path.write_bytes(GOOD)
        assert_damaged_file_same_or_declined(left_path, right_path)


def test_a_kernel_whose_direct_entry_disagrees_is_not_used(monkeypatch):
    class OffInTheCells:
        """The real kernel, except that metrics_raw prints one cell differently."""

        def __getattr__(self, name):
            return getattr(native._kernel, name)

        def metrics_raw(self, *args):
            values, texts, *rest = native._kernel.metrics_raw(*args)
            return (values, (*texts[:3], texts[3] + "0", *texts[4:]), *rest)

    monkeypatch.setattr(native, "_kernel", OffInTheCells())
    monkeypatch.setattr(native, "_KERNEL_STATE", [])
    assert not metrics.kernel_in_use()
