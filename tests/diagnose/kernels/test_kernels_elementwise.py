"""Element-wise arithmetic, Eltwise, Bias/BiasAdd, Scale: hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
from kernel_check import check, refuses, run

A = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])


def test_binary_ops_broadcast_like_numpy():
    row = np.array([10.0, 20.0, 30.0])
    check("Add", [A, row], {}, [[11, 22, 33], [14, 25, 36]])
    check("Sub", [A, 1.0], {}, [[0, 1, 2], [3, 4, 5]])
    check("Mul", [A, [[2.0], [3.0]]], {}, [[2, 4, 6], [12, 15, 18]])
    check("RealDiv", [A, 2.0], {}, [[0.5, 1, 1.5], [2, 2.5, 3]])
    check("Maximum", [A, 3.5], {}, [[3.5, 3.5, 3.5], [4, 5, 6]])
    check("Minimum", [A, 3.5], {}, [[1, 2, 3], [3.5, 3.5, 3.5]])
    check("SquaredDifference", [A, 2.0], {}, [[1, 0, 1], [4, 9, 16]])
    check("Rsqrt", [[4.0, 0.25]], {}, [0.5, 2.0])


def test_binary_shape_mismatch_names_the_inputs():
    refuses("Add", [A, [1.0, 2.0]], {}, "x1")


def test_eltwise_modes_and_coeff():
    b = np.ones_like(A)
    check("Eltwise", [A, b], {"N": 2}, A + 1)  # GE default mode 1 = sum
    check("Eltwise", [A, b], {"N": 2, "mode": 1, "coeff": [2.0, -1.0]}, 2 * A - 1)
    check("Eltwise", [A, 2 * b], {"N": 2, "mode": 0}, 2 * A)
    check("Eltwise", [A, 3 * b], {"N": 2, "mode": 2}, [[3, 3, 3], [4, 5, 6]])
    check("Eltwise", [A, b], {"N": 2, "coeff": []}, A + 1)  # real graphs: coeff []


def test_eltwise_errors():
    refuses("Eltwise", [A, A], {"N": 2, "mode": 3}, "mode")
    refuses("Eltwise", [A, A], {"N": 3}, "N")
    refuses("Eltwise", [A, A], {"N": 2, "coeff": [1.0]}, "coeff")
    # a scalar coeff (hypothesis found it raising TypeError, which the replay cannot report)
    refuses("Eltwise", [A, A], {"N": 2, "coeff": 1}, "coeff")
    check("Eltwise", [A], {"N": 1, "coeff": 2}, 2 * A)


def test_bias_add_channel_axis_from_data_format():
    x = np.zeros((1, 2, 1, 3))
    out_nchw = [[[[1, 1, 1]], [[2, 2, 2]]]]
    check("BiasAdd", [x, [1.0, 2.0]], {"data_format": "NCHW"}, out_nchw)
    check("BiasAdd", [x, [1.0, 2.0, 3.0]], {}, [[[[1, 2, 3]], [[1, 2, 3]]]])  # default NHWC
    check("BiasAdd", [np.zeros((2, 3)), [1.0, 2.0, 3.0]], {}, [[1, 2, 3], [1, 2, 3]])
    refuses("BiasAdd", [x, [1.0, 2.0]], {}, "bias")


def test_scale_caffe_axis_semantics():
    x = np.ones((1, 3, 2, 2))  # 3 channels
    out = np.ones((1, 3, 2, 2)) * np.array([2.0, 3.0, 4.0]).reshape(1, 3, 1, 1) + 1
    check("Scale", [x, [2.0, 3.0, 4.0], [1.0, 1.0, 1.0]], {"axis": 1, "num_axes": 1}, out)
    check("Scale", [x, [2.0, 3.0, 4.0], [1.0, 1.0, 1.0]], {}, out)  # GE defaults axis 1
    check("Scale", [A, 2.0], {}, 2 * A)  # a scalar scale
    refuses("Scale", [x, [2.0, 3.0]], {}, "scale")


def test_bias_caffe_axis_semantics():
    check("Bias", [A, [10.0, 20.0]], {"axis": 0}, [[11, 12, 13], [24, 25, 26]])
    refuses("Bias", [A, [1.0, 2.0]], {"axis": 5}, "axis")


def test_exp_log_with_base_scale_shift():
    check("Exp", [[0.0, 1.0]], {}, [1.0, math.e])  # GE default base -1 = e
    check("Exp", [[1.0, 2.0]], {"base": 2.0, "scale": 2.0, "shift": -1.0}, [2.0, 8.0])
    check("Log", [[1.0, math.e]], {}, [0.0, 1.0])
    check("Log", [[4.0, 8.0]], {"base": 2.0, "scale": 2.0}, [3.0, 4.0])
    refuses("Exp", [[1.0]], {"base": -2.0}, "base")
    refuses("Log", [[1.0]], {"base": 1.0}, "base")


def test_scalar_attribute_ops():
    check("Muls", [A], {"value": 0.5}, A / 2)
    check("Adds", [A], {"value": -1.0}, A - 1)
    check("Axpy", [A, np.ones_like(A)], {"alpha": 3.0}, A + 3)
    check("Power", [[1.0, 2.0]], {"power": 2.0, "scale": 3.0, "shift": 1.0}, [16.0, 49.0])
    check("Power", [[1.0, 2.0]], {}, [1.0, 2.0])  # GE defaults: (0 + 1 x) ** 1
    refuses("Muls", [A], {}, "value")
    refuses("Axpy", [A, A], {}, "alpha")


def test_addn_clip_round_and_friends():
    check("AddN", [A, A, A], {"N": 3}, 3 * A)
    refuses("AddN", [A, A], {"N": 3}, "N")
    check("ClipByValue", [A, 2.0, 4.5], {}, [[2, 2, 3], [4, 4.5, 4.5]])
    check("Round", [[0.5, 1.5, 2.5, -0.5]], {}, [0.0, 2.0, 2.0, -0.0])  # half to even
    check("Pow", [[2.0, 3.0], 2.0], {}, [4.0, 9.0])
    check("Floor", [[-1.5, 1.5]], {}, [-2.0, 1.0])
    check("Erf", [[0.0]], {}, [0.0])
    assert abs(run("Erf", [[1.0]], {})[0][0] - math.erf(1.0)) < 1e-15
