"""Normalisation: BatchNorm / FusedBatchNorm(V3) in inference, BNInference(D), LayerNorm.

Sources: GE's op definitions in ``nn_batch_norm_ops.h`` and ``nn_norm_ops.h``
(mindspore-ai/graphengine, ``third_party/fwkacllib/inc/ops/``): ``REG_OP(BatchNorm)`` (inputs
x, scale, offset, mean, variance; ``epsilon`` 1e-4, ``data_format`` NHWC, ``is_training``),
``REG_OP(BNInferenceD)`` (x, mean, variance, optional scale, b; ``momentum`` 0.9, ``epsilon``
1e-5, ``use_global_stats``, ``mode``), ``REG_OP(LayerNorm)`` (x, gamma, beta;
``begin_norm_axis``/``begin_params_axis`` 0, ``epsilon`` 1e-7; outputs y, mean, variance).

BNInferenceD: the TBE kernel (``bninference_d.py`` in Ascend's op implementations, compute
``_fused_compute``) evaluates ``y = (x + mean) * variance`` and then ``* scale + b`` when those
inputs are present; ``epsilon``/``momentum`` never enter the kernel. GE's ``HostBNFusionPass``
(in the ``pass_name`` of every BNInferenceD of ``msit_tdnn_test.om.json``) folds the framework's
statistics into those two inputs beforehand (mean → -mean, variance → 1/sqrt(var + eps)), so
the op's dumped inputs already hold the folded constants and this kernel replays the op as the
device runs it. A BNInferenceD exists only after ``BatchNormBnInferFusionPass`` converted a
framework BatchNorm (the same ``pass_name`` list), so a replay of fusion-off ops meets the
original BatchNorm instead; this kernel serves the fusion-on side.

BNInference (``momentum`` as input 3) is replayed as its definition states, on raw statistics:
y = (x - mean/momentum) / sqrt(variance/momentum + epsilon) (Caffe's scale factor). Unlike
BNInferenceD, no TBE source for it was found to confirm what its inputs hold on the device: a
replay should check it against the op's own dump (the noise-floor calibration does) before
trusting it.

FusedBatchNorm(V3) are TensorFlow's names, which GE's parser maps to BatchNorm; they are
registered as aliases of it for graphs that keep the framework type.

BatchNorm: the generator (``synth/network.py``) writes BatchNorm with running statistics and no
``is_training``; an absent ``is_training`` is read as inference (the only mode a replay of an
inference model needs) and an explicit ``True`` is refused rather than guessed.
"""

from __future__ import annotations

import numpy as np

from .common import as_bool, as_float, as_int, channel_axis, layout, need, norm_axis, optional
from .registry import KernelError, kernel


def _per_channel(v: np.ndarray, x: np.ndarray, axis: int, name: str) -> np.ndarray:
    """A per-channel vector shaped to broadcast along ``axis`` of ``x``."""
    c = x.shape[axis] if x.ndim else 1
    if v.size == 1:
        return v.reshape(())
    if v.size != c:
        raise KernelError(f"input {name} has {v.size} values for {c} channels (axis {axis})")
    shape = [1] * x.ndim
    shape[axis] = c
    return v.reshape(shape)


def _bn_axis(x: np.ndarray, format, data_format, default: str) -> int:
    if x.ndim == 4:
        return channel_axis(layout(format, data_format, default), 4)
    for name, value in (("format", format), ("data_format", data_format)):
        if value is not None and not isinstance(value, str):
            raise KernelError(f"{name}={value!r} is not a layout name")
    fmt = (format or data_format or "NCHW").upper()
    return channel_axis("NCHW" if fmt == "ND" else fmt, x.ndim)


@kernel(
    "BatchNorm",
    "FusedBatchNorm",
    "FusedBatchNormV3",
    attrs=("epsilon", "data_format", "is_training"),
    layout_sensitive=True,
)
def batch_norm(inputs, *, format=None, epsilon=1e-4, data_format=None, is_training=False):
    """Inference: y = (x - mean) / sqrt(variance + epsilon) * scale + offset; also returns the
    mean and variance (GE's batch_mean/batch_variance outputs in inference mode)."""
    if as_bool(is_training, "is_training"):
        raise KernelError("attribute is_training=True: training-mode batch statistics")
    x = need(inputs, 0, "x")
    scale, offset = need(inputs, 1, "scale"), need(inputs, 2, "offset")
    mean, var = need(inputs, 3, "mean"), need(inputs, 4, "variance")
    axis = _bn_axis(x, format, data_format, "NHWC")  # GE's data_format default
    eps = as_float(epsilon, "epsilon")
    if np.any(var + eps <= 0):
        raise KernelError("input variance + epsilon is not positive")
    gamma, beta = _per_channel(scale, x, axis, "scale"), _per_channel(offset, x, axis, "offset")
    mu, sigma2 = _per_channel(mean, x, axis, "mean"), _per_channel(var, x, axis, "variance")
    a = gamma / np.sqrt(sigma2 + eps)
    b = beta - mu * a
    y = x * a  # then + b in place: one array of x's size instead of two
    if np.result_type(y, b) == y.dtype:
        y += b
    else:  # b is wider (mixed-precision inputs): x * a + b's type, as before
        y = y + b
    return [y, mean, var]


