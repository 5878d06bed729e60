"""The direct measure path on the fusion-on NC1HWC0 / fusion-off NCHW pair: the kernel's
conversion (``metrics_raw`` with its blocks argument) gives the same row cells as the general
path (``align``'s NC1HWC0 to NCHW transpose and channel cut, then ``measure_pair``).

Files are written in CANN's layout with ``readers.layout.to_device`` (zero padding) or with
arbitrary padding bytes, then measured both ways (helpers shared with ``test_measure_raw``).
Whatever the kernel's conversion does not cover exactly is turned down and left to the
general path.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from fusion_switch.compare import metrics
from fusion_switch.compare.align import NC1HWC0, NCHW, AlignError
from fusion_switch.compare.metrics import SizeMismatchError, native
from fusion_switch.readers.dump import DumpError, read_dump
from fusion_switch.readers.dump_write import TensorSpec, encode_dump, write_dump
from fusion_switch.readers.layout import to_device
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from test_measure_raw import (
    DTYPES,
    assert_damaged_file_same_or_declined,
    cells,
    damaged,
    damages,
    direct_row,
    general_row,
)

DIM = st.integers(1, 5)


def write_blocks(folder: Path, device: np.ndarray, right: np.ndarray, prefix: bytes = b"", **left):
    """A fusion-on dump holding ``device`` (NC1HWC0) after ``prefix`` bytes, a fusion-off dump
    holding ``right`` (NCHW); returns both dumps and tensors."""
    specs = [TensorSpec(np.frombuffer(prefix, np.uint8))] if prefix else []
    spec = TensorSpec(device, format=NC1HWC0, **left)
    left_path = write_dump(folder / "left", "Left", [*specs, spec])
    right_path = write_dump(folder / "right", "Right", outputs=[TensorSpec(right, format=NCHW)])
    left_dump, right_dump = read_dump(left_path), read_dump(right_path)
    return left_dump, left_dump.inputs[-1], right_dump, right_dump.outputs[0]


def both_paths(device, right, prefix=b"", algorithms=None, **left):
    with tempfile.TemporaryDirectory() as folder:
        pair = write_blocks(Path(folder), device, right, prefix, **left)
        direct = direct_row(*pair, algorithms=algorithms)
        try:
            general = general_row(*pair, algorithms=algorithms)
        except (DumpError, AlignError, SizeMismatchError) as error:
            general = error
        return direct, general


def assert_same(device, right, prefix=b"", algorithms=None, **left):
    direct, general = both_paths(device, right, prefix, algorithms, **left)
    assert direct is not None, "the direct path turned an NC1HWC0/NCHW pair down"
    assert cells(direct) == cells(general)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    n=DIM,
    c=st.integers(1, 70),
    h=DIM,
    w=DIM,
    c0=st.sampled_from([16, 32, 4, 1]),
    left=st.sampled_from(DTYPES),
    right=st.sampled_from(DTYPES),
)
def test_any_shape_and_dtype_pair_gives_the_general_paths_cells(data, n, c, h, w, c0, left, right):
    def values(dtype: str) -> np.ndarray:
        elements = None
        if dtype[-2] == "f":  # every float: NaN, infinities, zeros, subnormals
            elements = st.floats(width=32 if dtype == "<f4" else 16, allow_subnormal=True)
        return data.draw(hnp.arrays(np.dtype(dtype), (n, c, h, w), elements=elements))

    device = to_device(values(left), "NC1HWC0", c0)
    if data.draw(st.booleans()):  # padding channels need not hold zeros: they are cut off
        flat = device.reshape(-1)
        flat[:] = np.where(to_device(np.ones((n, c, h, w), bool), "NC1HWC0", c0).reshape(-1),
                           flat, data.draw(st.sampled_from([7, -1, 0])))  # fmt: skip
    prefix = data.draw(st.binary(max_size=3))
    with_original = data.draw(st.booleans())
    original = {"original_shape": [n, c, h, w]} if with_original else {}
    if n == c == h == w == c0 == 1:  # every dimension 1: msaccucmp's scalar, declined
        direct, _ = both_paths(device, values(right), prefix, None, **original)
        assert direct is None
        return
    assert_same(device, values(right), prefix, **original)


@pytest.mark.parametrize("c0", [16, 32])
@pytest.mark.parametrize("shape", [(1, 1, 1, 2), (2, 3, 1, 1), (1, 17, 4, 4), (4, 64, 7, 9)])
def test_channel_counts_around_c0_and_batches(shape, c0):
    rng = np.random.default_rng(sum(shape) + c0)
    host = rng.standard_normal(shape).astype(np.float16)
    assert_same(to_device(host, "NC1HWC0", c0), (host * 1.01).astype(np.float32), b"\x02")


def test_a_large_tensor_and_a_metric_selection():
    rng = np.random.default_rng(5)
    host = rng.standard_normal((1, 37, 20, 21)).astype(np.float32)  # 80 KB: read in one go
    right = host + rng.standard_normal(host.shape).astype(np.float32) * 1e-3
    assert_same(to_device(host, "NC1HWC0"), right)
    assert_same(to_device(host, "NC1HWC0"), right, algorithms=["KullbackLeiblerDivergence"])


def test_the_first_use_probe_covers_the_conversion(monkeypatch):
    class TransposesWrongly:
        """The real kernel, except that the NC1HWC0 conversion swaps H and W."""

        def __getattr__(self, name):
            return getattr(native._kernel, name)

        def metrics_raw(self, *args):
            if len(args) == 12:
                n, c1, h, w, c0, c = args[11]
                args = (*args[:11], (n, c1, w, h, c0, c))
            return native._kernel.metrics_raw(*args)

    assert metrics.kernel_in_use()
    monkeypatch.setattr(native, "_kernel", TransposesWrongly())
    monkeypatch.setattr(native, "_KERNEL_STATE", [])
    assert not metrics.kernel_in_use()


def declined(device, right, **left) -> bool:
    return both_paths(device, right, **left)[0] is None


def test_what_the_conversion_does_not_cover_is_left_to_the_general_path():
    host = np.arange(1, 2 * 3 * 4 * 5 + 1, dtype=np.float32).reshape(2, 3, 4, 5)
    device = to_device(host, "NC1HWC0")
    assert declined(device, host[:1])  # N differs: msaccucmp's slice, not a channel cut
    assert declined(device, host[:, :, :3])  # H differs
    assert declined(device, np.zeros((2, 17, 4, 5), np.float32))  # more channels than C1*C0
    assert declined(device, host.reshape(2, 3, 20))  # not 4-D
    assert declined(device.reshape(2, 1, 4, 80), host)  # not 5-D
    assert declined(device, host, sub_format=2)  # grouped: the general path explains
    # original shape NHWC-permuted against the right shape: msaccucmp relabels the format
    square = to_device(np.ones((1, 4, 4, 4), np.float32), "NC1HWC0")
    assert not declined(square, np.ones((1, 4, 4, 4), np.float32))
    assert declined(to_device(np.ones((1, 2, 3, 4), np.float32), "NC1HWC0"),
                    np.ones((1, 2, 3, 4), np.float32), original_shape=[1, 4, 2, 3])  # fmt: skip
    scalar = to_device(np.ones((1, 1, 1, 1), np.float32), "NC1HWC0", 1)
    assert declined(scalar, np.ones((1, 1, 1, 1), np.float32))  # msaccucmp's scalar rule


def test_the_kernel_refuses_blocks_that_do_not_fit_the_bytes():
    data = np.ones(2 * 16 * 3, np.float32).tobytes()
    rest = (np.empty(native.scratch_length(99), np.float32), False, 8192, np.log)
    raw = native._kernel.metrics_raw
    good = raw(data, 0, "f", data, 0, "f", 6, *rest, (1, 2, 1, 3, 16, 2))
    assert good[0][0] == pytest.approx(1.0)
    wrong = [((1, 2, 1, 3, 16, 2), 7), ((1, 2, 1, 3, 16, 33), 99), ((1, 3, 1, 3, 16, 2), 6),
             ((0, 2, 1, 3, 16, 2), 0), ((1, 2, 1, 3), 6)]  # fmt: skip
    for blocks, n in wrong:  # n off, C > C1*C0, beyond the bytes, a zero dim, four numbers
        with pytest.raises(ValueError):
            raw(data, 0, "f", data, 0, "f", n, *rest, blocks)


GOOD = encode_dump(
    "Op",
    outputs=[TensorSpec(to_device(np.linspace(-3, 5, 2 * 3 * 2 * 2, dtype=np.float32)
                                  .reshape(2, 3, 2, 2), "NC1HWC0"), format=NC1HWC0)],
)  # fmt: skip
RIGHT = np.linspace(-3, 5.5, 24, dtype=np.float32).reshape(2, 3, 2, 2)


@settings(max_examples=200, deadline=None)
@given(**damages(GOOD))
def test_corrupt_or_truncated_files_get_the_same_cells_or_the_general_paths_error(cut, flips):
    with tempfile.TemporaryDirectory() as folder:
        left_path = Path(folder) / "left"
        left_path.write_bytes(damaged(GOOD, cut, flips))
        right_path = write_dump(Path(folder) / "r", "R", outputs=[TensorSpec(RIGHT, format=NCHW)])
        assert_damaged_file_same_or_declined(left_path, right_path)
