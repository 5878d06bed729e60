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


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # 1 / (1 + exp(-x)), the same operations in place (one array instead of four)
    t = np.negative(x, out=np.empty_like(x))  # an array even for a 0-d x
    return _sigmoid_of_negated(t)


def _sigmoid_of_negated(t: np.ndarray) -> np.ndarray:
    """``t`` = -x becomes sigmoid(x), in place."""
    with np.errstate(over="ignore"):
        np.exp(t, out=t)
    t += 1.0
    return np.divide(1.0, t, out=t)


def _times_sigmoid(x: np.ndarray, scale: float) -> np.ndarray:
    """x * sigmoid(scale * x) in one array (FastGelu, Swish): the operations of
    ``x * _sigmoid(scale * x)`` with the same values (-(scale * x) is (scale * x) negated,
    exactly), where that held three arrays of x's size at once: on an LLM's MLP activation
    (tens of millions of values, float64) each is hundreds of MB (issue 16)."""
    t = np.asarray(scale * x)  # an array even for a 0-d x
    np.negative(t, out=t)
    return np.multiply(x, _sigmoid_of_negated(t), out=t)


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


@kernel("PRelu")
def prelu(inputs):
    x, w = need(inputs, 0, "x"), need(inputs, 1, "weight")
    if w.size not in (1, x.shape[1] if x.ndim > 1 else 1):
        raise KernelError(f"input weight has {w.size} values for {x.shape} (channel axis 1)")
    shape = [1] * x.ndim
    if w.size > 1:
        shape[1] = w.size
    return [np.where(x >= 0, x, x * w.reshape(shape))]


@kernel("Sigmoid")
def sigmoid(inputs):
    return [_sigmoid(need(inputs, 0, "x"))]


@kernel("Tanh")
def tanh(inputs):
    return [np.tanh(need(inputs, 0, "x"))]


@kernel("Gelu")
def gelu(inputs):
    x = need(inputs, 0, "x")
    # 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), the same operations in the same
    # order, in place (one temporary instead of eight)
    t = np.multiply(x, x, out=np.empty_like(x))  # an array even for a 0-d x
    t *= x
    t *= 0.044715
    t += x
    t *= math.sqrt(2.0 / math.pi)
    np.tanh(t, out=t)
    t += 1.0
    half = np.multiply(0.5, x, out=np.empty_like(x))
    half *= t
    return [half]


@kernel("FastGelu", "FastGeluV2")
def fast_gelu(inputs):
    return [_times_sigmoid(need(inputs, 0, "x"), 1.702)]


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
    # x * clip(x + 3, 0, 6) / 6, the same operations in one array instead of two at a time
    t = np.asarray(x + 3.0)
    np.clip(t, 0.0, 6.0, out=t)
    np.multiply(x, t, out=t)
    t /= 6.0
    return [t]


@kernel("Softplus")
def softplus(inputs):
    return [np.logaddexp(0.0, need(inputs, 0, "x"))]


@kernel("Mish")
def mish(inputs):
    x = need(inputs, 0, "x")
    # x * tanh(softplus(x)), the same operations in one array instead of two at a time
    t = np.asarray(np.logaddexp(0.0, x))
    np.tanh(t, out=t)
    return [np.multiply(x, t, out=t)]
