"""Transposed convolution: Conv2DBackpropInput(D), Conv2DTranspose(D).

Source: GE's op definitions in ``nn_calculation_ops.h`` of mindspore-ai/graphengine
(``third_party/fwkacllib/inc/ops/nn_calculation_ops.h``): ``REG_OP(Conv2DBackpropInputD)``
(inputs filter, out_backprop; ``input_size``, ``strides``, ``pads``, ``dilations``, ``groups``,
``data_format``), ``REG_OP(Conv2DTransposeD)`` (inputs x, filter, optional bias, offset_w; the
same attributes plus ``output_padding`` and ``offset_x``); the non-D forms take ``input_size``
as input 0. The result is the gradient of Conv2D with respect to its input, i.e. the adjoint
of :func:`.conv.conv2d_nchw` for the same filter, strides, pads, dilations and groups, cut to
``input_size`` (which already accounts for ``output_padding``).
"""

from __future__ import annotations

import numpy as np

from .common import as_int, from_nchw, hw_pair, int_list, layout, need, optional, to_nchw
from .conv import filter_to_oihw
from .registry import KernelError, kernel

ATTRS = ("input_size", "strides", "pads", "dilations", "groups", "data_format")


def conv2d_backprop_nchw(
    dy: np.ndarray, w: np.ndarray, size_hw: tuple[int, int], strides, pads, dilations, groups: int
) -> np.ndarray:
    """dx [N, C, H, W] with dx[n, c, i*sh + p*dh - top, j*sw + q*dw - left] accumulating
    w[o, c, p, q] * dy[n, o, i, j] (col2im of W^T @ dy, one product per group)."""
    n, o, oh, ow = dy.shape
    o_w, cg, kh, kw = w.shape
    if o_w != o or groups < 1 or o % groups:
        raise KernelError(
            f"input filter {w.shape} does not match out_backprop {dy.shape} (groups={groups})"
        )
    (sh, sw), (dh, dw), (top, bottom, left, right) = strides, dilations, pads
    h, wd = size_hw
    og, c = o // groups, cg * groups
    hp = max(h + top + bottom, (oh - 1) * sh + (kh - 1) * dh + 1)
    wp = max(wd + left + right, (ow - 1) * sw + (kw - 1) * dw + 1)
    wg = w.reshape(groups, og, cg * kh * kw)
    dyg = dy.transpose(1, 0, 2, 3).reshape(groups, og, n * oh * ow)
    cols = np.stack([wg[g].T @ dyg[g] for g in range(groups)])  # 2-D products (see conv)
    cols = cols.reshape(groups, cg, kh, kw, n, oh, ow)
    dxp = np.zeros((n, c, hp, wp))
    for p in range(kh):
        for q in range(kw):
            tap = cols[:, :, p, q].reshape(c, n, oh, ow).transpose(1, 0, 2, 3)
            dxp[
                :,
                :,
                p * dh : p * dh + (oh - 1) * sh + 1 : sh,
                q * dw : q * dw + (ow - 1) * sw + 1 : sw,
            ] += tap
    return dxp[:, :, top : top + h, left : left + wd]


def _run(dy, w, input_size, strides, pads, dilations, groups, format, data_format, filter_format):
    if dy.ndim != 4 or w.ndim != 4:
        raise KernelError(f"inputs out_backprop {dy.shape} and filter {w.shape} need rank 4")
    if input_size is None:
        raise KernelError("input_size is missing")
    if strides is None or pads is None:
        raise KernelError("attribute strides/pads is missing (GE requires them)")
    fmt = layout(format, data_format, "NHWC")  # GE's data_format default
    size = int_list(input_size, "input_size", 4)
    hw = (size[2], size[3]) if fmt == "NCHW" else (size[1], size[2])
    s, d = hw_pair(strides, "strides", fmt), hw_pair(dilations, "dilations", fmt)
    p = tuple(int_list(pads, "pads", 4))
    if min(*s, *d) < 1 or min(p) < 0:
        raise KernelError(f"strides {strides}, dilations {dilations} or pads {pads} out of range")
    dx = conv2d_backprop_nchw(
        to_nchw(dy, fmt),
        filter_to_oihw(w, filter_format, fmt),
        hw,
        s,
        p,
        d,
        as_int(groups, "groups"),
    )
    return dx, fmt


