"""Bring a fusion-on tensor into the fusion-off tensor's layout, exactly as msaccucmp does.

msaccucmp (``TensorConversion`` with its built-in format converters) converts *my output* (the
fusion-on tensor, "left") into the format of the *ground truth* (the fusion-off tensor, "right"),
with the left dump's ``original_shape`` (else the right dump's shape) as the target shape; the
right tensor is only reshaped. If the converted left tensor is larger (device padding), it is
sliced down to the right shape, then both are flattened. The returned shape is the left tensor's
shape after this (msaccucmp's ``Shape`` column): for ND data that needed no conversion it is the
flat element count.

The element order must be msaccucmp's, since metrics like MaxAbsoluteError pair elements. All
conversions here are reshapes/transposes/slices (views); the caller flattens once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# Format codes (ge::Format) and the names msaccucmp uses for them (formats.md 1.5).
NCHW, NHWC, ND, NC1HWC0, FRACTAL_Z, HWCN, FRACTAL_NZ, NCDHW, NDC1HWC0 = (
    0,
    1,
    2,
    3,
    4,
    16,
    29,
    30,
    32,
)
_FORMAT_NAMES = {
    0: "NCHW", 1: "NHWC", 2: "ND", 3: "NC1HWC0", 4: "FRACTAL_Z", 5: "NC1C0HWPAD", 6: "NHWC1C0",
    7: "FSR_NCHW", 8: "FRACTAL_DECONV", 9: "C1HWNC0", 10: "FRACTAL_DECONV_TRANSPOSE",
    11: "FRACTAL_DECONV_SP_STRIDE_TRANS", 12: "NC1HWC0_C04", 13: "FRACTAL_Z_C04", 14: "CHWN",
    15: "DECONV_SP_STRIDE8_TRANS", 16: "HWCN", 17: "NC1KHKWHWC0", 18: "BN_WEIGHT",
    19: "FILTER_HWCK", 20: "LOOKUP_LOOKUPS", 21: "LOOKUP_KEYS", 22: "LOOKUP_VALUE",
    23: "LOOKUP_OUTPUT", 24: "LOOKUP_HITS", 25: "C1HWNCoC0", 26: "MD", 27: "NDHWC",
    28: "FRACTAL_ZZ", 29: "FRACTAL_NZ", 30: "NCDHW", 31: "DHWCN", 32: "NDC1HWC0",
    33: "FRACTAL_Z_3D", 34: "CN", 35: "NC", 36: "DHWNC", 37: "FRACTAL_Z_3D_TRANSPOSE",
    38: "FRACTAL_ZN_LSTM", 39: "FRACTAL_Z_G", 40: "RESERVED", 41: "ALL", 42: "NULL",
    43: "ND_RNN_BIAS", 44: "FRACTAL_ZN_RNN", 45: "YUV", 46: "YUV_A", 255: "MAX",
}  # fmt: skip
_FORMAT_CODES = {name: code for code, name in _FORMAT_NAMES.items()}


class AlignError(Exception):
    """The two tensors cannot be brought to the same elements.

    ``reason`` is our explanation; ``csv_reason`` is what msaccucmp writes in CompareFailReason
    for the same failure (often an empty cell, when msaccucmp only logs the cause).
    """

    def __init__(self, reason: str, csv_reason: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.csv_reason = reason if csv_reason is None else csv_reason


@dataclass
class TensorView:
    """What alignment needs of one dumped tensor. ``data`` is the decoded values, any shape."""

    format: int
    shape: tuple[int, ...]
    data: np.ndarray
    original_shape: tuple[int, ...] = ()
    sub_format: int = 0


@dataclass
class Aligned:
    left: np.ndarray  # same element count and order as right once flattened (C order)
    right: np.ndarray
    shape: tuple[int, ...]  # msaccucmp's Shape column
    scalar: bool  # msaccucmp's scalar test on ``shape`` (CosineSimilarity is then 1)


def format_name(code: int) -> str:
    """msaccucmp's name of a format code; unknown codes fail as they do in msaccucmp."""
    name = _FORMAT_NAMES.get(code)
    if name is None:
        message = f"The format({code}) does not support."
        raise AlignError(message)
    return name


