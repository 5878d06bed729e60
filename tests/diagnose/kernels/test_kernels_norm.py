"""BatchNorm / BNInference(D) / LayerNorm: hand-computed cases."""

from __future__ import annotations

import numpy as np
from kernel_check import check, refuses, run

# 3 channels (not a multiple of 16), 1x2 spatial
X = np.array([[[[1.0, 3.0]], [[2.0, 6.0]], [[-1.0, 0.0]]]])  # [1, 3, 1, 2]


def test_batchnorm_known_mean_and_variance():
    # channel c: (x - mean) / sqrt(var + eps) * gamma + beta, eps 0 so sqrt(var) = 1, 2, 4
    gamma, beta = [1.0, 2.0, 0.5], [0.0, 1.0, -1.0]
    mean, var = [1.0, 2.0, 1.0], [1.0, 4.0, 16.0]
    check(
        "BatchNorm",
        [X, gamma, beta, mean, var],
        {"epsilon": 0.0},
        [[[[0.0, 2.0]], [[1.0, 5.0]], [[-1.25, -1.125]]]],
        format="NCHW",
    )


def test_batchnorm_epsilon_default_is_ge_1e_4():
    out = run("BatchNorm", [[[[[2.0]]]][0], [1.0], [0.0], [0.0], [1.0 - 1e-4]], {})[0]
    assert np.isclose(out.item(), 2.0, rtol=1e-12)


def test_batchnorm_nhwc_channels_last():
    x = np.transpose(X, (0, 2, 3, 1))
    out = run(
        "BatchNorm",
        [x, [1.0] * 3, [0.0] * 3, [1.0, 2.0, 1.0], [1.0, 4.0, 16.0]],
        {"epsilon": 0.0},
        format="NHWC",
    )[0]
    np.testing.assert_allclose(out[0, 0, :, 2], [-0.5, -0.25])


def test_batchnorm_errors():
    args = [X, [1.0] * 3, [0.0] * 3, [0.0] * 3, [1.0] * 3]
    refuses("BatchNorm", args, {"is_training": True}, "is_training")
    refuses(
        "BatchNorm", [X, [1.0] * 2, [0.0] * 3, [0.0] * 3, [1.0] * 3], {}, "scale", format="NCHW"
    )
    refuses("BatchNorm", args[:3], {}, "mean")


def test_batchnorm_layout_default_is_ge_nhwc():
    # no desc format, no data_format: GE's default NHWC puts the channels last (2 of them)
    out = run("BatchNorm", [X, [1.0, 2.0], [0.0, 0.0], [0.0, 0.0], [1.0, 1.0]], {"epsilon": 0.0})[0]
    np.testing.assert_allclose(out[0, :, 0, 1], [6.0, 12.0, 0.0])


def test_bninferenced_uses_host_folded_mean_and_variance():
    # folded inputs: mean = -mu, variance = 1/sqrt(var + eps); y = (x + mean) * variance
    check(
        "BNInferenceD",
        [X, [-1.0, -2.0, -1.0], [1.0, 0.5, 0.25]],
        {"epsilon": 1e-5, "use_global_stats": True, "mode": 1},
        [[[[0.0, 2.0]], [[0.0, 2.0]], [[-0.5, -0.25]]]],
    )


def test_bninferenced_optional_scale_and_bias():
    check(
        "BNInferenceD",
        [X, [0.0] * 3, [1.0] * 3, [2.0, 2.0, 2.0], [1.0, 0.0, 0.0]],
        {},
        [[[[3.0, 7.0]], [[4.0, 12.0]], [[-2.0, 0.0]]]],
    )


def test_bninferenced_on_3d_input_channel_axis_1():
    x = np.ones((1, 3, 4))  # the TDNN graph's [1, 512, 1800]
    out = run("BNInferenceD", [x, [0.0, 1.0, 2.0], [1.0, 1.0, 1.0]], {})[0]
    np.testing.assert_allclose(out[0, :, 0], [1.0, 2.0, 3.0])


def test_bninferenced_errors():
    refuses(
        "BNInferenceD", [X, [0.0] * 3, [1.0] * 3], {"use_global_stats": False}, "use_global_stats"
    )
    refuses("BNInferenceD", [X, [0.0] * 4, [1.0] * 3], {}, "input mean")


def test_bninference_caffe_scale_factor():
    # Caffe stores mean*sf and var*sf with the factor sf = 2: mean 2 -> 1, var 8 -> 4
    x = np.array([[[[5.0]], [[1.0]]]])  # 2 channels
    check(
        "BNInference",
        [x, [2.0, 2.0], [8.0, 0.5], [2.0]],
        {"epsilon": 0.0},
        [[[[2.0]], [[0.0]]]],
        format="NCHW",
    )
    # scale factor 0 zeroes the statistics (Caffe): y = x / sqrt(epsilon)
    check(
        "BNInference",
        [x, [2.0, 2.0], [8.0, 0.5], [0.0]],
        {"epsilon": 0.25},
        [[[[10.0]], [[2.0]]]],
        format="NCHW",
    )
    refuses("BNInference", [x, [2.0, 2.0], [8.0, 0.5]], {}, "momentum", format="NCHW")
    refuses("BNInference", [x, [2.0, 2.0], [8.0, 0.5], [1.0, 2.0]], {}, "momentum", format="NCHW")


def test_layernorm_last_axis():
    x = np.array([[1.0, 3.0], [2.0, 6.0]])
    # row 0: mean 2, var 1 -> [-1, 1]; row 1: mean 4, var 4 -> [-1, 1]; then *gamma + beta
    out = run(
        "LayerNorm",
        [x, [2.0, 1.0], [0.5, 0.5]],
        {"begin_norm_axis": -1, "begin_params_axis": -1, "epsilon": 0.0},
    )
    np.testing.assert_allclose(out[0], [[-1.5, 1.5], [-1.5, 1.5]])
    np.testing.assert_allclose(out[1].ravel(), [2.0, 4.0])
    np.testing.assert_allclose(out[2].ravel(), [1.0, 4.0])
