"""Attribute and input helpers shared by the kernel families.

Attributes arrive as :mod:`fusion_switch.readers.graph` decodes them: ints, floats, bools, strings
and lists of those. A value of the wrong kind raises :class:`KernelError` naming the attribute.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .registry import KernelError

LAYOUTS_4D = ("NCHW", "NHWC")


def need(inputs: Sequence[np.ndarray | None], index: int, name: str) -> np.ndarray:
    """Required input ``index`` (called ``name`` in GE's op definition)."""
    if index >= len(inputs) or inputs[index] is None:
        raise KernelError(f"input {name} (#{index}) is missing")
    return inputs[index]  # type: ignore[return-value]


def optional(inputs: Sequence[np.ndarray | None], index: int) -> np.ndarray | None:
    return inputs[index] if index < len(inputs) else None


def as_int(value: object, name: str) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise KernelError(f"attribute {name}={value!r} is not an integer")


def as_float(value: object, name: str) -> float:
    if isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
        return float(value)
    raise KernelError(f"attribute {name}={value!r} is not a number")


def as_bool(value: object, name: str) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise KernelError(f"attribute {name}={value!r} is not a bool")


def int_list(value: object, name: str, length: int | None = None) -> list[int]:
    """A list of ints (a scalar int counts as a one-element list)."""
    items = value if isinstance(value, (list, tuple)) else [value]
    out = [as_int(v, name) for v in items]
    if length is not None and len(out) != length:
        raise KernelError(f"attribute {name}={value!r} needs {length} values")
    return out


def float_list(value: object, name: str) -> list[float]:
    """A list of numbers (a scalar counts as a one-element list; None as an empty one)."""
    if value is None:
        return []
    items = value if isinstance(value, (list, tuple)) else [value]
    return [as_float(v, name) for v in items]


def layout(format: str | None, data_format: str | None, default: str) -> str:
    """The host layout of a 4-D input. The input desc's format (``format=``) wins over the
    ``data_format`` attribute: GE leaves ``data_format`` at its NHWC default on Caffe models
    whose tensors are NCHW (``ge_proto_00017``: 46 Conv2D with ``data_format`` NHWC, inputs
    NCHW, strides ``[1, 1, 2, 2]``)."""
    for name, value in (("format", format), ("data_format", data_format)):
        if value is not None and not isinstance(value, str):
            raise KernelError(f"{name}={value!r} is not a layout name")
    for candidate in (format, data_format):
        if isinstance(candidate, str) and candidate.upper() in LAYOUTS_4D:
            return candidate.upper()
    if isinstance(data_format, str) and data_format and data_format.upper() != "ND":
        raise KernelError(f"attribute data_format={data_format!r} is not NCHW or NHWC")
    return default


def channel_axis(fmt: str, ndim: int) -> int:
    """Axis of C in a tensor of rank ``ndim`` laid out as ``fmt`` (channels-last for NHWC/NDHWC
    and ND, else axis 1)."""
    if ndim <= 1:
        return 0
    return ndim - 1 if fmt in ("NHWC", "NDHWC", "ND") else 1


def hw_pair(value: object, name: str, fmt: str) -> tuple[int, int]:
    """(h, w) from a 4-element list in ``fmt`` order, a 2-element list or a scalar."""
    items = int_list(value, name)
    if len(items) == 4:
        return (items[2], items[3]) if fmt == "NCHW" else (items[1], items[2])
    if len(items) == 2:
        return items[0], items[1]
    if len(items) == 1:
        return items[0], items[0]
    raise KernelError(f"attribute {name}={value!r} needs 1, 2 or 4 values")


def pad_hw(x: np.ndarray, pads: tuple[int, int, int, int], fill: float = 0.0) -> np.ndarray:
    """``x`` [..., H, W] with ``(top, bottom, left, right)`` rows and columns of ``fill`` around
    it: ``np.pad``'s constant mode (the same array) without its generality, which cost about
    as much as the pooling or convolution it pads (issue 16)."""
    top, bottom, left, right = pads
    h, w = x.shape[-2:]
    shape = (*x.shape[:-2], h + top + bottom, w + left + right)
    # a new array in the memory order np.pad picks (Fortran only for a Fortran-only x), so
    # that what is computed from it (views, BLAS products) sees the same layout
    out = np.empty(shape, dtype=x.dtype, order="F" if x.flags.fnc else "C")
    out[..., top : top + h, left : left + w] = x
    # only the border is filled: filling the whole array first wrote a real activation twice
    # (7 ms against 1.8 ms for 64 channels at 224x224)
    if top:
        out[..., :top, :] = fill
    if bottom:
        out[..., top + h :, :] = fill
    if left:
        out[..., top : top + h, :left] = fill
    if right:
        out[..., top : top + h, left + w :] = fill
    return out


def to_nchw(x: np.ndarray, fmt: str) -> np.ndarray:
    return x if fmt == "NCHW" else np.transpose(x, (0, 3, 1, 2))


def from_nchw(y: np.ndarray, fmt: str) -> np.ndarray:
    return y if fmt == "NCHW" else np.transpose(y, (0, 2, 3, 1))


def norm_axis(axis: int, ndim: int, name: str) -> int:
    if not -ndim <= axis < ndim:
        raise KernelError(f"attribute {name}={axis} is out of range for a rank-{ndim} input")
    return axis % ndim


def broadcast(a: np.ndarray, b: np.ndarray, names: tuple[str, str] = ("x1", "x2")) -> None:
    if a.shape == b.shape:  # the common case, without broadcast_shapes' cost
        return
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError as exc:
        raise KernelError(
            f"inputs {names[0]} {a.shape} and {names[1]} {b.shape} do not broadcast"
        ) from exc


def broadcast_all(arrays: Sequence[np.ndarray], names: Sequence[str]) -> None:
    try:
        np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError as exc:
        shapes = ", ".join(f"{n} {a.shape}" for n, a in zip(names, arrays, strict=True))
        raise KernelError(f"inputs {shapes} do not broadcast") from exc
