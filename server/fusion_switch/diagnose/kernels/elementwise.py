"""Element-wise arithmetic: binary ops with numpy broadcasting, Eltwise, Bias/BiasAdd, Scale and
the unary math ops the generator's primitive layer norm uses.

Sources: GE's op definitions in ``elewise_calculation_ops.h``, ``nn_calculation_ops.h``
(BiasAdd) and ``scale_ops.h``-era ``nn_norm_ops.h`` (Scale) of mindspore-ai/graphengine
(``third_party/fwkacllib/inc/ops/``): ``REG_OP(Eltwise)`` (``N`` inputs, ``mode`` 0 product /
1 sum / 2 max, optional ``coeff`` per input for the sum), ``REG_OP(Bias)`` and ``REG_OP(Scale)``
(Caffe semantics: the second input spans ``x``'s axes from ``axis`` (default 1), ``num_axes``
of them), ``REG_OP(BiasAdd)`` (bias along the channel axis of ``data_format``, default NHWC).
Binary ops (Add, Sub, Mul, RealDiv, Maximum, Minimum, SquaredDifference) broadcast as numpy
does, which is what GE's ``broadcast_shapes`` implements.
"""

from __future__ import annotations

import numpy as np

from .common import as_float, as_int, broadcast, channel_axis, layout, need, norm_axis, optional
from .registry import KernelError, kernel

_BINARY = {
    "Add": np.add,
    "AddV2": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "RealDiv": np.divide,
    "Div": np.divide,
    "Maximum": np.maximum,
    "Minimum": np.minimum,
    "SquaredDifference": lambda a, b: (a - b) * (a - b),
}


def _binary(op_type: str):
    fn = _BINARY[op_type]

    def binary(inputs):
        a, b = need(inputs, 0, "x1"), need(inputs, 1, "x2")
        broadcast(a, b)
        with np.errstate(divide="ignore", invalid="ignore"):
            return [fn(a, b)]

    binary.__name__ = f"binary_{op_type}"
    binary.__doc__ = f"{op_type} with numpy broadcasting."
    return binary


for _op in _BINARY:
    kernel(_op)(_binary(_op))

_UNARY = {
    "Rsqrt": lambda x: 1.0 / np.sqrt(x),
    "Sqrt": np.sqrt,
    "Square": np.square,
    "Exp": np.exp,
    "Log": np.log,
    "Abs": np.abs,
    "Neg": np.negative,
    "Reciprocal": lambda x: 1.0 / x,
}


def _unary(op_type: str):
    fn = _UNARY[op_type]

    def unary(inputs):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return [fn(need(inputs, 0, "x"))]

    unary.__name__ = f"unary_{op_type}"
    return unary


for _op in _UNARY:
    kernel(_op)(_unary(_op))


@kernel("Eltwise", attrs=("N", "mode", "coeff"))
def eltwise(inputs, *, N=None, mode=1, coeff=()):
    """mode 0: product, 1: sum (each input times its ``coeff`` when given), 2: maximum."""
    xs = [need(inputs, i, f"x{i}") for i in range(len(inputs))]
    if not xs:
        raise KernelError("input x0 is missing")
    if N is not None and as_int(N, "N") != len(xs):
        raise KernelError(f"attribute N={N} but the op has {len(xs)} inputs")
    for other in xs[1:]:
        broadcast(xs[0], other, ("x0", "xi"))
    m = as_int(mode, "mode")
    if m == 0:
        return [np.prod(np.broadcast_arrays(*xs), axis=0)]
    if m == 2:
        return [np.max(np.broadcast_arrays(*xs), axis=0)]
    if m != 1:
        raise KernelError(f"attribute mode={mode} is not 0 (product), 1 (sum) or 2 (max)")
    coeffs = [as_float(c, "coeff") for c in (coeff or ())]
    if coeffs and len(coeffs) != len(xs):
        raise KernelError(f"attribute coeff has {len(coeffs)} values for {len(xs)} inputs")
    weights = coeffs or [1.0] * len(xs)
    return [sum(w * x for w, x in zip(weights, xs, strict=True))]


def _span(x: np.ndarray, p: np.ndarray, axis, num_axes, name: str) -> np.ndarray:
    """``p`` reshaped to broadcast over ``x``'s axes from ``axis`` (Caffe): its shape, less any
    leading or trailing 1s, must equal the axes it spans (``num_axes`` only sizes the blob)."""
    as_int(num_axes, "num_axes")
    if p.size == 1:
        return p.reshape(())
    start = norm_axis(as_int(axis, "axis"), x.ndim, "axis")
    shape = tuple(p.shape)

    def fits(s: tuple[int, ...]) -> bool:
        return tuple(x.shape[start : start + len(s)]) == s

    while len(shape) > 1 and not fits(shape) and 1 in (shape[0], shape[-1]):
        shape = shape[1:] if shape[0] == 1 else shape[:-1]
    if not fits(shape):
        raise KernelError(
            f"input {name} has shape {p.shape}, x's axes from axis={axis} are {x.shape[start:]}"
        )
    return p.reshape(shape + (1,) * (x.ndim - start - len(shape)))


@kernel("Scale", attrs=("axis", "num_axes", "scale_from_blob"))
def scale(inputs, *, axis=1, num_axes=1, scale_from_blob=True):
    """y = x * scale (+ bias), scale and bias spanning x's axes from ``axis``."""
    x, s = need(inputs, 0, "x"), need(inputs, 1, "scale")
    y = x * _span(x, s, axis, num_axes, "scale")
    b = optional(inputs, 2)
    if b is not None:
        y = y + _span(x, b, axis, num_axes, "bias")
    return [y]


@kernel("Bias", attrs=("axis", "num_axes", "bias_from_blob"))
def bias(inputs, *, axis=1, num_axes=1, bias_from_blob=True):
    x, b = need(inputs, 0, "x"), need(inputs, 1, "bias")
    return [x + _span(x, b, axis, num_axes, "bias")]


@kernel("BiasAdd", attrs=("data_format",), layout_sensitive=True)
def bias_add(inputs, *, format=None, data_format="NHWC"):
    """y = x + bias along the channel axis (last for NHWC/ND, 1 for NCHW)."""
    x, b = need(inputs, 0, "x"), need(inputs, 1, "bias")
    if x.ndim == 4:
        ax = channel_axis(layout(format, data_format, "NHWC"), 4)
    else:
        fmt = str(data_format).upper()
        if fmt not in ("NHWC", "NCHW", "ND", "NDHWC", "NCDHW"):
            raise KernelError(f"attribute data_format={data_format!r} is not NHWC or NCHW")
        ax = 1 if fmt in ("NCHW", "NCDHW") else x.ndim - 1
    if b.size != x.shape[ax]:
        raise KernelError(f"input bias has {b.size} values for {x.shape[ax]} channels (axis {ax})")
    shape = [1] * x.ndim
    shape[ax] = b.size
    return [x + b.reshape(shape)]