@kernel("Conv2DBackpropInputD", attrs=ATTRS, layout_sensitive=True, filter_input=0, data_input=1)
def conv2d_backprop_input_d(
    inputs,
    *,
    format=None,
    filter_format=None,
    input_size=None,
    strides=None,
    pads=None,
    dilations=(1, 1, 1, 1),
    groups=1,
    data_format=None,
):
    w, dy = need(inputs, 0, "filter"), need(inputs, 1, "out_backprop")
    dx, fmt = _run(
        dy, w, input_size, strides, pads, dilations, groups, format, data_format, filter_format
    )
    return [from_nchw(dx, fmt)]


@kernel("Conv2DBackpropInput", attrs=ATTRS[1:], layout_sensitive=True, filter_input=1, data_input=2)
def conv2d_backprop_input(
    inputs,
    *,
    format=None,
    filter_format=None,
    strides=None,
    pads=None,
    dilations=(1, 1, 1, 1),
    groups=1,
    data_format=None,
):
    size = need(inputs, 0, "input_size")
    w, dy = need(inputs, 1, "filter"), need(inputs, 2, "out_backprop")
    dx, fmt = _run(
        dy,
        w,
        [float(v) for v in size.ravel()],
        strides,
        pads,
        dilations,
        groups,
        format,
        data_format,
        filter_format,
    )
    return [from_nchw(dx, fmt)]


def _transpose(
    inputs,
    first,
    format,
    filter_format,
    input_size,
    strides,
    pads,
    dilations,
    groups,
    data_format,
    offset_x,
):
    if as_int(offset_x, "offset_x") != 0:
        raise KernelError(f"attribute offset_x={offset_x}: int8 input offsets are not replayed")
    x, w = need(inputs, first, "x"), need(inputs, first + 1, "filter")
    dx, fmt = _run(
        x, w, input_size, strides, pads, dilations, groups, format, data_format, filter_format
    )
    bias = optional(inputs, first + 2)
    if bias is not None:
        if bias.size != dx.shape[1]:
            raise KernelError(f"input bias has {bias.size} values for {dx.shape[1]} channels")
        dx = dx + bias.reshape(1, -1, 1, 1)
    return [from_nchw(dx, fmt)]


@kernel(
    "Conv2DTransposeD",
    attrs=(*ATTRS, "output_padding", "offset_x"),
    layout_sensitive=True,
    filter_input=1,
)
def conv2d_transpose_d(
    inputs,
    *,
    format=None,
    filter_format=None,
    input_size=None,
    strides=None,
    pads=None,
    dilations=(1, 1, 1, 1),
    groups=1,
    data_format=None,
    output_padding=(0, 0, 0, 0),
    offset_x=0,
):
    return _transpose(
        inputs,
        0,
        format,
        filter_format,
        input_size,
        strides,
        pads,
        dilations,
        groups,
        data_format,
        offset_x,
    )


@kernel(
    "Conv2DTranspose",
    attrs=(*ATTRS[1:], "output_padding", "offset_x"),
    layout_sensitive=True,
    filter_input=2,
    data_input=1,
)
def conv2d_transpose(
    inputs,
    *,
    format=None,
    filter_format=None,
    strides=None,
    pads=None,
    dilations=(1, 1, 1, 1),
    groups=1,
    data_format=None,
    output_padding=(0, 0, 0, 0),
    offset_x=0,
):
    size = [float(v) for v in need(inputs, 0, "input_size").ravel()]
    return _transpose(
        inputs,
        1,
        format,
        filter_format,
        size,
        strides,
        pads,
        dilations,
        groups,
        data_format,
        offset_x,
    )
