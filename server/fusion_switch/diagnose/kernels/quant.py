"""Quantisation: AscendQuant, AscendDequant, AscendRequant.

Source: GE's op definitions in ``quantize_ops.h`` of mindspore-ai/graphengine
(``third_party/fwkacllib/inc/ops/quantize_ops.h``):
- ``REG_OP(AscendQuant)``: y = round(x * scale + offset) saturated to int8, ``scale`` and
  ``offset`` required floats, ``sqrt_mode`` (scale applied twice) false, ``round_mode`` one of
  Round (to nearest, ties to even, C ``rint``), Floor, Ceil, Trunc; ``dst_type`` 2 (int8) or
  29 (int4, saturated to [-8, 7]).
- ``REG_OP(AscendDequant)``: y = x * deq_scale (per channel C: axis 1 of NCHW, the last
  axis of NHWC and ND), twice with
  ``sqrt_mode``, then ReLU with ``relu_flag``; output dtype ``dtype`` (rounding is the caller's).
- ``REG_OP(AscendRequant)``: y = round(x * req_scale) saturated to int8, ReLU with ``relu_flag``.

``deq_scale``/``req_scale`` come as float16/float32 before the build (``ge_proto_00015``) and as
uint64 words after it, the float32 scale in the low 32 bits. Both are read: a tensor whose
values are all integers of at least 2**24 is taken as packed words. Words with bits above the
low 32 set (offsets packed by the build) are refused, as are words beyond float64's exact range.
The device computes in float16; this reference computes in float64, so the replay's noise floor
has to absorb the difference.
"""

from __future__ import annotations

import numpy as np

from .common import as_bool, as_float, as_int, channel_axis, need
from .registry import KernelError, kernel

_ROUND = {"round": np.rint, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc}
_RANGE = {2: (-128, 127), 29: (-8, 7)}


def _round(v: np.ndarray, round_mode: str) -> np.ndarray:
    fn = _ROUND.get(str(round_mode).lower())
    if fn is None:
        raise KernelError(f"attribute round_mode={round_mode!r} is not Round, Floor, Ceil or Trunc")
    return fn(v)


def unpack_scale(v: np.ndarray, name: str) -> np.ndarray:
    """Scales as floats, unpacking uint64 words (float32 bits in the low half)."""
    if v.size == 0 or not (np.all(v == np.trunc(v)) and np.all(v >= 2**24)):
        return v
    if np.any(v >= 2**53):
        raise KernelError(f"input {name} holds uint64 words beyond float64's exact range")
    words = v.astype(np.uint64)
    if np.any(words >> np.uint64(32)):
        raise KernelError(f"input {name} packs offsets above the low 32 bits; not replayed")
    return words.astype(np.uint32).view(np.float32).astype(np.float64)


def _per_channel(x: np.ndarray, s: np.ndarray, name: str, format: str | None) -> np.ndarray:
    """``s`` shaped to scale ``x`` along its channels: axis 1 of NCHW (and when the layout is
    not known), the last axis of NHWC and ND (a matmul's output features). The scales hold one
    value per C (GE: NC1HWC0); taken along axis 1 of an NHWC tensor with H == C they scaled
    rows (a review)."""
    if s.size == 1:
        return s.reshape(())
    fmt = "NCHW" if format is None else str(format).upper()
    if fmt not in ("NCHW", "NHWC", "ND"):
        raise KernelError(f"input x has layout {format}; {name} is replayed on NCHW, NHWC or ND")
    axis = channel_axis(fmt, x.ndim)
    if x.ndim < 2 or x.shape[axis] != s.size:
        raise KernelError(
            f"input {name} has {s.size} values for x {x.shape} ({fmt}: channel axis {axis})"
        )
    shape = [1] * x.ndim
    shape[axis] = s.size
    return s.reshape(shape)


@kernel("AscendQuant", attrs=("scale", "offset", "sqrt_mode", "round_mode", "dst_type"))
def ascend_quant(
    inputs, *, scale=None, offset=None, sqrt_mode=False, round_mode="Round", dst_type=2
):
    x = need(inputs, 0, "x")
    if scale is None or offset is None:
        raise KernelError("attribute scale/offset is missing")
    s = as_float(scale, "scale")
    if as_bool(sqrt_mode, "sqrt_mode"):
        s = s * s
    lo_hi = _RANGE.get(as_int(dst_type, "dst_type"))
    if lo_hi is None:
        raise KernelError(f"attribute dst_type={dst_type} is not 2 (int8) or 29 (int4)")
    y = _round(x * s + as_float(offset, "offset"), round_mode)
    return [np.clip(y, *lo_hi)]


@kernel("AscendDequant", attrs=("sqrt_mode", "relu_flag", "dtype"), layout_sensitive=True)
def ascend_dequant(inputs, *, format=None, sqrt_mode=False, relu_flag=False, dtype=0):
    x = need(inputs, 0, "x")
    scale = unpack_scale(need(inputs, 1, "deq_scale"), "deq_scale")
    s = _per_channel(x, scale, "deq_scale", format)
    if as_bool(sqrt_mode, "sqrt_mode"):
        s = s * s
    y = x * s
    if as_bool(relu_flag, "relu_flag"):
        y = np.maximum(y, 0.0)
    if as_int(dtype, "dtype") not in (0, 1):
        raise KernelError(f"attribute dtype={dtype} is not 0 (float32) or 1 (float16)")
    return [y]


@kernel("AscendRequant", attrs=("relu_flag",), layout_sensitive=True)
def ascend_requant(inputs, *, format=None, relu_flag=False):
    x = need(inputs, 0, "x")
    scale = unpack_scale(need(inputs, 1, "req_scale"), "req_scale")
    s = _per_channel(x, scale, "req_scale", format)
    y = x * s
    if as_bool(relu_flag, "relu_flag"):
        y = np.maximum(y, 0.0)
    return [np.clip(np.rint(y), -128, 127)]
