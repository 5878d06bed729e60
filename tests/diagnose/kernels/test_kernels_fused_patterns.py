"""The fused patterns of the real graphs and of the generator, computed two ways with the
kernels: as the chain of original ops (what the replay evaluates) and as the single fused op
a correct fusion pass builds (folded weights, merged ops). They must agree to rounding, or an
innocent fused op would look guilty. Channel counts 3 and 5 (not multiples of 16)."""

from __future__ import annotations

import numpy as np
from kernel_check import run

RNG = np.random.default_rng(11)
X = RNG.standard_normal((2, 3, 6, 5))
W = RNG.standard_normal((5, 3, 3, 3))
CONV = {"strides": [1, 1, 2, 1], "pads": [1, 1, 0, 1], "dilations": [1, 1, 1, 1], "groups": 1}


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-11)


def test_caffe_conv_batchnorm_scale_relu_equals_the_folded_conv():
    """ResNet-50's conv blocks (ge_proto_00017: Conv + BN + Scale fused, Relu tail by UB)."""
    mean, var = RNG.standard_normal(5), RNG.uniform(0.5, 2.0, 5)
    gamma, beta = RNG.uniform(0.5, 1.5, 5), RNG.standard_normal(5)
    s, b = RNG.uniform(0.5, 2.0, 5), RNG.standard_normal(5)
    eps = 1e-5
    conv = run("Conv2D", [X, W], CONV, format="NCHW")[0]
    bn = run("BatchNorm", [conv, gamma, beta, mean, var], {"epsilon": eps}, format="NCHW")[0]
    scaled = run("Scale", [bn, s, b], {"axis": 1, "num_axes": 1})[0]
    chain = run("Relu", [scaled], {})[0]
    k = s * gamma / np.sqrt(var + eps)
    folded_w, folded_b = (
        W * k.reshape(-1, 1, 1, 1),
        s * (beta - mean * gamma / np.sqrt(var + eps)) + b,
    )
    fused = run("Relu", [run("Conv2D", [X, folded_w, folded_b], CONV, format="NCHW")[0]], {})[0]
    close(chain, fused)


def test_batchnorm_equals_bninferenced_on_host_folded_constants():
    """BatchNormBnInferFusionPass + HostBNFusionPass (msit_tdnn_test.om.json)."""
    x = RNG.standard_normal((1, 3, 7))
    gamma, beta = RNG.uniform(0.5, 1.5, 3), RNG.standard_normal(3)
    mean, var, eps = RNG.standard_normal(3), RNG.uniform(0.5, 2.0, 3), 1e-5
    original = run("BatchNorm", [x, gamma, beta, mean, var], {"epsilon": eps}, format="NCHW")[0]
    inv_std = 1 / np.sqrt(var + eps)
    folded = run("BNInferenceD", [x, -mean, inv_std, gamma, beta], {"epsilon": eps}, format="NCHW")
    close(original, folded[0])


def test_conv_eltwise_relu_equals_conv_add_relu():
    """ge_proto_00062's ReadSelect/Conv + Eltwise + LeakyRelu(0) tails."""
    conv = run("Conv2D", [X, W], CONV, format="NCHW")[0]
    residual = RNG.standard_normal(conv.shape)
    eltwise = run("Eltwise", [conv, residual], {"N": 2, "mode": 1, "coeff": []})[0]
    a = run("LeakyRelu", [eltwise], {"negative_slope": 0.0})[0]
    b = run("Relu", [run("Add", [conv, residual], {})[0]], {})[0]
    close(a, b)


def test_generator_layer_norm_primitives_equal_layernorm():
    """The generator's 9 primitive ops (LayerNormFusionPass) against GE's LayerNorm."""
    x = RNG.standard_normal((1, 4, 5))
    gamma, beta, eps = RNG.uniform(0.8, 1.2, 5), RNG.uniform(-0.1, 0.1, 5), 1e-5
    mean = run("ReduceMeanD", [x], {"axes": [-1], "keep_dims": True})[0]
    sqd = run("SquaredDifference", [x, mean], {})[0]
    var = run("ReduceMeanD", [sqd], {"axes": [-1], "keep_dims": True})[0]
    rstd = run("Rsqrt", [run("Add", [var, eps], {})[0]], {})[0]
    norm = run("Mul", [run("Sub", [x, mean], {})[0], rstd], {})[0]
    chain = run("Add", [run("Mul", [norm, gamma], {})[0], beta], {})[0]
    attrs = {"begin_norm_axis": -1, "begin_params_axis": -1, "epsilon": eps}
    close(chain, run("LayerNorm", [x, gamma, beta], attrs)[0])


def test_matmul_biasadd_equals_matmul_with_bias_and_transpose_reshape_confusion():
    """MatMulBiasAddFusionPass and TransposeReshapeFusionPass (generator blocks)."""
    a, w, bias = RNG.standard_normal((1, 6, 3)), RNG.standard_normal((3, 5)), RNG.standard_normal(5)
    chain = run("BiasAdd", [run("BatchMatMulV2", [a, w], {})[0], bias], {})[0]
    close(chain, run("BatchMatMulV2", [a, w, bias], {})[0])
    x = RNG.standard_normal((1, 5, 2, 3))
    tr = run("TransposeD", [x], {"perm": [0, 2, 3, 1]})[0]
    chain = run("Reshape", [tr], {"shape": [1, 6, 5]})[0]
    fused = run(
        "ConfusionTransposeD",
        [x],
        {"perm": [0, 2, 3, 1], "shape": [1, 6, 5], "transpose_first": True},
    )[0]
    close(chain, fused)


def test_conv_mul_equals_conv_with_scaled_weights():
    """AConv2dMulFusion (generator): a scalar Mul folded into the filter."""
    chain = run("Mul", [run("Conv2D", [X, W], CONV, format="NCHW")[0], 0.125], {})[0]
    close(chain, run("Conv2D", [X, W * 0.125], CONV, format="NCHW")[0])
