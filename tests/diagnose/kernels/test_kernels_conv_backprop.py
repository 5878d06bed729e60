"""Conv2DBackpropInput(D) / Conv2DTranspose(D): hand cases and the adjoint property."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_check import check, refuses, run

DY = np.array([[[[1.0, 2.0], [3.0, 4.0]]]])  # [1, 1, 2, 2]


def test_stride_2_one_by_one_spreads_the_gradient():
    attrs = {"input_size": [1, 1, 3, 3], "strides": [1, 1, 2, 2], "pads": [0] * 4}
    check(
        "Conv2DBackpropInputD",
        [np.full((1, 1, 1, 1), 2.0), DY],
        attrs,
        [[[[2, 0, 4], [0, 0, 0], [6, 0, 8]]]],
        format="NCHW",
    )


def test_two_by_two_ones_kernel_overlaps_add_up():
    # each dy cell adds itself to the 2x2 block it came from: the centre collects all four
    attrs = {"input_size": [1, 1, 3, 3], "strides": [1, 1, 1, 1], "pads": [0] * 4}
    check(
        "Conv2DBackpropInputD",
        [np.ones((1, 1, 2, 2)), DY],
        attrs,
        [[[[1, 3, 2], [4, 10, 6], [3, 7, 4]]]],
        format="NCHW",
    )


def test_transpose_d_adds_bias_and_input_size_as_input():
    attrs = {"input_size": [1, 1, 3, 3], "strides": [1, 1, 1, 1], "pads": [0] * 4}
    out = run("Conv2DTransposeD", [DY, np.ones((1, 1, 2, 2)), [0.5]], attrs, format="NCHW")[0]
    np.testing.assert_allclose(out, [[[[1.5, 3.5, 2.5], [4.5, 10.5, 6.5], [3.5, 7.5, 4.5]]]])
    out = run(
        "Conv2DTranspose",
        [[1, 1, 3, 3], DY, np.ones((1, 1, 2, 2))],
        {"strides": [1, 1, 1, 1], "pads": [0] * 4},
        format="NCHW",
    )[0]
    np.testing.assert_allclose(out[0, 0, 1], [4, 10, 6])


@pytest.mark.parametrize(
    ("c", "o", "groups", "k", "strides", "pads", "dilations", "hw"),
    [
        (3, 5, 1, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), (7, 8)),
        (6, 9, 3, (2, 3), (2, 1), (0, 1, 2, 0), (1, 2), (8, 7)),
        (17, 17, 17, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), (5, 5)),
    ],
)
def test_backprop_is_the_adjoint_of_conv2d(c, o, groups, k, strides, pads, dilations, hw):
    """<conv(x, w), dy> == <x, backprop(w, dy)> for every x and dy: the definition of the
    input gradient."""
    rng = np.random.default_rng(c + o)
    x = rng.standard_normal((2, c, *hw))
    w = rng.standard_normal((o, c // groups, *k))
    common = {
        "strides": [1, 1, *strides],
        "pads": list(pads),
        "dilations": [1, 1, *dilations],
        "groups": groups,
    }
    y = run("Conv2D", [x, w], common, format="NCHW")[0]
    dy = rng.standard_normal(y.shape)
    dx = run(
        "Conv2DBackpropInputD", [w, dy], {**common, "input_size": list(x.shape)}, format="NCHW"
    )[0]
    assert dx.shape == x.shape
    assert np.isclose(np.vdot(y, dy), np.vdot(x, dx), rtol=1e-10)
    # NHWC with an HWCN filter gives the same gradient
    nhwc = {
        **common,
        "strides": [1, *strides, 1],
        "dilations": [1, *dilations, 1],
        "input_size": [2, *hw, c],
    }
    dx2 = run(
        "Conv2DBackpropInputD",
        [w.transpose(2, 3, 1, 0), dy.transpose(0, 2, 3, 1)],
        nhwc,
        format="NHWC",
    )[0]
    np.testing.assert_allclose(dx2, dx.transpose(0, 2, 3, 1), rtol=1e-10, atol=1e-10)


def test_backprop_errors():
    base = {"input_size": [1, 1, 3, 3], "strides": [1, 1, 1, 1], "pads": [0] * 4}
    refuses(
        "Conv2DBackpropInputD",
        [np.ones((1, 1, 2, 2)), DY],
        {"strides": [1] * 4, "pads": [0] * 4},
        "input_size",
        format="NCHW",
    )
    refuses(
        "Conv2DBackpropInputD",
        [np.ones((1, 1, 2, 2)), DY],
        {**base, "pads": None},
        "pads",
        format="NCHW",
    )
    refuses("Conv2DBackpropInputD", [np.ones((2, 1, 2, 2)), DY], base, "filter", format="NCHW")
    refuses(
        "Conv2DTransposeD",
        [DY, np.ones((1, 1, 2, 2))],
        {**base, "offset_x": 1},
        "offset_x",
        format="NCHW",
    )
