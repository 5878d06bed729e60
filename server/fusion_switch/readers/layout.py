"""Device tensor layouts ↔ host layouts (formats.md 1.6).

:func:`to_host` turns what an NPU kernel dumped (NC1HWC0, NDC1HWC0, FRACTAL_NZ, FRACTAL_Z,
NHWC, HWCN) into the framework layout (NCHW, NCDHW, ND, NCHW, NCHW, NCHW) with the device
padding removed; :func:`to_device` is the exact inverse (padding with zeros) and is what the
case generator uses to write fusion-on dumps. Everything is reshape/transpose/slice.

Relation to msaccucmp's converters (``format_manager/builtin_format_convert``): the element
mapping is the same (checked in the tests against their code). msaccucmp's NC1HWC0→NCHW and
NDC1HWC0→NCDHW keep the padded channels and rely on a later slice to the ground-truth shape;
here the host shape, when given, is applied directly. FRACTAL_Z is supported for groups=1 only
(grouped convolutions use a different packing; a LayoutError says so).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .formats import FORMAT_NAMES, format_code

N0 = 16  # rows per fractal block (FRACTAL_Z N0, FRACTAL_NZ H0)

HOST_FORMAT = {
    "NC1HWC0": "NCHW",
    "NDC1HWC0": "NCDHW",
    "FRACTAL_NZ": "ND",
    "FRACTAL_Z": "NCHW",
    "NHWC": "NCHW",
    "HWCN": "NCHW",
    "NCHW": "NCHW",
    "ND": "ND",
    "NCDHW": "NCDHW",
}
SUPPORTED = tuple(HOST_FORMAT)


class LayoutError(ValueError):
    """A tensor that cannot be converted: unsupported format or inconsistent shapes."""


def default_c0(data_type: int) -> int:
    """C0 (channels per block): 32 for 8-bit integers, 64 for int4, else 16."""
    if data_type in (3, 4, 18, 21):  # INT8, UINT8, QINT8, QUINT8
        return 32
    if data_type == 28:  # INT4
        return 64
    return 16


def _name(fmt: str | int) -> str:
    if isinstance(fmt, int):
        name = FORMAT_NAMES.get(fmt & 0xFF)
        if name is None:
            raise LayoutError(f"unknown format code {fmt}")
        return name
    code = format_code(fmt)
    if code is None:
        raise LayoutError(f"unknown format {fmt!r}")
    return FORMAT_NAMES[code]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _check_rank(name: str, shape: Sequence[int], rank: int, what: str) -> None:
    if len(shape) != rank:
        raise LayoutError(f"{name} needs a {rank}-D {what} shape, got {list(shape)}")


def _shaped(data: np.ndarray, shape: Sequence[int], name: str) -> np.ndarray:
    if data.size != math.prod(shape):
        raise LayoutError(
            f"{name}: {data.size} elements do not fill the device shape {list(shape)} "
            f"({math.prod(shape)} elements)"
        )
    return data.reshape(shape)


def _nz_host_3d(host_shape: Sequence[int]) -> tuple[int, int, int]:
    """FRACTAL_NZ treats ND data as (batch, H, W); 1-D is one row (msaccucmp)."""
    if len(host_shape) == 0:
        return 1, 1, 1
    if len(host_shape) == 1:
        return 1, 1, host_shape[0]
    return math.prod(host_shape[:-2]), host_shape[-2], host_shape[-1]


def device_shape(host_shape: Sequence[int], fmt: str | int, c0: int = 16) -> tuple[int, ...]:
    """The device shape a host tensor of ``host_shape`` takes in format ``fmt``."""
    name = _name(fmt)
    shape = tuple(int(d) for d in host_shape)
    if name == "NC1HWC0":
        _check_rank(name, shape, 4, "NCHW host")
        n, c, h, w = shape
        return (n, _ceil_div(c, c0), h, w, c0)
    if name == "NDC1HWC0":
        _check_rank(name, shape, 5, "NCDHW host")
        n, c, d, h, w = shape
        return (n, d, _ceil_div(c, c0), h, w, c0)
    if name == "FRACTAL_NZ":
        _, h, w = _nz_host_3d(shape)
        batch = shape[:-2] if len(shape) > 2 else ()
        return (*batch, _ceil_div(w, c0), _ceil_div(h, N0), N0, c0)
    if name == "FRACTAL_Z":
        _check_rank(name, shape, 4, "NCHW host")
        n, c, h, w = shape
        return (_ceil_div(c, c0) * h * w, _ceil_div(n, N0), N0, c0)
    if name == "NHWC":
        _check_rank(name, shape, 4, "NCHW host")
        n, c, h, w = shape
        return (n, h, w, c)
    if name == "HWCN":
        _check_rank(name, shape, 4, "NCHW host")
        n, c, h, w = shape
        return (h, w, c, n)
    if name in ("NCHW", "ND", "NCDHW"):
        return shape
    raise LayoutError(f"format {name} is not supported (supported: {', '.join(SUPPORTED)})")


def to_host(
    data: np.ndarray,
    fmt: str | int,
    device: Sequence[int],
    host_shape: Sequence[int] | None = None,
    *,
    groups: int = 1,
) -> np.ndarray:
    """Convert device data (any shape, ``device`` elements) to the host layout of ``fmt``.

    ``host_shape`` is the framework shape (the dump's ``original_shape``); padding beyond it is
    removed. Without it, padded channels/rows are kept (NC1HWC0, NDC1HWC0, FRACTAL_NZ) or the
    conversion is refused when it cannot be inferred (FRACTAL_Z needs H and W).
    """
    name = _name(fmt)
    device = tuple(int(d) for d in device)
    array = np.asarray(data)
    if name in ("NCHW", "ND", "NCDHW"):
        shaped = _shaped(array.reshape(-1), device, name)
        return shaped.reshape(host_shape) if host_shape is not None else shaped
    if name == "NC1HWC0":
        _check_rank(name, device, 5, "NC1HWC0 device")
        n, c1, h, w, c0 = device
        host = _shaped(array.reshape(-1), device, name).transpose(0, 1, 4, 2, 3)
        host = host.reshape(n, c1 * c0, h, w)
        return _crop(host, host_shape, name)
    if name == "NDC1HWC0":
        _check_rank(name, device, 6, "NDC1HWC0 device")
        n, d, c1, h, w, c0 = device
        host = _shaped(array.reshape(-1), device, name).transpose(0, 2, 5, 1, 3, 4)
        host = host.reshape(n, c1 * c0, d, h, w)
        return _crop(host, host_shape, name)
    if name == "FRACTAL_NZ":
        if len(device) < 4:
            raise LayoutError(
                f"FRACTAL_NZ needs a device shape of at least 4 dims, got {list(device)}"
            )
        w1, h1, h0, w0 = device[-4:]
        batch = device[:-4]
        b = math.prod(batch)
        host = _shaped(array.reshape(-1), (b, w1, h1, h0, w0), name).transpose(0, 2, 3, 1, 4)
        host = host.reshape(*batch, h1 * h0, w1 * w0)
        if host_shape is None:
            return host
        _, h, w = _nz_host_3d(tuple(host_shape))
        if h > h1 * h0 or w > w1 * w0:
            raise LayoutError(
                f"FRACTAL_NZ device shape {list(device)} is smaller than the host shape "
                f"{list(host_shape)}"
            )
        return host.reshape(b, h1 * h0, w1 * w0)[:, :h, :w].reshape(tuple(host_shape))
    if name == "FRACTAL_Z":
        if groups != 1:
            raise LayoutError(
                f"FRACTAL_Z with groups={groups} (grouped convolution) is not supported"
            )
        _check_rank(name, device, 4, "FRACTAL_Z device")
        if host_shape is None or len(host_shape) != 4:
            raise LayoutError("FRACTAL_Z needs the NCHW host shape (N, C, H, W) to unpack")
        h, w = int(host_shape[2]), int(host_shape[3])
        c1hw, n1, n0, c0 = device
        if h * w == 0 or c1hw % (h * w):
            raise LayoutError(f"FRACTAL_Z device shape {list(device)} does not match H*W={h * w}")
        c1 = c1hw // (h * w)
        host = _shaped(array.reshape(-1), (c1, h, w, n1, n0, c0), name).transpose(3, 4, 0, 5, 1, 2)
        host = host.reshape(n1 * n0, c1 * c0, h, w)
        return _crop(host, host_shape, name)
    if name == "NHWC":
        _check_rank(name, device, 4, "NHWC device")
        host = _shaped(array.reshape(-1), device, name).transpose(0, 3, 1, 2)
        return _crop(host, host_shape, name)
    if name == "HWCN":
        _check_rank(name, device, 4, "HWCN device")
        host = _shaped(array.reshape(-1), device, name).transpose(3, 2, 0, 1)
        return _crop(host, host_shape, name)
    raise LayoutError(f"format {name} is not supported (supported: {', '.join(SUPPORTED)})")


def _crop(host: np.ndarray, host_shape: Sequence[int] | None, name: str) -> np.ndarray:
    if host_shape is None:
        return host
    wanted = tuple(int(d) for d in host_shape)
    if len(wanted) != host.ndim or any(w > h for w, h in zip(wanted, host.shape, strict=True)):
        raise LayoutError(
            f"{name}: host shape {list(wanted)} does not fit the converted shape {list(host.shape)}"
        )
    return host[tuple(slice(0, w) for w in wanted)]


def to_device(array: np.ndarray, fmt: str | int, c0: int = 16) -> np.ndarray:
    """Lay a host tensor out as the device would (zero padding); inverse of :func:`to_host`."""
    name = _name(fmt)
    host = np.asarray(array)
    shape = device_shape(host.shape, name, c0)
    if name in ("NCHW", "ND", "NCDHW"):
        return host.copy()
    if name == "NHWC":
        return np.ascontiguousarray(host.transpose(0, 2, 3, 1))
    if name == "HWCN":
        return np.ascontiguousarray(host.transpose(2, 3, 1, 0))
    if name == "NC1HWC0":
        n, c1, h, w, _ = shape
        padded = np.zeros((n, c1 * c0, h, w), dtype=host.dtype)
        padded[:, : host.shape[1]] = host
        return np.ascontiguousarray(padded.reshape(n, c1, c0, h, w).transpose(0, 1, 3, 4, 2))
    if name == "NDC1HWC0":
        n, d, c1, h, w, _ = shape
        padded = np.zeros((n, c1 * c0, d, h, w), dtype=host.dtype)
        padded[:, : host.shape[1]] = host
        return np.ascontiguousarray(padded.reshape(n, c1, c0, d, h, w).transpose(0, 3, 1, 4, 5, 2))
    if name == "FRACTAL_NZ":
        b, h, w = _nz_host_3d(host.shape)
        w1, h1, h0, w0 = shape[-4:]
        padded = np.zeros((b, h1 * h0, w1 * w0), dtype=host.dtype)
        padded[:, :h, :w] = host.reshape(b, h, w)
        blocks = padded.reshape(b, h1, h0, w1, w0).transpose(0, 3, 1, 2, 4)
        return np.ascontiguousarray(blocks.reshape(shape))
    if name == "FRACTAL_Z":
        n, c, h, w = host.shape
        c1hw, n1, n0, _ = shape
        c1 = c1hw // (h * w)
        padded = np.zeros((n1 * n0, c1 * c0, h, w), dtype=host.dtype)
        padded[:n, :c] = host
        blocks = padded.reshape(n1, n0, c1, c0, h, w).transpose(2, 4, 5, 0, 1, 3)
        return np.ascontiguousarray(blocks.reshape(shape))
    raise LayoutError(f"format {name} is not supported (supported: {', '.join(SUPPORTED)})")
