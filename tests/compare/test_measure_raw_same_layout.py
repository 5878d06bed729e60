"""The direct measure path also takes two 4-D NCHW (or NHWC) tensors of one shape.

:func:`.align` leaves such a pair as it is (the same format needs no conversion, the same shape
no slice) and reports the 4-D shape; the direct path now measures it from the files' bytes
instead of the general path's read, align and numpy steps (153 pairs of the 5,000-op benchmark
case). Each test is differential: whenever the direct path takes a pair, its cells equal the
general path's; where align would relabel or convert (a permuted original shape, other
formats, other shapes, a scalar), it declines.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from fusion_switch.compare.align import NCHW, NHWC, AlignError
from fusion_switch.readers.dump import read_dump
from fusion_switch.readers.dump_write import TensorSpec, write_dump
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.compare.test_measure_raw import cells, direct_row, general_row


def pair(folder: Path, left: TensorSpec, right: TensorSpec):
    left_dump = read_dump(write_dump(folder / "l", "L", outputs=[left]))
    right_dump = read_dump(write_dump(folder / "r", "R", outputs=[right]))
    return left_dump, left_dump.outputs[0], right_dump, right_dump.outputs[0]


SHAPES = st.lists(st.integers(1, 5), min_size=4, max_size=4).map(tuple)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    shape=SHAPES,
    layout=st.sampled_from([NCHW, NHWC]),
    dtypes=st.tuples(st.sampled_from(["<f4", "<f2", "i1"]), st.sampled_from(["<f4", "<f2"])),
    original=st.sampled_from(["none", "same", "permuted"]),
)
def test_same_format_and_shape_gives_the_general_paths_cells(data, shape, layout, dtypes, original):
    def values(dtype: str) -> np.ndarray:
        elements = st.floats(width=32 if dtype == "<f4" else 16) if dtype[1] == "f" else None
        return data.draw(hnp.arrays(np.dtype(dtype), shape, elements=elements))

    n, c, h, w = shape
    original_shape = {"none": None, "same": shape, "permuted": (n, w, c, h)}[original]
    left = TensorSpec(values(dtypes[0]), format=layout, original_shape=original_shape)
    right = TensorSpec(values(dtypes[1]), format=layout)
    with tempfile.TemporaryDirectory() as folder:
        found = pair(Path(folder), left, right)
        direct = direct_row(*found)
        try:
            general = general_row(*found)
        except AlignError:  # a relabelled layout align cannot fit: the direct path declined
            assert direct is None
            return
        plain = original != "permuted" or (n, w, c, h) == shape
        if plain and any(d != 1 for d in shape):
            assert direct is not None, "the direct path turned a same-layout pair down"
        if direct is not None:
            assert cells(direct) == cells(general)
            assert direct.shape == shape  # msaccucmp's Shape: the 4-D shape, not a count


@pytest.mark.parametrize(
    ("left_format", "right_format", "left_shape", "right_shape"),
    [
        (NCHW, NHWC, (2, 3, 4, 5), (2, 3, 4, 5)),  # formats differ: align permutes
        (NCHW, NCHW, (2, 3, 4, 5), (2, 3, 5, 4)),  # shapes differ
        (NCHW, NCHW, (1, 1, 1, 1), (1, 1, 1, 1)),  # a scalar: align flattens it
        (NCHW, NCHW, (2, 3, 20), (2, 3, 20)),  # not 4-D
    ],
)
def test_what_align_would_change_is_left_to_the_general_path(
    tmp_path, left_format, right_format, left_shape, right_shape
):
    size = int(np.prod(left_shape))
    left = TensorSpec(np.arange(size, dtype=np.float32).reshape(left_shape), format=left_format)
    right = TensorSpec(
        np.arange(size, dtype=np.float32).reshape(right_shape) * 2, format=right_format
    )
    assert direct_row(*pair(tmp_path, left, right)) is None
