"""The direct measure path on the fusion-on FRACTAL_NZ / fusion-off ND (B, R, C) pair: the
kernel's conversion (``metrics_raw`` with seven numbers of tiles) gives the general path's row
cells (``align``'s ``_nz_to_nd`` transpose and cut of the padded rows and columns, then
``measure_pair``). 304 of the 5,000-op benchmark case's pairs are such (MatMul-like outputs).

Tiles of any size, padding of any value (it is cut off), every stored dtype; what the
conversion does not cover exactly (a target shape align rejects or leaves as it is, a batch
that differs, a group, a scalar, fewer dims) is turned down and left to the general path.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from fusion_switch.compare import metrics
from fusion_switch.compare.align import FRACTAL_NZ, ND, AlignError
from fusion_switch.compare.metrics import SizeMismatchError, native
from fusion_switch.readers.dump import DumpError, read_dump
from fusion_switch.readers.dump_write import TensorSpec, write_dump
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.compare.test_measure_raw import DTYPES, cells, direct_row, general_row


def tiled(host: np.ndarray, n0: int, c0: int, pad=0) -> np.ndarray:
    """(B, R, C) laid out as FRACTAL_NZ (B, C1, N1, N0, C0), the padding filled with ``pad``."""
    batch, rows, cols = host.shape
    n1, c1 = -(-rows // n0), -(-cols // c0)
    padded = np.full((batch, n1 * n0, c1 * c0), pad, dtype=host.dtype)
    padded[:, :rows, :cols] = host
    tiles = padded.reshape(batch, n1, n0, c1, c0).transpose(0, 3, 1, 2, 4)
    return np.ascontiguousarray(tiles)


def both_paths(device, right, prefix=b"", **left):
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        specs = [TensorSpec(np.frombuffer(prefix, np.uint8))] if prefix else []
        left_path = write_dump(
            folder / "left", "Left", [*specs, TensorSpec(device, format=FRACTAL_NZ, **left)]
        )
        right_path = write_dump(folder / "right", "Right", outputs=[TensorSpec(right, format=ND)])
        left_dump, right_dump = read_dump(left_path), read_dump(right_path)
        pair = (left_dump, left_dump.inputs[-1], right_dump, right_dump.outputs[0])
        direct = direct_row(*pair)
        try:
            general = general_row(*pair)
        except (DumpError, AlignError, SizeMismatchError) as error:
            general = error
        return direct, general


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    batch=st.integers(1, 3),
    rows=st.integers(1, 40),
    cols=st.integers(1, 40),
    n0=st.sampled_from([16, 4, 1]),
    c0=st.sampled_from([16, 8, 1]),
    left=st.sampled_from(DTYPES),
    right=st.sampled_from(DTYPES),
)
def test_any_shape_and_dtype_pair_gives_the_general_paths_cells(
    data, batch, rows, cols, n0, c0, left, right
):
    def values(dtype: str) -> np.ndarray:
        elements = None
        if dtype[-2] == "f":  # every float: NaN, infinities, zeros, subnormals
            elements = st.floats(width=32 if dtype == "<f4" else 16, allow_subnormal=True)
        return data.draw(hnp.arrays(np.dtype(dtype), (batch, rows, cols), elements=elements))

    device = tiled(values(left), n0, c0, pad=data.draw(st.sampled_from([0, 7, 99])))
    prefix = data.draw(st.binary(max_size=3))
    original = {"original_shape": [batch, rows, cols]} if data.draw(st.booleans()) else {}
    direct, general = both_paths(device, values(right), prefix, **original)
    if isinstance(general, Exception) or all(d == 1 for d in device.shape):
        assert direct is None
        return
    assert direct is not None, "the direct path turned a FRACTAL_NZ/ND pair down"
    assert cells(direct) == cells(general)
    assert direct.shape == (batch, rows, cols)


@pytest.mark.parametrize(
    ("host_shape", "right_shape", "left"),
    [
        ((2, 5, 6), (2, 5, 6), {"original_shape": [2, 30]}),  # a target align leaves as it is
        ((2, 5, 6), (2, 5, 6), {"original_shape": [2, 5, 7]}),  # a target beyond the data
        ((2, 5, 6), (10, 6), {}),  # a 2-D fusion-off shape
        ((2, 5, 6), (2, 5, 6), {"sub_format": 2}),  # a group
    ],
)
def test_what_the_conversion_does_not_cover_is_left_to_the_general_path(
    host_shape, right_shape, left
):
    host = np.arange(np.prod(host_shape), dtype=np.float32).reshape(host_shape)
    direct, _ = both_paths(tiled(host, 4, 4), host.reshape(right_shape) + 1, **left)
    assert direct is None


def test_a_large_matrix_read_whole():
    rng = np.random.default_rng(3)
    host = rng.standard_normal((1, 100, 200)).astype(np.float16)  # 40 KB: read in one go
    right = (host.astype(np.float32) * 1.001).astype(np.float32)
    direct, general = both_paths(tiled(host, 16, 16), right)
    assert direct is not None
    assert cells(direct) == cells(general)


def test_the_first_use_probe_covers_the_conversion(monkeypatch):
    class SwapsTileRows:
        """The real kernel, except that the FRACTAL_NZ conversion reads N1 and N0 swapped."""

        def __getattr__(self, name):
            return getattr(native._kernel, name)

        def metrics_raw(self, *args):
            if len(args) == 12 and len(args[11]) == 7:
                b, c1, n1, n0, c0, r, c = args[11]
                args = (*args[:11], (b, c1, n0, n1, c0, r, c))
            return native._kernel.metrics_raw(*args)

    assert metrics.kernel_in_use()
    monkeypatch.setattr(native, "_kernel", SwapsTileRows())
    monkeypatch.setattr(native, "_KERNEL_STATE", [])
    assert not metrics.kernel_in_use()


@pytest.mark.parametrize(
    "tiles",
    [
        (1, 2, 2, 4, 4, 9, 6),  # more rows than the tiles hold
        (1, 2, 2, 4, 4, 5, 9),  # more columns than the tiles hold
        (1, 2, 2, 4, 4, 5, 0),  # an empty dimension
        (1, 4, 4, 4, 4, 5, 6),  # more tiles than the bytes hold
    ],
)
def test_the_kernel_refuses_tiles_that_do_not_fit(tiles):
    data = np.zeros(64, np.float32).tobytes()
    n = tiles[0] * tiles[5] * tiles[6]
    with pytest.raises(ValueError, match="metrics_raw"):
        native._kernel.metrics_raw(
            data, 0, "f", data, 0, "f", max(n, 1),
            np.empty(native.scratch_length(max(n, 1)), np.float32), False,
            native.BUFFER_SIZE, np.log, tiles,
        )  # fmt: skip
