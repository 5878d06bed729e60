"""Softmax family: SoftmaxV2, LogSoftmaxV2.

Source: GE's op definitions in ``nn_norm_ops.h`` of mindspore-ai/graphengine
(``third_party/fwkacllib/inc/ops/nn_norm_ops.h``): ``REG_OP(SoftmaxV2)`` and
``REG_OP(LogSoftmaxV2)``, attribute ``axes`` (list, default ``[-1]``); the normalisation runs over
all listed axes together. The generator (``synth/network.py`` ``k_softmax``) writes a scalar
``axis`` instead; it is accepted when ``axes`` is absent. Computed with the max shift, in
float64, so the reference never overflows.
"""

from __future__ import annotations

import numpy as np

from .common import int_list, need, norm_axis
from .registry import kernel


def _axes(x: np.ndarray, axes, axis) -> tuple[int, ...]:
    name, value = ("axes", axes) if axes is not None else ("axis", axis)
    items = int_list(value if value is not None else [-1], name)
    return tuple(sorted({norm_axis(a, x.ndim, name) for a in items or [-1]}))


@kernel("SoftmaxV2", "Softmax", attrs=("axes", "axis"))
def softmax(inputs, *, axes=None, axis=None):
    x = need(inputs, 0, "x")
    ax = _axes(x, axes, axis)
    # exp(x - max) / sum, the same operations in place (one array instead of three)
    e = np.subtract(x, x.max(axis=ax, keepdims=True))
    np.exp(e, out=e)
    e /= e.sum(axis=ax, keepdims=True)
    return [e]


@kernel("LogSoftmaxV2", attrs=("axes", "axis"))
def log_softmax(inputs, *, axes=None, axis=None):
    x = need(inputs, 0, "x")
    ax = _axes(x, axes, axis)
    shifted = x - x.max(axis=ax, keepdims=True)
    return [shifted - np.log(np.exp(shifted).sum(axis=ax, keepdims=True))]
