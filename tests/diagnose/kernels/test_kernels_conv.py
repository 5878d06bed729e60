"""Conv2D: hand-computed cases (every expected number below is worked out by hand)."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_check import check as _check
from kernel_check import refuses as _refuses
from kernel_check import run as _run


def check(op, inputs, attrs, expected, **kw):
    _check(op, inputs, attrs, expected, **{"format": "NCHW", **kw})


def run(op, inputs, attrs, **kw):
    return _run(op, inputs, attrs, **{"format": "NCHW", **kw})


def refuses(op, inputs, attrs, names, **kw):
    _refuses(op, inputs, attrs, names, **{"format": "NCHW", **kw})


X33 = np.arange(9.0).reshape(1, 1, 3, 3)  # [[0 1 2] [3 4 5] [6 7 8]]
ONES22 = np.ones((1, 1, 2, 2))


def test_conv_1x1x3x3_with_2x2_ones_kernel():
    # each output is the sum of a 2x2 window: 0+1+3+4, 1+2+4+5, 3+4+6+7, 4+5+7+8
    check(
        "Conv2D",
        [X33, ONES22, None],
        {"strides": [1, 1, 1, 1], "pads": [0, 0, 0, 0]},
        [[[[8, 12], [20, 24]]]],
    )


def test_conv_bias_is_added_per_output_channel():
    w = np.stack([ONES22[0], -ONES22[0]])  # two output channels: +sum, -sum
    check(
        "Conv2D",
        [X33, w, [1.0, 100.0]],
        {"strides": [1, 1, 1, 1], "pads": [0, 0, 0, 0]},
        [[[[9, 13], [21, 25]], [[92, 88], [80, 76]]]],
    )


def test_conv_pads_top_bottom_left_right():
    # pad only the top row: windows over [[0 0 0] [0 1 2] [3 4 5] [6 7 8]]
    check(
        "Conv2D",
        [X33, ONES22],
        {"strides": [1, 1, 1, 1], "pads": [1, 0, 0, 0]},
        [[[[1, 3], [8, 12], [20, 24]]]],
    )


def test_conv_strides_and_dilations_in_nchw_order():
    # 1x1 conv of weight 2 with stride 2: picks x[0,0], x[0,2], x[2,0], x[2,2]
    check(
        "Conv2D",
        [X33, np.full((1, 1, 1, 1), 2.0)],
        {"strides": [1, 1, 2, 2], "pads": [0] * 4},
        [[[[0, 4], [12, 16]]]],
    )
    # 2x2 kernel dilated by 2 covers the four corners: 0+2+6+8
    check(
        "Conv2D",
        [X33, ONES22],
        {"strides": [1, 1, 1, 1], "pads": [0] * 4, "dilations": [1, 1, 2, 2]},
        [[[[16]]]],
    )


def test_conv_groups_keep_channels_apart():
    x = np.concatenate([X33, 10 * X33], axis=1)  # 2 channels
    w = np.ones((2, 1, 2, 2))  # groups=2: each output channel sees one input channel
    check(
        "Conv2D",
        [x, w],
        {"strides": [1] * 4, "pads": [0] * 4, "groups": 2},
        [[[[8, 12], [20, 24]], [[80, 120], [200, 240]]]],
    )


def test_conv_nhwc_layout_from_the_input_desc():
    x = np.transpose(X33, (0, 2, 3, 1))  # NHWC
    w = np.transpose(ONES22, (2, 3, 1, 0))  # HWCN
    out = run(
        "Conv2D",
        [x, w],
        {"strides": [1, 1, 1, 1], "pads": [0] * 4, "data_format": "NHWC"},
        format="NHWC",
    )[0]
    assert out.shape == (1, 2, 2, 1)
    np.testing.assert_allclose(out[0, :, :, 0], [[8, 12], [20, 24]])


def test_desc_format_wins_over_a_default_data_format():
    # real Caffe graphs: data_format NHWC, tensors NCHW, strides in NCHW order
    check(
        "Conv2D",
        [X33, np.ones((1, 1, 1, 1))],
        {"strides": [1, 1, 2, 2], "pads": [0] * 4, "data_format": "NHWC"},
        [[[[0, 2], [6, 8]]]],
        format="NCHW",
    )


def test_conv_channels_not_multiple_of_16():
    rng = np.random.default_rng(0)
    x, w, b = (
        rng.standard_normal((1, 3, 5, 5)),
        rng.standard_normal((5, 3, 3, 3)),
        rng.standard_normal(5),
    )
    out = run("Conv2D", [x, w, b], {"strides": [1] * 4, "pads": [1] * 4})[0]
    assert out.shape == (1, 5, 5, 5)
    # output (o=4, h=2, w=2) by the definition, written as one explicit sum
    expected = b[4] + sum(
        w[4, c, i, j] * x[0, c, 1 + i, 1 + j] for c in range(3) for i in range(3) for j in range(3)
    )
    assert np.isclose(out[0, 4, 2, 2], expected, rtol=1e-12)


def test_conv_generator_scalar_pad_and_default_strides():
    check(
        "Conv2D",
        [X33, np.ones((1, 1, 3, 3))],
        {"pad": 1},
        [[[[8, 15, 12], [21, 36, 27], [20, 33, 24]]]],
    )


def test_conv_ge_defaults_dilations_groups_offset():
    base = run("Conv2D", [X33, ONES22], {"strides": [1] * 4, "pads": [0] * 4})[0]
    explicit = run(
        "Conv2D",
        [X33, ONES22],
        {"strides": [1] * 4, "pads": [0] * 4, "dilations": [1] * 4, "groups": 1, "offset_x": 0},
    )[0]
    np.testing.assert_array_equal(base, explicit)


def test_conv_without_strides_or_pads_is_refused_not_defaulted():
    # ge_proto_00000062_Build: fused Conv2D ops without strides/pads (conv1 is 7x7, stride 2)
    refuses("Conv2D", [X33, ONES22], {"pads": [0] * 4}, "strides")
    refuses("Conv2D", [X33, ONES22], {"strides": [1] * 4}, "pads")


def test_conv_tf_padding_modes_and_unresolved_pads():
    # SAME with stride 1 on 3x3 and a 2x2 kernel: pad bottom/right by one (TF puts the extra last)
    check(
        "Conv2D",
        [X33, ONES22],
        {"strides": [1] * 4, "pads": [-1] * 4, "padding": "SAME"},
        [[[[8, 12, 7], [20, 24, 13], [13, 15, 8]]]],
    )
    check(
        "Conv2D", [X33, ONES22], {"strides": [1] * 4, "padding": "VALID"}, [[[[8, 12], [20, 24]]]]
    )
    refuses("Conv2D", [X33, ONES22], {"strides": [1] * 4, "pads": [-1] * 4}, "pads")
    refuses("Conv2D", [X33, ONES22], {"strides": [1] * 4, "padding": "EXPLICIT"}, "padding")


def test_conv_errors_name_the_attribute_or_input():
    ok = {"strides": [1] * 4, "pads": [0] * 4}
    refuses("Conv2D", [X33, ONES22], {**ok, "offset_x": -128}, "offset_x")
    refuses("Conv2D", [X33, ONES22], {**ok, "groups": 2}, "groups")
    refuses("Conv2D", [X33, ONES22], {**ok, "pads": [0, 0, 0]}, "pads")
    refuses("Conv2D", [X33[0], ONES22], ok, "input x")
    refuses("Conv2D", [X33], ok, "input filter")
    refuses("Conv2D", [X33, ONES22, [1.0, 2.0]], ok, "input bias")
    refuses("Conv2D", [X33, ONES22], {**ok, "data_format": "NCDHW"}, "data_format", format=None)


def _conv_by_definition(x, w, b, strides, pads, dilations, groups):
    """y[n, o, i, j] = b[o] + sum over c in o's group, p, q of
    w[o, c, p, q] * x[n, c, i*sh + p*dh - top, j*sw + q*dw - left] (0 outside x)."""
    n, _, h, wd = x.shape
    o, cg, kh, kw = w.shape
    (sh, sw), (top, bottom, left, right), (dh, dw) = strides, pads, dilations
    oh = (h + top + bottom - (kh - 1) * dh - 1) // sh + 1
    ow = (wd + left + right - (kw - 1) * dw - 1) // sw + 1
    y = np.zeros((n, o, oh, ow))
    for oc in range(o):
        g = oc // (o // groups)
        for i in range(oh):
            for j in range(ow):
                acc = np.zeros(n) + (b[oc] if b is not None else 0.0)
                for ci in range(cg):
                    for p in range(kh):
                        for q in range(kw):
                            r, s = i * sh + p * dh - top, j * sw + q * dw - left
                            if 0 <= r < h and 0 <= s < wd:
                                acc += w[oc, ci, p, q] * x[:, g * cg + ci, r, s]
                y[:, oc, i, j] = acc
    return y


@pytest.mark.parametrize(
    ("c", "o", "groups", "k", "strides", "pads", "dilations"),
    [
        (3, 5, 1, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
        (6, 9, 3, (2, 3), (2, 1), (0, 1, 2, 0), (1, 2)),
        (17, 17, 17, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),  # depthwise, 17 channels
        (20, 7, 1, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),
        (4, 6, 2, (3, 2), (1, 3), (2, 2, 0, 1), (2, 1)),
    ],
)
def test_conv_matches_its_definition_on_random_tensors(c, o, groups, k, strides, pads, dilations):
    rng = np.random.default_rng(c * 100 + o)
    x = rng.standard_normal((2, c, 7, 8))
    w = rng.standard_normal((o, c // groups, *k))
    b = rng.standard_normal(o)
    attrs = {
        "strides": [1, 1, *strides],
        "pads": list(pads),
        "dilations": [1, 1, *dilations],
        "groups": groups,
    }
    want = _conv_by_definition(x, w, b, strides, pads, dilations, groups)
    np.testing.assert_allclose(
        run("Conv2D", [x, w, b], attrs, format="NCHW")[0], want, rtol=1e-10, atol=1e-10
    )
    # the same convolution in NHWC with an HWCN filter
    nhwc = {**attrs, "strides": [1, *strides, 1], "dilations": [1, *dilations, 1]}
    got = run("Conv2D", [x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0), b], nhwc, format="NHWC")[
        0
    ]
    np.testing.assert_allclose(got, want.transpose(0, 2, 3, 1), rtol=1e-10, atol=1e-10)


def test_kernels_run_with_one_blas_thread_and_restore_the_count(monkeypatch):
    """Threaded OpenBLAS made small products 900x slower on a loaded machine (blas.py)."""
    import fusion_switch.diagnose.kernels.conv as conv_module
    from fusion_switch.diagnose.kernels.blas import _controls

    controls = _controls()
    if controls is None:
        pytest.skip("numpy's BLAS is not an OpenBLAS found in /proc/self/maps")
    setter, getter = controls
    seen = []
    original = conv_module.conv2d_nchw

    def spy(*args, **kwargs):
        seen.append(getter())
        return original(*args, **kwargs)

    monkeypatch.setattr(conv_module, "conv2d_nchw", spy)
    before = getter()
    setter(2)
    try:
        run("Conv2D", [X33, ONES22], {"strides": [1] * 4, "pads": [0] * 4})
        assert seen == [1]
        assert getter() == 2
    finally:
        setter(before)


def test_the_blas_count_is_restored_when_a_kernel_raises():
    from fusion_switch.diagnose.kernels.blas import _controls, one_thread

    controls = _controls()
    if controls is None:
        pytest.skip("numpy's BLAS is not an OpenBLAS found in /proc/self/maps")
    setter, getter = controls
    before = getter()
    setter(2)
    try:
        with pytest.raises(KeyError), one_thread():
            assert getter() == 1
            with one_thread():  # nested: the inner block leaves the count to the outer one
                assert getter() == 1
            assert getter() == 1
            raise KeyError("a kernel failing")
        assert getter() == 2
    finally:
        setter(before)


@pytest.mark.parametrize(
    ("c", "o", "groups", "k", "strides", "pads", "dilations", "limit"),
    [
        (3, 5, 1, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),  # one output row at a time
        (6, 9, 3, (2, 3), (2, 1), (0, 1, 2, 0), (1, 2), 2_000),
        (17, 17, 17, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 5_000),
        (4, 6, 2, (3, 2), (1, 3), (2, 2, 0, 1), (2, 1), 3_000),
    ],
)
def test_a_large_im2col_is_built_a_block_of_rows_at_a_time_with_the_same_values(
    monkeypatch, c, o, groups, k, strides, pads, dilations, limit
):
    """Issue 16: a real network's activation made an im2col matrix of C*kh*kw*N*OH*OW float64
    at once (1.85 GB for 3x3, 64 channels, 112x112, batch 32); above IM2COL_BYTES it is built
    for some output rows at a time, each block within the limit. The values are the same to
    float64's rounding: BLAS sums a product of another width in another order (a last-bit
    difference, 1e-16 relative, where the replay's tolerances start at 1e-5)."""
    from fusion_switch.diagnose.kernels import conv

    rng = np.random.default_rng(c * 7 + o)
    x = rng.standard_normal((2, c, 11, 9))
    w = rng.standard_normal((o, c // groups, *k))
    p = dict(strides=strides, pads=pads, dilations=dilations, groups=groups)
    whole = conv.conv2d_nchw(x, w, **p)
    blocks = []
    product = conv._im2col_product

    def recorded(win, wg, groups_, cg):
        n, channels, rows, ow, kh, kw = win.shape
        blocks.append((rows, channels * kh * kw * n * rows * ow * 8))
        return product(win, wg, groups_, cg)

    monkeypatch.setattr(conv, "IM2COL_BYTES", limit)
    monkeypatch.setattr(conv, "_im2col_product", recorded)
    cut = conv.conv2d_nchw(x, w, **p)
    assert len(blocks) > 1
    assert all(size <= limit or rows == 1 for rows, size in blocks)
    assert sum(rows for rows, _ in blocks) == whole.shape[2]
    assert cut.shape == whole.shape
    np.testing.assert_allclose(cut, whole, rtol=1e-13, atol=1e-13)


def test_inside_a_held_block_kernels_do_not_ask_blas_for_its_count(monkeypatch):
    """The replay holds one BLAS thread around all it measures: its ~4,000 kernel calls then
    leave OpenBLAS alone (asking it is a ctypes call each)."""
    from fusion_switch.diagnose.kernels import blas

    controls = blas._controls()
    if controls is None:
        pytest.skip("numpy's BLAS is not an OpenBLAS found in /proc/self/maps")
    setter, getter = controls
    asked = []

    def counting():
        asked.append(1)
        return getter()

    monkeypatch.setattr(blas, "_controls", lambda: (setter, counting))
    before = getter()
    setter(2)
    try:
        with blas.one_thread():
            assert getter() == 1
            for _ in range(3):
                run("Conv2D", [X33, ONES22], {"strides": [1] * 4, "pads": [0] * 4})
            assert getter() == 1
        assert asked == [1]  # by the holding block only
        assert getter() == 2
    finally:
        setter(before)


def test_a_block_that_fails_to_enter_does_not_leave_later_blocks_idle(monkeypatch):
    """A Ctrl-C while OpenBLAS is asked for its count: __exit__ does not run, so the block
    must not count itself, or every later block would leave kernels on many threads."""
    from fusion_switch.diagnose.kernels import blas

    asked = []

    def interrupted():
        asked.append(1)
        raise KeyboardInterrupt

    monkeypatch.setattr(blas, "_controls", lambda: (lambda count: None, interrupted))
    with pytest.raises(KeyboardInterrupt), blas.one_thread():
        pass
    assert blas._DEPTH == [0]
    with pytest.raises(KeyboardInterrupt), blas.one_thread():
        pass
    assert asked == [1, 1]


def test_pads_that_disagree_with_padding_are_refused() -> None:
    """A review (forty-first round): ``padding`` SAME with ``pads`` [0,0,0,0] took the pads,
    and the output lost a row and a column; GE's shape inference writes pads from padding,
    so the two disagreeing is a graph the kernel cannot be sure of."""
    x, w = np.ones((1, 1, 5, 5)), np.ones((1, 1, 3, 3))
    base = {"strides": [1, 1, 1, 1], "data_format": "NCHW"}
    same = run("Conv2D", [x, w], {**base, "pads": [1, 1, 1, 1], "padding": "SAME"})[0]
    assert same.shape == (1, 1, 5, 5)  # agreeing: replayed
    assert run("Conv2D", [x, w], {**base, "pads": [0] * 4, "padding": "VALID"})[0].shape == (
        1,
        1,
        3,
        3,
    )
    refuses("Conv2D", [x, w], {**base, "pads": [0, 0, 0, 0], "padding": "SAME"}, "padding")
    refuses("Conv2D", [x, w], {**base, "pads": [1, 1, 1, 1], "padding": "VALID"}, "padding")
