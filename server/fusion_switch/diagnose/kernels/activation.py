"""Activations, one input each (PRelu also takes its per-channel slope).

Sources: GE's op definitions in ``nonlinear_fuc_ops.h`` of mindspore-ai/graphengine
(``third_party/fwkacllib/inc/ops/nonlinear_fuc_ops.h``): ``LeakyRelu`` (``negative_slope``
0.0), ``Swish`` (``scale`` 1.0: x * sigmoid(scale * x)), ``Elu`` (``alpha``, ``scale``,
``input_scale`` all 1.0), ``Gelu`` (the tanh approximation), ``FastGelu``
(x / (1 + exp(-1.702|x|)) * exp(0.851 (x - |x|)), which is x * sigmoid(1.702 x)), ``Relu6``
(clip to [0, 6]), ``HardSwish``, ``Mish``, ``Softplus``, ``PRelu`` (slope per channel, axis 1).
Gelu: the op definition says x * Φ(x); the TBE kernel (``gelu.py`` in Ascend's built-in op
implementations, ``gelu_compute``) evaluates the tanh approximation
0.5 x (1 + tanh(sqrt(2/π) (x + 0.044715 x³))), and so does the generator (``synth/network.py``
``k_gelu``); the replay follows the kernel. The two differ by up to ~5e-4 absolute.
"""

from __future__ import annotations

import math

import numpy as np

from .common import as_float, need
from .registry import KernelError, kernel

# Elementwise kernels of several steps run a block of values at a time, each step in place in
# the output: on an LLM's MLP activation (tens of millions of values, float64: hundreds of MB)
# one array of x's size is held instead of two or three, and the steps work in the caches
# (Gelu on 6.4M values: 14 ms instead of 66 ms). The same operations in the same order on each
# value, so the same bits (issue 16).
_BLOCK = 1 << 16


def _blockwise(x: np.ndarray, steps, dtype=None) -> np.ndarray:
    """``steps(x_block, out_block)`` over ``x`` a block at a time; the output has x's shape
    and ``dtype`` (x's unless given). A non-contiguous x is copied first (``ravel``): the
    replay's values are contiguous."""
    flat = np.ravel(x)
    out = np.empty(flat.shape, dtype=dtype if dtype is not None else flat.dtype)
    for start in range(0, flat.size, _BLOCK):
        steps(flat[start : start + _BLOCK], out[start : start + _BLOCK])
    return out.reshape(np.shape(x))


def _sigmoid_in(out: np.ndarray) -> None:
    """``out`` = -x becomes sigmoid(x) = 1 / (1 + exp(-x)), in place."""
    with np.errstate(over="ignore"):
        np.exp(out, out=out)
    out += 1.0
    np.divide(1.0, out, out=out)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    def steps(xb, out):
        np.negative(xb, out=out)
        _sigmoid_in(out)

    return _blockwise(x, steps)


def _times_sigmoid(x: np.ndarray, scale: float) -> np.ndarray:
    """x * sigmoid(scale * x) (FastGelu, Swish): -(scale * x) is (scale * x) negated, exactly."""

    def steps(xb, out):
        np.multiply(xb, scale, out=out)
        np.negative(out, out=out)
        _sigmoid_in(out)
        np.multiply(xb, out, out=out)

    return _blockwise(x, steps, np.result_type(x, scale))


@kernel("Relu")
def relu(inputs):
    return [np.maximum(need(inputs, 0, "x"), 0.0)]


@kernel("Relu6")
def relu6(inputs):
    return [np.clip(need(inputs, 0, "x"), 0.0, 6.0)]


@kernel("LeakyRelu", attrs=("negative_slope",))
def leaky_relu(inputs, *, negative_slope=0.0):
    x = need(inputs, 0, "x")
    return [np.where(x >= 0, x, x * as_float(negative_slope, "negative_slope"))]


