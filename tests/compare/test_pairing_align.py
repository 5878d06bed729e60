"""Aligning a fusion-on tensor (device layout) with its fusion-off tensor, msaccucmp style.

Table-driven cases with hand-built device layouts, then a differential test against msaccucmp's
own ``TensorConversion`` on random layouts (same elements in the same order, same Shape cell,
same failure message).
"""

from __future__ import annotations

import numpy as np
import pytest
from fusion_switch.compare.align import (
    FRACTAL_NZ,
    FRACTAL_Z,
    NC1HWC0,
    NCHW,
    ND,
    NHWC,
    AlignError,
    TensorView,
    align,
    cannot_compare,
)
from hypothesis import given, settings
from hypothesis import strategies as st


def nc1hwc0(host: np.ndarray, c0: int = 16) -> np.ndarray:
    n, c, h, w = host.shape
    c1 = -(-c // c0)
    padded = np.zeros((n, c1 * c0, h, w), host.dtype)
    padded[:, :c] = host
    return padded.reshape(n, c1, c0, h, w).transpose(0, 1, 3, 4, 2).copy()


def fractal_nz(host: np.ndarray) -> np.ndarray:
    rows, cols = host.shape
    r1, c1 = -(-rows // 16), -(-cols // 16)
    padded = np.zeros((r1 * 16, c1 * 16), host.dtype)
    padded[:rows, :cols] = host
    return padded.reshape(r1, 16, c1, 16).transpose(2, 0, 1, 3).copy()


def fractal_z(host: np.ndarray) -> np.ndarray:
    n, c, h, w = host.shape
    c1, n1 = -(-c // 16), -(-n // 16)
    padded = np.zeros((n1 * 16, c1 * 16, h, w), host.dtype)
    padded[:n, :c] = host
    return (
        padded.reshape(n1, 16, c1, 16, h, w)
        .transpose(2, 4, 5, 0, 1, 3)
        .reshape(c1 * h * w, n1, 16, 16)
        .copy()
    )


HOST = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
MATRIX = np.arange(5 * 20, dtype=np.float16).reshape(5, 20)


def view(fmt, data, original=()):
    return TensorView(fmt, tuple(data.shape), data.reshape(-1), tuple(original))


@pytest.mark.parametrize(
    ("left", "right", "shape"),
    [
        (view(NC1HWC0, nc1hwc0(HOST), HOST.shape), view(NCHW, HOST), (2, 3, 4, 5)),
        (view(NHWC, HOST.transpose(0, 2, 3, 1)), view(NCHW, HOST), (2, 3, 4, 5)),
        (view(FRACTAL_NZ, fractal_nz(MATRIX), MATRIX.shape), view(ND, MATRIX), (5, 20)),
        (view(FRACTAL_Z, fractal_z(HOST), HOST.shape), view(NCHW, HOST), (2, 3, 4, 5)),
        (view(NCHW, HOST), view(NCHW, HOST), (2, 3, 4, 5)),
        (view(ND, HOST), view(ND, HOST), (120,)),  # no conversion: the flat element count
    ],
    ids=["NC1HWC0", "NHWC", "FRACTAL_NZ", "FRACTAL_Z", "NCHW", "ND"],
)
def test_device_layouts_come_back_to_the_host_layout(left, right, shape):
    aligned = align(left, right, "op")
    assert aligned.shape == shape
    np.testing.assert_array_equal(aligned.left.reshape(-1), aligned.right.reshape(-1))


def test_nhwc_labelled_right_tensor_with_nchw_dims_is_relabelled():
    # The fusion-off dump says NHWC but its dims are the target's NCHW dims permuted.
    right = TensorView(NHWC, (2, 4, 5, 3), HOST.transpose(0, 2, 3, 1).reshape(-1))
    left = TensorView(NCHW, HOST.shape, HOST.reshape(-1), (2, 3, 4, 5))
    aligned = align(left, right, "op")
    assert aligned.shape == (2, 4, 5, 3)
    np.testing.assert_array_equal(aligned.left.reshape(-1), aligned.right.reshape(-1))


def test_smaller_left_tensor_cannot_be_compared():
    with pytest.raises(AlignError) as caught:
        align(view(ND, np.zeros(4, np.float32)), view(ND, np.zeros(6, np.float32)), "op")
    assert caught.value.csv_reason == cannot_compare("op", "(4, 1, 1, 1)", "(6, 1, 1, 1)")
    assert caught.value.csv_reason.startswith("[op] Due to the different shapes")


def test_larger_left_tensor_is_cut_to_the_right_size():
    aligned = align(view(ND, np.arange(6, dtype=np.float32)), view(ND, np.zeros(4, np.float32)))
    assert aligned.shape == (4, 1, 1, 1)
    assert aligned.left.reshape(-1).tolist() == [0, 1, 2, 3]


def test_unknown_right_format_is_reported_like_msaccucmp():
    with pytest.raises(AlignError, match=r"The format\(99\) does not support\."):
        align(view(ND, HOST), TensorView(99, HOST.shape, HOST.reshape(-1)), "op")


def test_missing_converter_gives_an_empty_csv_reason():
    # Nothing converts NCHW into NC1HWC0 (msaccucmp only logs it).
    with pytest.raises(AlignError) as caught:
        align(view(NCHW, HOST), view(NC1HWC0, nc1hwc0(HOST)), "op")
    assert caught.value.csv_reason == "" and "NCHW to NC1HWC0" in caught.value.reason


def test_invalid_fractal_nz_target_is_explained():
    left = view(FRACTAL_NZ, fractal_nz(MATRIX), (40, 20))
    with pytest.raises(AlignError, match=r"^\[op\] The target shape \(40, 20\) is invalid"):
        align(left, view(ND, np.zeros((40, 20), np.float16)), "op")


# ----------------------------------------------------------------------------- msaccucmp itself


@pytest.fixture(scope="module")
def msaccucmp_align():
    from oracle import make_importable

    make_importable()
    import logging

    from cmp_utils import common
    from cmp_utils.constant.compare_error import CompareError
    from conversion.tensor_conversion import TensorConversion
    from dump_parse.dump_data_object import DumpTensor
    from format_manager.format_manager import FormatManager
    from vector_cmp.fusion_manager.fusion_op import Tensor

    logging.disable(logging.WARNING)
    formats = FormatManager("")
    formats.check_arguments_valid()

    class Op:
        op_name = "op"

    class Data:
        def is_standard_quant_vs_origin(self):
            return False

    def run(left: TensorView, right: TensorView):
        mine = DumpTensor(
            0,
            1,
            left.format,
            list(left.shape),
            left.data,
            left.data.nbytes,
            list(left.original_shape),
            0,
            0,
        )
        theirs = DumpTensor(
            0, 1, right.format, list(right.shape), right.data, right.data.nbytes, [], 0, 0
        )
        truth = Tensor("right", 0, "", [])
        truth.set_data(theirs)
        try:
            truth.tensor_format = common.get_format_string(right.format)
            truth.shape = list(right.shape)
            if left.original_shape:
                truth.shape = list(left.original_shape)
            conversion = TensorConversion(Op(), formats, is_detail=False)
            return conversion.get_my_output_and_ground_truth_data(Data(), mine, truth)
        except CompareError as error:
            if error.code == CompareError.MSACCUCMP_INVALID_FRACTAL_NZ_DUMP_DATA_ERROR:
                return f"[op] {error.message}"
            return error.message

    yield run
    logging.disable(logging.NOTSET)


@st.composite
def layout_pairs(draw):
    """A host tensor in a device layout (left) against the host tensor (right), sometimes with
    the right shape perturbed so alignment must fail."""
    kind = draw(st.sampled_from(["NC1HWC0", "NZ", "FRACTAL_Z", "NHWC", "ND", "NCHW"]))
    dims = draw(st.lists(st.integers(1, 20), min_size=4, max_size=4))
    host = np.arange(np.prod(dims), dtype=np.float32).reshape(dims)
    if kind == "NC1HWC0":
        left = view(NC1HWC0, nc1hwc0(host), host.shape)
    elif kind == "FRACTAL_Z":
        left = view(FRACTAL_Z, fractal_z(host), host.shape)
    elif kind == "NHWC":
        left = view(NHWC, host.transpose(0, 2, 3, 1))
    elif kind == "NZ":
        host = host.reshape(dims[0] * dims[1], dims[2] * dims[3])
        left = view(FRACTAL_NZ, fractal_nz(host), host.shape)
    else:
        left = view(ND if kind == "ND" else NCHW, host)
    right_format = ND if kind in ("NZ", "ND") else NCHW
    right = host
    if draw(st.booleans()):
        cut = draw(st.integers(0, right.ndim - 1))
        right = np.take(right, range(max(1, right.shape[cut] - 1)), axis=cut)
    if draw(st.booleans()) and right_format == NCHW and right.ndim == 4:
        right_format = NHWC
        right = right.transpose(0, 2, 3, 1)
    return left, view(right_format, np.ascontiguousarray(right))


@pytest.mark.oracle
@settings(max_examples=80, deadline=None)
@given(pair=layout_pairs())
def test_same_pairing_as_msaccucmp(msaccucmp_align, pair):
    left, right = pair
    theirs = msaccucmp_align(left, right)
    try:
        ours = align(left, right, "op")
    except AlignError as error:
        assert isinstance(theirs, str), f"msaccucmp aligned, we failed: {error.reason}"
        assert error.csv_reason == theirs
        return
    assert not isinstance(theirs, str), f"msaccucmp failed ({theirs!r}), we aligned"
    their_left, their_right, their_shape = theirs
    assert ours.shape == tuple(their_shape)
    np.testing.assert_array_equal(ours.left.reshape(-1), their_left)
    np.testing.assert_array_equal(ours.right.reshape(-1), their_right)
