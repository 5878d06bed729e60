"""Pooling: Pooling (Caffe), AvgPool/MaxPool (TF), AvgPoolV2/MaxPoolV3 (ONNX-style),
GlobalAveragePool.

Sources: GE's op definitions in ``nn_pooling_ops.h`` of mindspore-ai/graphengine
(``third_party/fwkacllib/inc/ops/nn_pooling_ops.h``):
- ``REG_OP(Pooling)``: ``mode`` 0 max / 1 avg, ``global_pooling``, ``window`` and ``stride``
  as [h, w], ``pad`` [top, bottom, left, right], ``dilation`` (only 1 replayed), ``ceil_mode``
  0 = ceil / 1 = floor, NCHW. Caffe semantics (BVLC caffe ``pooling_layer.cpp``): in ceil mode
  the last window must start inside the image plus its top/left pad; the average divides by
  the window clipped to the padded image, so padding counts and the overhang does not.
- ``REG_OP(AvgPool)`` / ``REG_OP(MaxPool)``: ``ksize`` and ``strides`` in ``data_format`` order
  (NHWC default), ``padding`` SAME/VALID; TF semantics: the average ignores padding.
- ``REG_OP(AvgPoolV2)`` / ``REG_OP(MaxPoolV3)``: ``padding_mode`` CALCULATED (``pads``)/SAME/
  VALID, ``ceil_mode``, ``global_pooling``, ``exclusive`` (ignore padding in the average),
  ``divisor_override``; NCHW default.
Generator reading (``synth/network.py`` ``k_avgpool``): AvgPool with a scalar ``ksize``, a scalar
``pad`` and no ``strides`` (stride 1), padding excluded from the average.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .common import (
    as_bool,
    as_int,
    from_nchw,
    hw_pair,
    int_list,
    layout,
    need,
    pad_hw,
    to_nchw,
)
from .registry import KernelError, kernel


def _out_size(size: int, k: int, s: int, lo: int, hi: int, ceil: bool) -> int:
    span = size + lo + hi - k
    if span < 0:
        raise KernelError(f"window {k} is larger than the padded input {size + lo + hi}")
    n = (math.ceil(span / s) if ceil else span // s) + 1
    if ceil and (n - 1) * s >= size + lo:
        n -= 1  # the last window would start in the bottom/right padding only
    return n


def pool2d(
    x: np.ndarray,
    k: tuple[int, int],
    s: tuple[int, int],
    pads: tuple[int, int, int, int],
    mode: str,
    count: str = "exclusive",
    ceil: bool = False,
    divisor: int = 0,
) -> np.ndarray:
    """Max or average pooling of NCHW ``x``. ``count``: ``exclusive`` (valid cells only),
    ``padded`` (window clipped to the padded image, Caffe) or ``full`` (kh * kw)."""
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (top, bottom, left, right) = k, s, pads
    if min(kh, kw, sh, sw) < 1 or min(pads) < 0:
        raise KernelError(f"window {k}, strides {s} and pads {pads} out of range")
    oh = _out_size(h, kh, sh, top, bottom, ceil)
    ow = _out_size(w, kw, sw, left, right, ceil)
    # ceil mode may need cells past the bottom/right pad: they count as outside everything
    extra_h = max((oh - 1) * sh + kh - (h + top + bottom), 0)
    extra_w = max((ow - 1) * sw + kw - (w + left + right), 0)
    fill = -np.inf if mode == "max" else 0.0
    xp = pad_hw(x, (top, bottom + extra_h, left, right + extra_w), fill)
    acc = np.full((n, c, oh, ow), fill)
    for i in range(kh):  # one strided slice per window tap
        for j in range(kw):
            rows, cols = slice(i, i + (oh - 1) * sh + 1, sh), slice(j, j + (ow - 1) * sw + 1, sw)
            tap = xp[:, :, rows, cols]
            if mode == "max":  # in place: one window-sized array, not one per tap
                np.maximum(acc, tap, out=acc)
            else:
                acc += tap
    n_valid, n_inside = _window_counts(
        (h, w), (kh, kw), (sh, sw), (top, bottom, left, right), (oh, ow)
    )
    if np.any(n_valid == 0):
        raise KernelError("a pooling window lies entirely in the padding")
    if mode == "max":
        return acc
    if divisor:
        return acc / divisor
    den = {"exclusive": n_valid, "padded": n_inside}.get(count, float(kh * kw))
    return acc / den


@functools.lru_cache(maxsize=64)
def _window_counts(
    size: tuple[int, int],
    k: tuple[int, int],
    s: tuple[int, int],
    pads: tuple[int, int, int, int],
    out: tuple[int, int],
) -> tuple[np.ndarray, np.ndarray]:
    """Per output cell of :func:`pool2d`: how many of its window's cells are real (``valid``)
    and how many lie inside the padded image (``inside``). They depend on the shapes only, so
    they are counted once per shape (issue 16); read-only."""
    (h, w), (kh, kw), (sh, sw), (top, bottom, left, right), (oh, ow) = size, k, s, pads, out
    extra_h = max((oh - 1) * sh + kh - (h + top + bottom), 0)
    extra_w = max((ow - 1) * sw + kw - (w + left + right), 0)
    valid = pad_hw(np.ones((h, w)), (top, bottom + extra_h, left, right + extra_w))
    inside = pad_hw(np.ones((h + top + bottom, w + left + right)), (0, extra_h, 0, extra_w))
    n_valid, n_inside = np.zeros((oh, ow)), np.zeros((oh, ow))
    for i in range(kh):
        for j in range(kw):
            rows, cols = slice(i, i + (oh - 1) * sh + 1, sh), slice(j, j + (ow - 1) * sw + 1, sw)
            n_valid += valid[rows, cols]
            n_inside += inside[rows, cols]
    n_valid.flags.writeable = False
    n_inside.flags.writeable = False
    return n_valid, n_inside


def _same_pads(size: int, k: int, s: int) -> tuple[int, int]:
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return total // 2, total - total // 2


def _as_4d(x: np.ndarray) -> np.ndarray:
    if x.ndim != 4:
        raise KernelError(f"input x has rank {x.ndim}, pooling needs 4")
    return x


@kernel(
    "Pooling",
    attrs=(
        "mode",
        "global_pooling",
        "window",
        "stride",
        "pad",
        "dilation",
        "ceil_mode",
        "data_format",
    ),
    layout_sensitive=True,
)
def pooling(
    inputs,
    *,
    format=None,
    mode=0,
    global_pooling=False,
    window=(1, 1),
    stride=(1, 1),
    pad=(0, 0, 0, 0),
    dilation=(1, 1, 1, 1),
    ceil_mode=0,
    data_format="NCHW",
):
    x = _x_alone(inputs)
    fmt = layout(format, data_format, "NCHW")
    xn = to_nchw(x, fmt)
    m = as_int(mode, "mode")
    if m not in (0, 1):
        raise KernelError(f"attribute mode={mode} is not 0 (max) or 1 (avg)")
    if any(d != 1 for d in int_list(dilation, "dilation")):
        raise KernelError(f"attribute dilation={dilation} is not replayed (only 1)")
    cm = as_int(ceil_mode, "ceil_mode")
    if cm not in (0, 1):
        raise KernelError(f"attribute ceil_mode={ceil_mode} is not 0 (ceil) or 1 (floor)")
    if as_bool(global_pooling, "global_pooling"):
        k, s, p = xn.shape[2:], (1, 1), (0, 0, 0, 0)
    else:
        k, s = hw_pair(window, "window", "NCHW"), hw_pair(stride, "stride", "NCHW")
        p = tuple(int_list(pad, "pad", 4))
    y = pool2d(xn, k, s, p, "max" if m == 0 else "avg", "padded", ceil=cm == 0)
    return [from_nchw(y, fmt)]


def _x_alone(inputs) -> np.ndarray:
    """The pooled input, refusing a second one: GE's pooling passes (PoolingFusionPass,
    AvgPoolFusionPass, AvgPoolV2FusionPass) keep the type, add a filter input and a Mul after
    it, and the op then sums its windows (a review: replayed as the mean, then the Mul, it
    divided twice and proved an innocent rule)."""
    if any(extra is not None for extra in inputs[1:]):
        raise KernelError(
            f"{len(inputs)} inputs: the filter a pooling fusion pass adds (the window sum, "
            "scaled by a Mul after it) is not replayed"
        )
    return _as_4d(need(inputs, 0, "x"))


def _tf_pool(inputs, format, ksize, strides, padding, data_format, pad, mode):
    x = _x_alone(inputs)
    fmt = layout(format, data_format, "NHWC")
    xn = to_nchw(x, fmt)
    if ksize is None:
        raise KernelError("attribute ksize is missing")
    if strides is None and pad is None:  # only the generator's scalar pad implies stride 1
        raise KernelError("attribute strides is missing (GE requires it)")
    k = hw_pair(ksize, "ksize", fmt)
    s = hw_pair(strides if strides is not None else 1, "strides", fmt)
    if pad is not None:  # the generator's explicit symmetric pad
        p = as_int(pad, "pad")
        pads = (p, p, p, p)
    elif padding is None:
        raise KernelError("attribute padding is missing (GE requires it)")
    else:
        mode_name = str(padding).upper()
        if mode_name == "SAME":
            pads = (*_same_pads(xn.shape[2], k[0], s[0]), *_same_pads(xn.shape[3], k[1], s[1]))
        elif mode_name == "VALID":
            pads = (0, 0, 0, 0)
        else:
            raise KernelError(f"attribute padding={padding!r} is not SAME or VALID")
    return [from_nchw(pool2d(xn, k, s, pads, mode, "exclusive"), fmt)]


@kernel(
    "AvgPool", attrs=("ksize", "strides", "padding", "data_format", "pad"), layout_sensitive=True
)
def avg_pool(
    inputs, *, format=None, ksize=None, strides=None, padding=None, data_format=None, pad=None
):
    return _tf_pool(inputs, format, ksize, strides, padding, data_format, pad, "avg")


@kernel(
    "MaxPool", attrs=("ksize", "strides", "padding", "data_format", "pad"), layout_sensitive=True
)
def max_pool(
    inputs, *, format=None, ksize=None, strides=None, padding=None, data_format=None, pad=None
):
    return _tf_pool(inputs, format, ksize, strides, padding, data_format, pad, "max")


V2_ATTRS = (
    "ksize",
    "strides",
    "padding_mode",
    "pads",
    "data_format",
    "global_pooling",
    "ceil_mode",
)


def _v2_pool(
    inputs,
    format,
    ksize,
    strides,
    padding_mode,
    pads,
    data_format,
    global_pooling,
    ceil_mode,
    mode,
    count,
    divisor,
):
    x = _x_alone(inputs)
    fmt = layout(format, data_format, "NCHW")
    xn = to_nchw(x, fmt)
    if as_bool(global_pooling, "global_pooling"):
        return [from_nchw(pool2d(xn, xn.shape[2:], (1, 1), (0, 0, 0, 0), mode), fmt)]
    if ksize is None or strides is None:
        raise KernelError("attribute ksize/strides is missing")
    k, s = hw_pair(ksize, "ksize", fmt), hw_pair(strides, "strides", fmt)
    pm = str(padding_mode).upper()
    if pm == "CALCULATED":
        p = tuple(int_list(pads, "pads", 4))
    elif pm == "SAME":
        p = (*_same_pads(xn.shape[2], k[0], s[0]), *_same_pads(xn.shape[3], k[1], s[1]))
    elif pm == "VALID":
        p = (0, 0, 0, 0)
    else:
        raise KernelError(
            f"attribute padding_mode={padding_mode!r} is not CALCULATED, SAME or VALID"
        )
    ceil = as_bool(ceil_mode, "ceil_mode") and pm == "CALCULATED"
    return [from_nchw(pool2d(xn, k, s, p, mode, count, ceil=ceil, divisor=divisor), fmt)]


@kernel("AvgPoolV2", attrs=(*V2_ATTRS, "exclusive", "divisor_override"), layout_sensitive=True)
def avg_pool_v2(
    inputs,
    *,
    format=None,
    ksize=None,
    strides=None,
    padding_mode="CALCULATED",
    pads=(0, 0, 0, 0),
    data_format=None,
    global_pooling=False,
    ceil_mode=False,
    exclusive=True,
    divisor_override=0,
):
    count = "exclusive" if as_bool(exclusive, "exclusive") else "padded"
    div = as_int(divisor_override, "divisor_override")
    return _v2_pool(
        inputs,
        format,
        ksize,
        strides,
        padding_mode,
        pads,
        data_format,
        global_pooling,
        ceil_mode,
        "avg",
        count,
        div,
    )


@kernel("MaxPoolV3", attrs=V2_ATTRS, layout_sensitive=True)
def max_pool_v3(
    inputs,
    *,
    format=None,
    ksize=None,
    strides=None,
    padding_mode="CALCULATED",
    pads=(0, 0, 0, 0),
    data_format=None,
    global_pooling=False,
    ceil_mode=False,
):
    return _v2_pool(
        inputs,
        format,
        ksize,
        strides,
        padding_mode,
        pads,
        data_format,
        global_pooling,
        ceil_mode,
        "max",
        "exclusive",
        0,
    )


@kernel("GlobalAveragePool", "GlobalAvgPool", layout_sensitive=True)
def global_average_pool(inputs, *, format=None):
    """Mean over every axis after N and C (NCHW), kept as size 1. GE documents it for NCHW; a
    channels-last input is refused (a review: averaged over the wrong axes when H equals C)."""
    if str(format).upper() in ("NHWC", "NDHWC"):
        raise KernelError(f"input x is {format}: GlobalAveragePool is replayed on NCHW only")
    x = need(inputs, 0, "x")
    if x.ndim < 3:
        raise KernelError(f"input x has rank {x.ndim}, GlobalAveragePool needs >= 3")
    return [x.mean(axis=tuple(range(2, x.ndim)), keepdims=True)]
