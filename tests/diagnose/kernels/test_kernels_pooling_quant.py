"""Pooling and quantisation: hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest
from fusion_switch.diagnose.kernels import lookup
from kernel_check import check, refuses, run

X44 = np.arange(16.0).reshape(1, 1, 4, 4)  # rows 0-3, 4-7, 8-11, 12-15


def test_caffe_pooling_max_and_avg():
    check("Pooling", [X44], {"mode": 0, "window": [2, 2], "stride": [2, 2]}, [[[[5, 7], [13, 15]]]])
    check(
        "Pooling",
        [X44],
        {"mode": 1, "window": [2, 2], "stride": [2, 2]},
        [[[[2.5, 4.5], [10.5, 12.5]]]],
    )


def test_caffe_pooling_ceil_mode_and_padding_count():
    # 3x3 windows, stride 2 on 4x4: ceil gives 2x2 outputs, the second window overhangs
    out = run("Pooling", [X44], {"mode": 0, "window": [3, 3], "stride": [2, 2], "ceil_mode": 0})[0]
    np.testing.assert_array_equal(out, [[[[10, 11], [14, 15]]]])
    out = run("Pooling", [X44], {"mode": 0, "window": [3, 3], "stride": [2, 2], "ceil_mode": 1})[0]
    np.testing.assert_array_equal(out, [[[[10]]]])  # floor mode
    # avg, pad 1 on every side, 3x3 stride 2: the top-left window covers the padded corner,
    # 4 real cells (0 1 4 5 -> 10) over 9 (padding counts in Caffe)
    out = run(
        "Pooling", [X44], {"mode": 1, "window": [3, 3], "stride": [2, 2], "pad": [1, 1, 1, 1]}
    )[0]
    assert out.shape == (1, 1, 3, 3)  # ceil((4+2-3)/2)+1 = 3
    assert np.isclose(out[0, 0, 0, 0], 10 / 9)
    # the last window starts at row 3 and reaches row 5 = H + bottom pad: clipped to 2 rows
    # (rows 3 and the pad) x 2 columns: only x[3,3] = 15 is real
    assert np.isclose(out[0, 0, 2, 2], 15 / 4)


def test_global_pooling():
    check("Pooling", [X44], {"mode": 1, "global_pooling": True}, [[[[7.5]]]])
    check("GlobalAveragePool", [X44], {}, [[[[7.5]]]])


def test_pooling_errors():
    refuses("Pooling", [X44], {"mode": 2}, "mode")
    refuses("Pooling", [X44], {"dilation": [1, 1, 2, 2]}, "dilation")
    refuses("Pooling", [X44[0]], {}, "input x")


def test_tf_avg_pool_excludes_padding():
    x = np.transpose(X44, (0, 2, 3, 1))  # NHWC, the TF default
    out = run(
        "AvgPool",
        [x],
        {"ksize": [1, 3, 3, 1], "strides": [1, 1, 1, 1], "padding": "SAME"},
        format="NHWC",
    )[0]
    assert out.shape == (1, 4, 4, 1)
    assert np.isclose(out[0, 0, 0, 0], (0 + 1 + 4 + 5) / 4)


def test_generator_avg_pool_scalar_ksize_and_pad():
    out = run("AvgPool", [X44], {"ksize": 3, "pad": 1}, format="NCHW")[0]  # desc format
    assert out.shape == (1, 1, 4, 4)
    assert np.isclose(out[0, 0, 1, 1], (0 + 1 + 2 + 4 + 5 + 6 + 8 + 9 + 10) / 9)
    assert np.isclose(out[0, 0, 3, 3], (10 + 11 + 14 + 15) / 4)


def test_tf_pooling_requires_strides_unless_the_generator_pad_is_there():
    refuses("AvgPool", [X44], {"ksize": [1, 1, 2, 2], "padding": "VALID"}, "strides", format="NCHW")
    refuses("MaxPool", [X44], {"ksize": [1, 1, 2, 2]}, "strides", format="NCHW")


def test_max_pool_and_v2_forms():
    x = np.transpose(X44, (0, 2, 3, 1))
    check(
        "MaxPool",
        [x],
        {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "VALID"},
        np.transpose([[[[5, 7], [13, 15]]]], (0, 2, 3, 1)),
        format="NHWC",
    )
    check(
        "MaxPoolV3",
        [X44],
        {"ksize": [1, 1, 3, 3], "strides": [1, 1, 2, 2], "ceil_mode": True},
        [[[[10, 11], [14, 15]]]],
    )
    check(
        "AvgPoolV2",
        [X44],
        {"ksize": [1, 1, 2, 2], "strides": [1, 1, 2, 2]},
        [[[[2.5, 4.5], [10.5, 12.5]]]],
    )
    out = run(
        "AvgPoolV2",
        [X44],
        {"ksize": [1, 1, 3, 3], "strides": [1, 1, 1, 1], "pads": [1, 1, 1, 1], "exclusive": False},
    )[0]
    assert np.isclose(out[0, 0, 0, 0], 10 / 9)
    refuses(
        "AvgPoolV2",
        [X44],
        {"ksize": [1, 1, 2, 2], "strides": [1, 1, 2, 2], "padding_mode": "FULL"},
        "padding_mode",
    )


def test_ascend_quant():
    x = [0.25, 0.5, -3.0, 100.0]
    # x * 2 - 1: -0.5 -> -0 (ties to even), 0 -> 0, -7, 199 -> saturated 127
    check("AscendQuant", [x], {"scale": 2.0, "offset": -1.0}, [0, 0, -7, 127])
    check(
        "AscendQuant", [x], {"scale": 2.0, "offset": -1.0, "round_mode": "Floor"}, [-1, 0, -7, 127]
    )
    check("AscendQuant", [x], {"scale": 2.0, "offset": 0.0, "sqrt_mode": True}, [1, 2, -12, 127])
    check("AscendQuant", [x], {"scale": 2.0, "offset": 0.0, "dst_type": 29}, [0, 1, -6, 7])
    refuses("AscendQuant", [x], {"scale": 1.0}, "offset")
    refuses("AscendQuant", [x], {"scale": 1.0, "offset": 0.0, "round_mode": "Away"}, "round_mode")


def test_ascend_dequant_float_and_packed_scales():
    x = np.array([[[[4.0]], [[-8.0]]]])  # [1, 2, 1, 1], int32 accumulators
    check("AscendDequant", [x, [0.5, 0.25]], {}, [[[[2.0]], [[-2.0]]]])
    check("AscendDequant", [x, [0.5, 0.25]], {"relu_flag": True}, [[[[2.0]], [[0.0]]]])
    check("AscendDequant", [x, [0.5, 0.25]], {"sqrt_mode": True}, [[[[1.0]], [[-0.5]]]])
    packed = np.array([0.5, 0.25], dtype=np.float32).view(np.uint32).astype(np.float64)
    check("AscendDequant", [x, packed], {}, [[[[2.0]], [[-2.0]]]])
    refuses("AscendDequant", [x, packed + 2.0**40], {}, "deq_scale")
    refuses("AscendDequant", [x, [0.5, 0.25, 1.0]], {}, "deq_scale")


def test_ascend_requant():
    x = np.array([[[[300.0]], [[-3.0]]]])
    check("AscendRequant", [x, [1.0, 0.5]], {}, [[[[127.0]], [[-2.0]]]])  # -1.5 -> -2 (even)
    check("AscendRequant", [x, [1.0, 0.5]], {"relu_flag": True}, [[[[127.0]], [[0.0]]]])


def _caffe_pool_by_definition(x, k, s, pads, mode, ceil):
    """Caffe's pooling_layer.cpp, loop by loop: output size with ceil/floor, the last window
    dropped if it starts in the bottom/right pad, the average over the window clipped to the
    padded image, the maximum over the real cells."""
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (top, bottom, left, right) = k, s, pads
    rnd = np.ceil if ceil else np.floor
    oh = int(rnd((h + top + bottom - kh) / sh)) + 1
    ow = int(rnd((w + left + right - kw) / sw)) + 1
    if ceil and (oh - 1) * sh >= h + top:
        oh -= 1
    if ceil and (ow - 1) * sw >= w + left:
        ow -= 1
    y = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * sh - top, j * sw - left
            h1, w1 = min(h0 + kh, h + bottom), min(w0 + kw, w + right)
            size = (h1 - h0) * (w1 - w0)
            cell = x[:, :, max(h0, 0) : min(h1, h), max(w0, 0) : min(w1, w)]
            y[:, :, i, j] = cell.max(axis=(2, 3)) if mode == 0 else cell.sum(axis=(2, 3)) / size
    return y


@pytest.mark.parametrize("mode", [0, 1])
@pytest.mark.parametrize(
    ("k", "s", "pads", "ceil_mode"),
    [
        ((3, 3), (2, 2), (1, 1, 1, 1), 0),
        ((2, 3), (1, 2), (0, 1, 1, 0), 0),
        ((3, 2), (2, 3), (1, 1, 0, 0), 1),
        ((7, 7), (1, 1), (0, 0, 0, 0), 0),
    ],
)
def test_caffe_pooling_matches_its_definition(mode, k, s, pads, ceil_mode):
    x = np.random.default_rng(sum(k) + mode).standard_normal((2, 3, 7, 9))
    attrs = {
        "mode": mode,
        "window": list(k),
        "stride": list(s),
        "pad": list(pads),
        "ceil_mode": ceil_mode,
    }
    want = _caffe_pool_by_definition(x, k, s, pads, mode, ceil=ceil_mode == 0)
    np.testing.assert_allclose(run("Pooling", [x], attrs)[0], want, rtol=1e-12, atol=1e-12)


def test_global_average_pool_refuses_a_channels_last_input():
    """A review: GlobalAveragePool always averaged the axes after 1; an NHWC input with H
    equal to C gave the right size and wrong values (0.42 off). GE documents it for NCHW:
    a channels-last one is not replayed (unverified), never replayed wrong."""
    refuses("GlobalAveragePool", [np.ones((1, 2, 2, 2))], {}, "NHWC", format="NHWC")
    check("GlobalAveragePool", [X44], {}, [[[[7.5]]]], format="NCHW")


@pytest.mark.parametrize("op", ["AscendDequant", "AscendRequant"])
def test_dequant_scales_go_along_the_channels_of_the_layout(op):
    """``deq_scale``/``req_scale`` hold one value per channel C (GE's quantize_ops.h: format
    NC1HWC0). The kernels applied them along axis 1 whatever the layout: an NHWC (TensorFlow)
    conv output with H == C was silently scaled along H (a review)."""
    rng = np.random.default_rng(1)
    x = rng.integers(-100, 100, (1, 4, 5, 4)).astype(np.float64)  # NHWC, H == C
    s = np.array([1e-2, 2e-2, 4e-2, 8e-2])
    per_c = x * s.reshape(1, 1, 1, 4)
    expected = per_c if op == "AscendDequant" else np.clip(np.rint(per_c), -128, 127)
    np.testing.assert_array_equal(run(op, [x, s], {}, format="NHWC")[0], expected)
    nchw = x.transpose(0, 3, 1, 2)
    np.testing.assert_array_equal(
        run(op, [nchw, s], {}, format="NCHW")[0], expected.transpose(0, 3, 1, 2)
    )
    matmul = rng.integers(-100, 100, (2, 3, 4)).astype(np.float64)  # [B, M, N], ND: along N
    got = run(op, [matmul, s], {}, format="ND")[0]
    scaled = matmul * s
    np.testing.assert_array_equal(got, scaled if op == "AscendDequant" else np.rint(scaled))
    refuses(op, [x, s], {}, "layout", format="NC1HWC0")


def test_conv2d_compress_is_not_replayed_as_conv2d():
    """Conv2DCompress reads (x, filter_compress, compress_index, bias, offset_w): registered as
    Conv2D, its compress index was added as the bias and the bias never read (a review)."""
    assert lookup("Conv2DCompress") is None


# --- a review of the kernels (forty-first round): what is not replayed is refused -----------


@pytest.mark.parametrize(
    ("op", "attrs"),
    [
        ("Pooling", {"mode": 1, "window": [3, 3], "stride": [2, 2], "pad": [1, 1, 1, 1]}),
        ("AvgPool", {"ksize": [1, 1, 3, 3], "strides": [1, 1, 2, 2], "padding": "SAME"}),
        ("AvgPoolV2", {"ksize": [1, 1, 3, 3], "strides": [1, 1, 2, 2], "pads": [1, 1, 1, 1]}),
    ],
)
def test_a_pooling_given_the_filter_its_fusion_pass_adds_is_refused(op, attrs) -> None:
    """GE's pooling passes (PoolingFusionPass, AvgPoolFusionPass, AvgPoolV2FusionPass) keep
    the type, add a filter input and a Mul after it: the op then sums its windows. Replayed
    as the mean, then the Mul, it divided twice and proved an innocent rule."""
    x = np.arange(32.0).reshape(1, 2, 4, 4)
    assert run(op, [x], {**attrs, "data_format": "NCHW"})[0].size  # one input: replayed
    refuses(op, [x, np.ones((2, 1, 3, 3))], {**attrs, "data_format": "NCHW"}, "filter")


@pytest.mark.parametrize("op", ["AvgPool", "MaxPool"])
def test_a_tf_pooling_without_padding_is_refused(op) -> None:
    """GE requires ``padding`` (REQUIRED_ATTR); it was taken as VALID."""
    attrs = {"ksize": [1, 1, 3, 3], "strides": [1, 1, 1, 1], "data_format": "NCHW"}
    refuses(op, [np.ones((1, 1, 4, 4))], attrs, "padding")