@kernel(
    "BNInferenceD",
    attrs=("momentum", "epsilon", "use_global_stats", "mode"),
    layout_sensitive=True,
)
def bn_inference_d(
    inputs, *, format=None, momentum=0.9, epsilon=1e-5, use_global_stats=True, mode=1
):
    """y = (x + mean) * variance [* scale + b] on the host-folded mean/variance inputs."""
    if not as_bool(use_global_stats, "use_global_stats"):
        raise KernelError("attribute use_global_stats=False: GE supports only True")
    as_int(mode, "mode")
    as_float(momentum, "momentum")
    as_float(epsilon, "epsilon")
    return [_folded_bn(inputs, format)]


@kernel("BNInference", attrs=("epsilon", "use_global_stats", "mode"), layout_sensitive=True)
def bn_inference(inputs, *, format=None, epsilon=1e-5, use_global_stats=True, mode=1):
    """Caffe's BatchNorm as the op definition states it: ``momentum`` (input 3) is the scale
    factor of the stored statistics, y = (x - mean/m) / sqrt(variance/m + epsilon) (m = 0
    zeroes both, as Caffe does); scale and offset are documented as unused."""
    if not as_bool(use_global_stats, "use_global_stats"):
        raise KernelError("attribute use_global_stats=False: GE supports only True")
    x = need(inputs, 0, "x")
    mean, var, momentum = (
        need(inputs, 1, "mean"),
        need(inputs, 2, "variance"),
        need(inputs, 3, "momentum"),
    )
    if momentum.size != 1:
        raise KernelError(f"input momentum has {momentum.size} values, the scale factor is one")
    m = float(momentum.ravel()[0])
    factor = 0.0 if m == 0 else 1.0 / m
    axis = _bn_axis(x, format, None, "NCHW")
    sigma2 = _per_channel(var, x, axis, "variance") * factor + as_float(epsilon, "epsilon")
    if np.any(sigma2 <= 0):
        raise KernelError("input variance / momentum + epsilon is not positive")
    return [(x - _per_channel(mean, x, axis, "mean") * factor) / np.sqrt(sigma2)]


def _folded_bn(inputs, format) -> np.ndarray:
    x = need(inputs, 0, "x")
    mean, var = need(inputs, 1, "mean"), need(inputs, 2, "variance")
    axis = _bn_axis(x, format, None, "NCHW")
    y = (x + _per_channel(mean, x, axis, "mean")) * _per_channel(var, x, axis, "variance")
    scale, b = optional(inputs, 3), optional(inputs, 4)
    if scale is not None:
        y = y * _per_channel(scale, x, axis, "scale")
    if b is not None:
        y = y + _per_channel(b, x, axis, "b")
    return y


@kernel("LayerNorm", attrs=("begin_norm_axis", "begin_params_axis", "epsilon"))
def layer_norm(inputs, *, begin_norm_axis=0, begin_params_axis=0, epsilon=1e-7):
    """Normalise over axes ``begin_norm_axis..`` with the biased variance, then
    ``* gamma + beta`` (gamma/beta span axes ``begin_params_axis..``). Outputs y, mean,
    variance (mean and variance keep the reduced axes as size 1)."""
    x = need(inputs, 0, "x")
    if len(inputs) > 3:
        raise KernelError(f"LayerNorm takes x, gamma, beta; got {len(inputs)} inputs")
    gamma, beta = need(inputs, 1, "gamma"), need(inputs, 2, "beta")
    start = norm_axis(as_int(begin_norm_axis, "begin_norm_axis"), x.ndim, "begin_norm_axis")
    pstart = norm_axis(as_int(begin_params_axis, "begin_params_axis"), x.ndim, "begin_params_axis")
    axes = tuple(range(start, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + as_float(epsilon, "epsilon"))
    pshape = x.shape[pstart:]
    for name, p in (("gamma", gamma), ("beta", beta)):
        if p.size != int(np.prod(pshape)):
            raise KernelError(
                f"input {name} has shape {p.shape}, x's axes from {pstart} are {pshape}"
            )
    y = y * gamma.reshape(pshape) + beta.reshape(pshape)
    return [y, mean, var]
