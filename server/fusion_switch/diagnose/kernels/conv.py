"""Convolution: Conv2D. (Conv2DCompress reads its inputs in another order and compressed
weights: it has no kernel, so its fused ops are unverified.)

Semantics from GE's op definition ``REG_OP(Conv2D)`` in ``nn_calculation_ops.h``
(mindspore-ai/graphengine, ``third_party/fwkacllib/inc/ops/nn_calculation_ops.h``): inputs
``x``, ``filter``, optional ``bias`` and ``offset_w``; ``strides`` and ``dilations`` are 4-element
lists in the order of ``x``'s layout, ``pads`` is ``[top, bottom, left, right]``, ``groups``
splits the channels, ``offset_x`` is the int8 input offset. The filter is ``[out, in/groups,
kh, kw]`` (NCHW/OIHW) for NCHW inputs, HWCN for NHWC ones (override with ``filter_format=``).
The layout is the input desc's (``format=``), else ``data_format``, else GE's default NHWC.

Project-specific readings: the generator (``synth/network.py``) writes a scalar ``pad`` and no
``strides``; both are accepted (``pad`` → all four sides and stride 1). Otherwise a missing
``strides`` or ``pads`` is refused: the Build graph ``ge_proto_00000062`` drops both from its
fused Conv2D ops, and a default would silently replay a 7x7/2 convolution as 7x7/1. A TF-style
``padding`` of ``SAME``/``VALID`` is honoured when ``pads`` is absent. ``offset_x`` other than 0
is refused: how the cube unit pads an offset int8 input is not documented well enough to replay.
"""

from __future__ import annotations

import numpy as np

from .common import (
    as_int,
    from_nchw,
    hw_pair,
    int_list,
    layout,
    need,
    optional,
    pad_hw,
    to_nchw,
)
from .registry import KernelError, kernel

CONV_ATTRS = ("strides", "pads", "dilations", "groups", "data_format", "offset_x", "pad", "padding")


def _same_pads(size: int, k: int, stride: int, dil: int) -> tuple[int, int]:
    eff = (k - 1) * dil + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + eff - size, 0)
    return total // 2, total - total // 2


def _pads_agree(pads: tuple, attrs: dict, hw: tuple[int, int], k, s, d) -> None:
    """Explicit ``pads`` must be what ``padding`` SAME or VALID gives, where it is one of them:
    GE's shape inference writes the pads from it, so a graph where the two disagree is one the
    kernel cannot be sure of (a review: SAME with pads 0 lost a row and a column)."""
    padding = str(attrs.get("padding") or "").upper()
    if padding == "VALID":
        wanted = [(0, 0), (0, 0)]
    elif padding == "SAME":
        wanted = [_same_pads(hw[0], k[0], s[0], d[0]), _same_pads(hw[1], k[1], s[1], d[1])]
    else:
        return
    given = [pads[0:2], pads[2:4]]
    if any(sorted(g) != sorted(w) for g, w in zip(given, wanted, strict=True)):
        raise KernelError(
            f"attribute pads={list(pads)} disagrees with padding={attrs.get('padding')!r} "
            f"(which gives {[p for w in wanted for p in w]}): not replayed"
        )


def _pads(attrs: dict, hw: tuple[int, int], k: tuple[int, int], s, d) -> tuple[int, ...]:
    if attrs.get("pads") is not None:
        pads = int_list(attrs["pads"], "pads", 4)
        if all(p >= 0 for p in pads):
            _pads_agree(tuple(pads), attrs, hw, k, s, d)
            return tuple(pads)
    if attrs.get("pad") is not None:
        p = as_int(attrs["pad"], "pad")
        return (p, p, p, p)
    padding = str(attrs.get("padding") or "").upper()
    if padding == "SAME":
        return (*_same_pads(hw[0], k[0], s[0], d[0]), *_same_pads(hw[1], k[1], s[1], d[1]))
    if padding == "VALID":
        return (0, 0, 0, 0)
    raise KernelError(
        f"attribute pads={attrs.get('pads')!r} with padding={attrs.get('padding')!r}: "
        "no explicit non-negative pads and no SAME/VALID padding"
    )


def filter_to_oihw(w: np.ndarray, filter_format: str | None, fmt: str) -> np.ndarray:
    """The filter as [out, in/groups, kh, kw]; its layout defaults to NCHW for NCHW inputs and
    HWCN for NHWC ones (TensorFlow's)."""
    wfmt = (filter_format or ("NCHW" if fmt == "NCHW" else "HWCN")).upper()
    if wfmt == "HWCN":
        return np.transpose(w, (3, 2, 0, 1))
    if wfmt == "NHWC":
        return np.transpose(w, (0, 3, 1, 2))
    if wfmt != "NCHW":
        raise KernelError(f"filter_format={filter_format!r} is not NCHW, NHWC or HWCN")
    return w