def is_scalar_shape(shape) -> bool:
    """msaccucmp's test: every dimension is 1 (or there are none)."""
    dims = list(shape)
    return sum(dims) == len(dims)


def shape_text(shape) -> str:
    """``(1, 3, 4)``: how msaccucmp prints shapes in its messages."""
    return "(" + ", ".join(str(d) for d in shape) + ")"


def cannot_compare(op_name: str, left: str, right: str) -> str:
    prefix = f"[{op_name}] " if op_name else ""
    return (
        f"{prefix}Due to the different shapes on the left and right,the left dump data{left} can "
        f"not be compared to the right dump data{right}. Please check the batch of the dump data "
        "or the shape may be changed due to optimization."
    )


def align(left: TensorView, right: TensorView, op_name: str = "") -> Aligned:
    """Pair the elements of ``left`` (fusion on) with those of ``right`` (fusion off).

    Raises :class:`AlignError` when msaccucmp could not compare them either.
    """
    right_name = format_name(right.format)
    truth_shape = tuple(left.original_shape) if left.original_shape else tuple(right.shape)
    right_name = _maybe_swap_nchw(right_name, truth_shape, tuple(right.shape))
    target = _FORMAT_CODES[right_name]
    scalar = is_scalar_shape(left.shape)
    left_flat = left.data.reshape(-1)
    right_flat = right.data.reshape(-1)
    if (target == ND and left.format not in (FRACTAL_NZ, NDC1HWC0)) or scalar:
        # msaccucmp passes a tensor with no element on in its own shape ([0,4] in the Shape
        # cell, (0, 4, 1, 1) in a message), where it flattens one with elements
        mine = left.data if left_flat.size == 0 and left.data.ndim > 1 else left_flat
        truth = right_flat
    else:
        mine = _convert(
            left.format, target, tuple(left.shape), truth_shape, left_flat, left.sub_format, op_name
        )
        truth = _reshape(right_flat, tuple(right.shape))
    if left.format != ND or (not scalar and mine.size != truth.size):
        mine = _slice_to(mine, truth.shape, op_name)
    if mine.size != truth.size:
        raise AlignError(cannot_compare(op_name, f"({mine.size})", f"({truth.size})"))
    return Aligned(mine, truth, tuple(mine.shape), is_scalar_shape(mine.shape))


def _maybe_swap_nchw(name: str, truth: tuple[int, ...], right_shape: tuple[int, ...]) -> str:
    """msaccucmp relabels a 4-D NCHW/NHWC right tensor whose dims are the target's permuted."""
    if name not in ("NHWC", "NCHW") or len(truth) != 4 or len(right_shape) != 4:
        return name
    if truth == right_shape:
        return name
    g, r = truth, right_shape
    if name == "NHWC" and g[0] == r[0] and g[1] == r[2] and g[2] == r[3] and g[3] == r[1]:
        name = "NCHW"
    if name == "NCHW" and g[0] == r[0] and g[1] == r[3] and g[2] == r[1] and g[3] == r[2]:
        name = "NHWC"
    return name


