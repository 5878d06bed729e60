"""Activations: hand-computed cases."""

from __future__ import annotations

import math

from kernel_check import check, refuses

X = [-2.0, 0.0, 3.0, 8.0]


def test_relu_family():
    check("Relu", [X], {}, [0, 0, 3, 8])
    check("Relu6", [X], {}, [0, 0, 3, 6])
    check("LeakyRelu", [X], {}, [0, 0, 3, 8])  # GE default negative_slope 0.0
    check("LeakyRelu", [X], {"negative_slope": 0.1}, [-0.2, 0, 3, 8])
    check(
        "PRelu", [[[-2.0, 2.0], [-4.0, 4.0]], [0.5, 0.25]], {}, [[-1, 2], [-2, 4]]
    )  # slope per column (axis 1)


def test_sigmoid_tanh():
    check("Sigmoid", [[0.0, math.log(3.0)]], {}, [0.5, 0.75])
    check("Tanh", [[0.0, math.log(2.0)]], {}, [0.0, 0.6])  # (4-1)/(4+1)


def test_gelu_fastgelu_swish_elu():
    c = math.sqrt(2 / math.pi)
    check("Gelu", [[0.0, 1.0]], {}, [0.0, 0.5 * (1 + math.tanh(c * 1.044715))])
    check("FastGelu", [[0.0, 1.0]], {}, [0.0, 1 / (1 + math.exp(-1.702))])
    check("Swish", [[math.log(3.0)]], {}, [0.75 * math.log(3.0)])
    check("Swish", [[math.log(3.0)]], {"scale": 0.0}, [0.5 * math.log(3.0)])
    check("Elu", [[-math.log(2.0), 2.0]], {}, [-0.5, 2.0])
    check("Elu", [[-math.log(2.0), 2.0]], {"alpha": 2.0, "scale": 3.0}, [-3.0, 6.0])


def test_bad_attribute_value_is_named():
    refuses("LeakyRelu", [X], {"negative_slope": "steep"}, "negative_slope")
    refuses("Relu", [], {}, "input x")