@kernel("PRelu", layout_sensitive=True)
def prelu(inputs, *, format=None):
    # the slopes go along the channel axis: last for a channels-last input (a review: axis 1
    # always, wrong on NHWC inputs whose H equals C)
    x, w = need(inputs, 0, "x"), need(inputs, 1, "weight")
    axis = x.ndim - 1 if x.ndim > 2 and str(format).upper() in ("NHWC", "NDHWC") else 1
    if w.size not in (1, x.shape[axis] if x.ndim > 1 else 1):
        raise KernelError(f"input weight has {w.size} values for {x.shape} (channel axis {axis})")
    shape = [1] * x.ndim
    if w.size > 1:
        shape[axis] = w.size
    return [np.where(x >= 0, x, x * w.reshape(shape))]


@kernel("Sigmoid")
def sigmoid(inputs):
    return [_sigmoid(need(inputs, 0, "x"))]


@kernel("Tanh")
def tanh(inputs):
    return [np.tanh(need(inputs, 0, "x"))]


@kernel("Gelu")
def gelu(inputs):
    return [_blockwise(need(inputs, 0, "x"), _gelu_steps)]


def _gelu_steps(x: np.ndarray, out: np.ndarray) -> None:
    # 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), the same operations in the same
    # order, in place (one temporary of a block's size instead of eight of x's)
    t = np.multiply(x, x)
    t *= x
    t *= 0.044715
    t += x
    t *= math.sqrt(2.0 / math.pi)
    np.tanh(t, out=t)
    t += 1.0
    np.multiply(0.5, x, out=out)
    out *= t


@kernel("FastGelu")
def fast_gelu(inputs):
    return [_times_sigmoid(need(inputs, 0, "x"), 1.702)]


@kernel("FastGeluV2")
def fast_gelu_v2(inputs):
    # x * (sgn(x) * [-0.1444 * (clip(|0.7071 x|, max=1.769) - 1.769)^2 + 0.5] + 0.5), sgn(x)
    # being (x + 1e-12) / |x + 1e-12| (CANN's FastGeluV2 / Ascend C FasterGeluV2; a review:
    # it ran FastGelu's formula, up to 0.038 off)
    x = need(inputs, 0, "x")
    shifted = x + 1e-12
    sign = np.where(shifted < 0, -1.0, 1.0)
    t = np.minimum(np.abs(0.7071 * x), 1.769) - 1.769
    return [x * (sign * (-0.1444 * t * t + 0.5) + 0.5)]


@kernel("Swish", attrs=("scale",))
def swish(inputs, *, scale=1.0):
    return [_times_sigmoid(need(inputs, 0, "x"), as_float(scale, "scale"))]


@kernel("Elu", attrs=("alpha", "scale", "input_scale"))
def elu(inputs, *, alpha=1.0, scale=1.0, input_scale=1.0):
    x = need(inputs, 0, "x")
    a, s, i = (
        as_float(v, n)
        for v, n in ((alpha, "alpha"), (scale, "scale"), (input_scale, "input_scale"))
    )
    with np.errstate(over="ignore"):
        neg = a * (np.exp(np.minimum(x, 0.0) * i) - 1.0)
    return [s * np.where(x > 0, x, neg)]


@kernel("HardSwish")
def hard_swish(inputs):
    x = need(inputs, 0, "x")

    def steps(xb, out):  # x * clip(x + 3, 0, 6) / 6
        np.add(xb, 3.0, out=out)
        np.clip(out, 0.0, 6.0, out=out)
        np.multiply(xb, out, out=out)
        out /= 6.0

    return [_blockwise(x, steps, np.result_type(x, 3.0))]


@kernel("Softplus")
def softplus(inputs):
    return [np.logaddexp(0.0, need(inputs, 0, "x"))]


@kernel("Mish")
def mish(inputs):
    x = need(inputs, 0, "x")

    def steps(xb, out):  # x * tanh(softplus(x))
        np.logaddexp(0.0, xb, out=out)
        np.tanh(out, out=out)
        np.multiply(xb, out, out=out)

    return [_blockwise(x, steps, np.result_type(x, 0.0))]