def _reshape(data: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    if 0 in data.shape:
        return data.reshape(shape)
    if math.prod(shape) != data.size:
        raise AlignError(
            f"{data.size} values do not fill the dump shape {list(shape)}", csv_reason=""
        )
    return data.reshape(shape)


def _convert(
    src: int,
    dest: int,
    shape: tuple[int, ...],
    target: tuple[int, ...],
    data: np.ndarray,
    group: int,
    op_name: str,
) -> np.ndarray:
    if src == ND:
        return _reshape(data, shape)
    if src in (NCHW, HWCN, NHWC) and len(shape) != 4:
        return _reshape(data, shape)
    if src == dest:
        return _reshape(data, shape)
    nz_to_nd = src == FRACTAL_NZ and dest == ND and len(target) > 2
    if nz_to_nd and (len(shape) < 4 or data.size != math.prod(target[:-2]) * math.prod(shape[-4:])):
        return _reshape(data, shape)  # msaccucmp leaves such data as it is
    if src == FRACTAL_NZ:
        _check_nz_target(target, shape, op_name)
    src_name, dest_name = format_name(src), format_name(dest)
    converter = _CONVERTERS.get((src, dest))
    if converter is None:
        raise AlignError(
            f"no conversion from {src_name} to {dest_name} (msaccucmp has none either)",
            csv_reason="",
        )
    if group >= 2:
        raise AlignError(
            f"grouped {src_name} data (sub_format {group}) cannot be converted to {dest_name}",
            csv_reason="",
        )
    try:
        return converter(shape, target, data)
    except (ValueError, IndexError, ZeroDivisionError) as error:
        raise AlignError(
            f"cannot convert {src_name}{list(shape)} to {dest_name}{list(target)}: {error}",
            csv_reason="",
        ) from None


def _check_nz_target(target: tuple[int, ...], shape: tuple[int, ...], op_name: str) -> None:
    prefix = f"[{op_name}] " if op_name else ""
    if not target:
        raise AlignError(
            prefix + "The format before transfer is FRACTAL_NZ. Please enter a valid shape."
        )
    if len(shape) < 4 or len(target) < 2:
        raise AlignError(
            f"FRACTAL_NZ shape {list(shape)} cannot hold the target shape {list(target)}",
            csv_reason="",
        )
    origin = [*shape[:-4], shape[-2] * shape[-3], shape[-1] * shape[-4]]
    invalid = (
        target[-1] > origin[-1]
        or target[-1] <= origin[-1] - 16
        or target[-2] > origin[-2]
        or target[-2] <= origin[-2] - 16
    )
    if len(target) != len(origin) or invalid:
        raise AlignError(
            f"{prefix}The target shape {shape_text(target)} is invalid. The recommended shape is "
            f"{shape_text(origin)}."
        )
    for index in range(len(origin) - 2):
        if target[index] != origin[index]:
            raise AlignError(
                f"{prefix}The target shape {shape_text(target)} is invalid, the recommended "
                f"shape is {shape_text(origin)}."
            )


def _pad(shape, length: int) -> tuple[list[int], int, int]:
    dims = [int(d) for d in shape]
    size = math.prod(dims)
    ones = sum(1 for d in dims if d == 1)
    dims += [1] * max(0, length - len(dims))
    return dims, size, ones


def _strip_ones(shape) -> tuple[list[int], bool]:
    dims = [int(d) for d in shape if d != 1]
    if not dims:
        return [int(d) for d in shape], True
    return dims, False


def _slice_to(mine: np.ndarray, truth_shape: tuple[int, ...], op_name: str) -> np.ndarray:
    """msaccucmp's ``slice_data``: cut device padding off the left tensor."""
    if mine.ndim < len(truth_shape):
        left_dims, left_ones = _strip_ones(mine.shape)
        right_dims, right_ones = _strip_ones(truth_shape)
        if not (left_ones and right_ones) and left_dims != right_dims:
            raise AlignError(cannot_compare(op_name, shape_text(left_dims), shape_text(right_dims)))
        return mine
    padded, size, ones = _pad(mine.shape, 4)
    wanted, truth_size, _ = _pad(truth_shape, len(padded))
    if truth_size == size and ones in (mine.ndim, mine.ndim - 1):
        return mine
    cut = False
    for have, want in zip(padded, wanted, strict=False):
        if have < want:
            raise AlignError(cannot_compare(op_name, shape_text(padded), shape_text(wanted)))
        if have > want:
            cut = True
            break
    if not cut:
        return mine
    mine = mine.reshape(padded)
    if len(padded) in (4, 5):
        mine = mine[tuple(slice(0, w) for w in wanted)]
    return mine


# ----------------------------------------------------------------------------- converters
# Each takes (device shape, target shape, flat data) and returns a view in the target layout.


def _nc1hwc0(order: tuple[int, ...], final: str):
    def convert(shape, target, data):
        if len(shape) < 5:
            raise IndexError("NC1HWC0 data needs a 5-D shape")
        n, c1, h, w, c0 = shape[:5]
        moved = data.reshape(n, c1, h, w, c0).transpose(order)
        sizes = {"N": n, "C": c1 * c0, "H": h, "W": w}
        return moved.reshape(tuple(sizes[axis] for axis in final))

    return convert


def _nz_to_nd(shape, target, data):
    if len(target) == 1:
        batch, rows, cols = 1, 1, target[0]
    elif len(target) == 2:
        batch, rows, cols = 1, target[0], target[1]
    else:
        batch, rows, cols = math.prod(target[:-2]), target[-2], target[-1]
    c1, n1, n0, c0 = shape[-4:]
    tiles = data.reshape(batch, c1, n1, n0, c0).transpose(0, 2, 3, 1, 4)
    full = tiles.reshape(batch, n1 * n0, c1 * c0)[:, :rows, :cols]
    if len(target) <= 2:
        return full.reshape(full.shape[1], full.shape[2])
    return full


def _fractal_z(to_hwcn: bool):
    def convert(shape, target, data):
        if to_hwcn:
            h, w, c, n = target
        else:
            n, c, h, w = target
        n1, n0, c0 = shape[1], shape[2], shape[3]
        c1 = shape[0] // (h * w)
        blocks = data.reshape(c1, h, w, n1, n0, c0)
        if to_hwcn:
            out = blocks.transpose(1, 2, 0, 5, 3, 4).reshape(h, w, c1 * c0, n1 * n0)
            return out[:, :, :c, :n]
        out = blocks.transpose(3, 4, 0, 5, 1, 2).reshape(n1 * n0, c1 * c0, h, w)
        return out[:n, :c]

    return convert


def _permute(order: tuple[int, ...]):
    def convert(shape, target, data):
        return data.reshape(shape[:4]).transpose(order)

    return convert


def _ndc1hwc0(always_slice: bool):
    def convert(shape, target, data):
        if len(shape) < 6:
            raise IndexError("NDC1HWC0 data needs a 6-D shape")
        n, d, c1, h, w, c0 = shape[:6]
        out = data.reshape(shape).transpose(0, 2, 5, 1, 3, 4).reshape(n, c1 * c0, d, h, w)
        if always_slice or len(target) == 5:
            return out[:, : target[1]]
        return out

    return convert


_CONVERTERS = {
    (NC1HWC0, NCHW): _nc1hwc0((0, 1, 4, 2, 3), "NCHW"),
    (NC1HWC0, NHWC): _nc1hwc0((0, 2, 3, 1, 4), "NHWC"),
    (NC1HWC0, HWCN): _nc1hwc0((2, 3, 1, 4, 0), "HWCN"),
    (FRACTAL_NZ, ND): _nz_to_nd,
    (FRACTAL_NZ, NCHW): _nz_to_nd,
    (FRACTAL_NZ, NHWC): _nz_to_nd,
    (FRACTAL_Z, NCHW): _fractal_z(to_hwcn=False),
    (FRACTAL_Z, HWCN): _fractal_z(to_hwcn=True),
    (NHWC, NCHW): _permute((0, 3, 1, 2)),
    (NCHW, NHWC): _permute((0, 2, 3, 1)),
    (HWCN, NCHW): _permute((3, 2, 0, 1)),
    (HWCN, NHWC): _permute((3, 0, 1, 2)),
    (NHWC, HWCN): _permute((1, 2, 3, 0)),
    (NDC1HWC0, NCDHW): _ndc1hwc0(always_slice=True),
    (NDC1HWC0, ND): _ndc1hwc0(always_slice=False),
}
