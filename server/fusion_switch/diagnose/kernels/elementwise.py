"""Element-wise arithmetic: binary ops with numpy broadcasting, Eltwise, Bias/BiasAdd, Scale and
the unary math ops the generator's primitive layer norm uses.

Sources: GE's op definitions in ``elewise_calculation_ops.h`` (everything but Scale and Power),
``nn_norm_ops.h`` (Scale) and ``math_ops.h`` (Power) of mindspore-ai/graphengine
(``third_party/fwkacllib/inc/ops/``): ``REG_OP(Eltwise)`` (``N`` inputs, ``mode`` 0 product /
1 sum / 2 max, optional ``coeff`` per input for the sum), ``REG_OP(Bias)`` and ``REG_OP(Scale)``
(Caffe semantics: the second input spans ``x``'s axes from ``axis`` (default 1), ``num_axes``
of them), ``REG_OP(BiasAdd)`` (bias along the channel axis of ``data_format``, default NHWC).
Binary ops (Add, Sub, Mul, RealDiv, Maximum, Minimum, SquaredDifference, Pow) broadcast as
numpy does, which is what GE's ``broadcast_shapes`` implements. ``REG_OP(Exp)``/``REG_OP(Log)``
carry ``base`` (-1 = e), ``scale``, ``shift``; ``REG_OP(Power)`` is Caffe's
(shift + scale x)^power; Muls/Adds take a scalar ``value``, Axpy is x1 + alpha x2, AddN sums
its ``N`` inputs, Round rounds half to even.
"""

from __future__ import annotations

import math

import numpy as np

from .common import (
    as_float,
    as_int,
    broadcast,
    broadcast_all,
    channel_axis,
    float_list,
    layout,
    need,
    norm_axis,
    optional,
)
from .registry import KernelError, kernel

_BINARY = {
    "Pow": np.power,
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

_ERF = np.frompyfunc(math.erf, 1, 1)
_UNARY = {
    "Rsqrt": lambda x: 1.0 / np.sqrt(x),
    "Sqrt": np.sqrt,
    "Square": np.square,
    "Abs": np.abs,
    "Neg": np.negative,
    "Reciprocal": lambda x: 1.0 / x,
    "Floor": np.floor,
    "Ceil": np.ceil,
    "Sign": np.sign,
    "Erf": lambda x: np.asarray(_ERF(x), dtype=np.float64),
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


@kernel("Exp", attrs=("base", "scale", "shift"))
def exp(inputs, *, base=-1.0, scale=1.0, shift=0.0):
    """y = base ** (scale * x + shift); base -1 means e."""
    x = need(inputs, 0, "x")
    b, a, c = as_float(base, "base"), as_float(scale, "scale"), as_float(shift, "shift")
    if b != -1.0 and b <= 0:
        raise KernelError(f"attribute base={base} must be -1 (e) or positive")
    with np.errstate(over="ignore"):
        return [np.exp(a * x + c) if b == -1.0 else np.power(b, a * x + c)]


@kernel("Log", attrs=("base", "scale", "shift"))
def log(inputs, *, base=-1.0, scale=1.0, shift=0.0):
    """y = log_base(scale * x + shift); base -1 means e."""
    x = need(inputs, 0, "x")
    b, a, c = as_float(base, "base"), as_float(scale, "scale"), as_float(shift, "shift")
    if b != -1.0 and (b <= 0 or b == 1):
        raise KernelError(f"attribute base={base} must be -1 (e) or positive and not 1")
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.log(a * x + c)
        return [y if b == -1.0 else y / math.log(b)]


@kernel("Power", attrs=("power", "scale", "shift"))
def power(inputs, *, power=1.0, scale=1.0, shift=0.0):
    """y = (shift + scale * x) ** power (Caffe's Power)."""
    x = need(inputs, 0, "x")
    p, a, c = as_float(power, "power"), as_float(scale, "scale"), as_float(shift, "shift")
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return [np.power(c + a * x, p)]


@kernel("Muls", attrs=("value",))
def muls(inputs, *, value=None):
    if value is None:
        raise KernelError("attribute value is missing")
    return [need(inputs, 0, "x") * as_float(value, "value")]


@kernel("Adds", attrs=("value",))
def adds(inputs, *, value=None):
    if value is None:
        raise KernelError("attribute value is missing")
    return [need(inputs, 0, "x") + as_float(value, "value")]


@kernel("Axpy", attrs=("alpha",))
def axpy(inputs, *, alpha=None):
    """y = x1 + alpha * x2."""
    a, b = need(inputs, 0, "x1"), need(inputs, 1, "x2")
    if alpha is None:
        raise KernelError("attribute alpha is missing")
    broadcast(a, b)
    return [a + as_float(alpha, "alpha") * b]


@kernel("AddN", attrs=("N",))
def add_n(inputs, *, N=None):
    xs = [need(inputs, i, f"x{i}") for i in range(len(inputs))]
    if not xs:
        raise KernelError("input x0 is missing")
    if N is not None and as_int(N, "N") != len(xs):
        raise KernelError(f"attribute N={N} but the op has {len(xs)} inputs")
    broadcast_all(xs, [f"x{i}" for i in range(len(xs))])
    return [sum(xs[1:], xs[0])]


@kernel("ClipByValue")
def clip_by_value(inputs):
    x = need(inputs, 0, "x")
    lo, hi = need(inputs, 1, "clip_value_min"), need(inputs, 2, "clip_value_max")
    broadcast_all([x, lo, hi], ["x", "clip_value_min", "clip_value_max"])
    return [np.minimum(np.maximum(x, lo), hi)]


@kernel("Round", attrs=("decimals",))
def round_(inputs, *, decimals=0):
    """Half to even, as TensorFlow's Round."""
    return [np.round(need(inputs, 0, "x"), as_int(decimals, "decimals"))]


@kernel("Eltwise", attrs=("N", "mode", "coeff"))
def eltwise(inputs, *, N=None, mode=1, coeff=()):
    """mode 0: product, 1: sum (each input times its ``coeff`` when given), 2: maximum."""
    xs = [need(inputs, i, f"x{i}") for i in range(len(inputs))]
    if not xs:
        raise KernelError("input x0 is missing")
    if N is not None and as_int(N, "N") != len(xs):
        raise KernelError(f"attribute N={N} but the op has {len(xs)} inputs")
    broadcast_all(xs, [f"x{i}" for i in range(len(xs))])
    m = as_int(mode, "mode")
    if m == 0:
        return [np.prod(np.broadcast_arrays(*xs), axis=0)]
    if m == 2:
        return [np.max(np.broadcast_arrays(*xs), axis=0)]
    if m != 1:
        raise KernelError(f"attribute mode={mode} is not 0 (product), 1 (sum) or 2 (max)")
    coeffs = float_list(coeff, "coeff")
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
    if x.ndim == 0:
        raise KernelError("input x is a scalar: no channel axis for the bias")
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