def conv2d_nchw(
    x: np.ndarray,
    w: np.ndarray,
    strides: tuple[int, int],
    pads: tuple[int, int, int, int],
    dilations: tuple[int, int],
    groups: int,
) -> np.ndarray:
    """Cross-correlation of ``x`` [N, C, H, W] with ``w`` [O, C/groups, kh, kw], float64."""
    n, c, _, _ = x.shape
    o, cg, kh, kw = w.shape
    if groups < 1 or c % groups or o % groups:
        raise KernelError(f"attribute groups={groups} does not divide channels in={c}, out={o}")
    if cg * groups != c:
        raise KernelError(
            f"input filter has {cg} input channels per group, x has {c} channels (groups={groups})"
        )
    (sh, sw), (dh, dw) = strides, dilations
    if min(sh, sw, dh, dw) < 1:
        raise KernelError(f"strides {strides} and dilations {dilations} must be >= 1")
    top, bottom, left, right = pads
    if min(pads) < 0:
        raise KernelError(f"pads {list(pads)} are negative")
    xp = pad_hw(x, (top, bottom, left, right))
    eh, ew = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    if xp.shape[2] < eh or xp.shape[3] < ew:
        raise KernelError(f"filter {kh}x{kw} (dilated {eh}x{ew}) is larger than the padded x")
    # every (strided) window, [N, C, OH, OW, kh, kw], as a view: the windows numpy's
    # sliding_window_view gives, sliced by stride and dilation, built in one step
    oh, ow = (xp.shape[2] - eh) // sh + 1, (xp.shape[3] - ew) // sw + 1
    s0, s1, s2, s3 = xp.strides
    win = np.lib.stride_tricks.as_strided(
        xp, (n, c, oh, ow, kh, kw), (s0, s1, s2 * sh, s3 * sw, s2 * dh, s3 * dw), writeable=False
    )
    wg = w.reshape(groups, o // groups, cg * kh * kw)
    rows = _rows_per_block(c * kh * kw * n * ow * 8, oh)
    if rows >= oh:
        out = _im2col_product(win, wg, groups, cg)
        return out.reshape(o, n, oh, ow).transpose(1, 0, 2, 3)
    # a large activation (a real network's, not the generator's): the im2col matrix of all
    # output rows at once would take C*kh*kw*N*OH*OW float64 (1.85 GB for a 3x3 convolution
    # of 64 channels at 112x112 and batch 32), so it is built for a block of rows at a time
    # (BLAS then sums some products in another order: the same values to float64's last bit)
    out = np.empty((o, n, oh, ow), dtype=np.result_type(x, w))  # what the product gives
    for top in range(0, oh, rows):
        block = win[:, :, top : top + rows]
        out[:, :, top : top + rows] = _im2col_product(block, wg, groups, cg).reshape(
            o, n, block.shape[2], ow
        )
    return out.transpose(1, 0, 2, 3)


# the im2col matrix built at once, in bytes, at most (unless one output row needs more); blocks
# of 8 MB were as fast as 64 MB ones or faster on real activations (they stay in the caches)
IM2COL_BYTES = 8 << 20


def _rows_per_block(bytes_per_row: int, oh: int) -> int:
    """Output rows whose im2col columns fit in :data:`IM2COL_BYTES` (at least one)."""
    return max(1, min(oh, IM2COL_BYTES // max(1, bytes_per_row)))


def _im2col_product(win: np.ndarray, wg: np.ndarray, groups: int, cg: int) -> np.ndarray:
    """[O, N*rows*OW] for the windows ``win`` [N, C, rows, OW, kh, kw]: one BLAS product per
    group, [O/g, C/g*kh*kw] @ [C/g*kh*kw, N*rows*OW]."""
    n, _, oh, ow, kh, kw = win.shape
    cols = win.reshape(n, groups, cg, oh, ow, kh, kw).transpose(1, 2, 5, 6, 0, 3, 4)
    cols = cols.reshape(groups, cg * kh * kw, n * oh * ow)
    # 2-D products: numpy's stacked matmul took 55 ms where the 2-D one took 0.06 ms (a
    # 16x144 @ 144x256 product on the shared 2-core machine)
    if groups == 1:
        return wg[0] @ cols[0]
    return np.concatenate([wg[g] @ cols[g] for g in range(groups)])


@kernel("Conv2D", attrs=CONV_ATTRS, layout_sensitive=True, filter_input=1)
def conv2d(
    inputs,
    *,
    format=None,
    filter_format=None,
    strides=None,
    pads=None,
    dilations=(1, 1, 1, 1),
    groups=1,
    data_format=None,
    offset_x=0,
    pad=None,
    padding=None,
):
    """y = x ⋆ filter + bias."""
    x, w = need(inputs, 0, "x"), need(inputs, 1, "filter")
    bias = optional(inputs, 2)
    if x.ndim != 4:
        raise KernelError(f"input x has rank {x.ndim}, Conv2D needs 4")
    if w.ndim != 4:
        raise KernelError(f"input filter has rank {w.ndim}, Conv2D needs 4")
    if as_int(offset_x, "offset_x") != 0:
        raise KernelError(f"attribute offset_x={offset_x}: int8 input offsets are not replayed")
    fmt = layout(format, data_format, "NHWC")  # GE's data_format default
    w = filter_to_oihw(w, filter_format, fmt)
    if strides is None and pad is None:  # only the generator's scalar pad implies stride 1
        raise KernelError("attribute strides is missing (GE requires it)")
    if pads is None and pad is None and padding is None:
        raise KernelError("attribute pads is missing (GE requires it)")
    s = hw_pair(strides if strides is not None else 1, "strides", fmt)
    d = hw_pair(dilations, "dilations", fmt)
    xn = to_nchw(x, fmt)
    attrs = {"pads": pads, "pad": pad, "padding": padding}
    p = _pads(attrs, xn.shape[2:], w.shape[2:], s, d)
    y = conv2d_nchw(xn, w, s, p, d, as_int(groups, "groups"))
    if bias is not None:
        if bias.size != y.shape[1]:
            raise KernelError(f"input bias has {bias.size} values for {y.shape[1]} channels")
        y = y + bias.reshape(1, -1, 1, 1)
    return [from_nchw(y, fmt)]
