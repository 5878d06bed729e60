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


def test_fast_gelu_v2_is_its_own_function():
    """A review: FastGeluV2 ran FastGelu's x*sigmoid(1.702x), up to 0.038 off the op CANN
    defines (Ascend C FasterGeluV2: x*(sgn(x)*[-0.1444*(clip(|0.7071x|, max=1.769) - 1.769)^2
    + 0.5] + 0.5)), so the replay proved a correct fused op wrong. By hand: at 1,
    0.7071 - 1.769 = -1.0619, squared 1.12763161, times -0.1444 -0.16283, so 0.83717; at -1
    the sign flips the bracket: -(0.33717) + 0.5 = 0.16283, times -1; past |x| = 2.5017 the
    bracket is 0.5, so x or 0."""
    check(
        "FastGeluV2",
        [[0.0, 1.0, -1.0, 3.0, -3.0]],
        {},
        [0.0, 0.837169995516, -0.162830004484, 3.0, 0.0],
    )


def test_bad_attribute_value_is_named():
    refuses("LeakyRelu", [X], {"negative_slope": "steep"}, "negative_slope")
    refuses("Relu", [], {}, "input x")


def test_prelu_takes_the_channel_axis_from_the_layout():
    """A review: PRelu always took axis 1 for the channels; on an NHWC input whose H equals
    C the slopes went along H (values 0.25 off), a correct fused op then "proven" wrong."""
    x = [[[[-2.0, -2.0], [-2.0, -2.0]], [[-4.0, -4.0], [-4.0, -4.0]]]]  # N, H=2, W=2, C=2
    slopes = [0.5, 0.25]
    check(
        "PRelu",
        [x, slopes],
        {},
        [[[[-1.0, -0.5], [-1.0, -0.5]], [[-2.0, -1.0], [-2.0, -1.0]]]],
        format="NHWC",
    )
