"""Matrix products: MatMul(V2), BatchMatMul(V2), FullyConnection.

Source: GE's op definitions in ``matrix_calculation_ops.h`` of mindspore-ai/graphengine
(``third_party/fwkacllib/inc/ops/matrix_calculation_ops.h``): ``REG_OP(MatMulV2)`` (x1, x2,
optional bias, offset_w; ``transpose_x1``/``transpose_x2`` false, ``offset_x`` 0),
``REG_OP(BatchMatMulV2)`` (same inputs; ``adj_x1``/``adj_x2`` transpose the last two axes,
batch axes broadcast), ``REG_OP(FullyConnection)`` (x, w, optional b; ``num_output``,
``transpose`` false, ``axis`` 1: Caffe's InnerProduct, x flattened from ``axis`` and multiplied
by w [num_output, K], or w [K, num_output] when ``transpose``).
``offset_x`` other than 0 (int8 offset) is refused, as for Conv2D. The FullyConnection output
keeps x's rank with trailing 1s, as the real ResNet-50 graphs show
(``fc1000``: x [1, 2048, 1, 1] → y [1, 1000, 1, 1]).
"""

from __future__ import annotations

import numpy as np

from .common import as_bool, as_int, need, norm_axis, optional
from .registry import KernelError, kernel


def _no_offset(offset_x) -> None:
    if as_int(offset_x, "offset_x") != 0:
        raise KernelError(f"attribute offset_x={offset_x}: int8 input offsets are not replayed")


def _add_bias(y: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    if b is None:
        return y
    if b.size not in (1, y.shape[-1]):
        raise KernelError(f"input bias has {b.size} values for {y.shape[-1]} output columns")
    return y + b.reshape(-1)


def _product(a: np.ndarray, b: np.ndarray, ta: bool, tb: bool) -> np.ndarray:
    if a.ndim < 2 or b.ndim < 2:
        raise KernelError(f"inputs x1 {a.shape} and x2 {b.shape} need rank >= 2")
    if ta:
        a = np.swapaxes(a, -1, -2)
    if tb:
        b = np.swapaxes(b, -1, -2)
    if a.shape[-1] != b.shape[-2]:
        raise KernelError(f"inputs x1 {a.shape} and x2 {b.shape} (after transposes) do not chain")
    try:
        return np.matmul(a, b)
    except ValueError as exc:
        raise KernelError(f"batch axes of x1 {a.shape} and x2 {b.shape} do not broadcast") from exc


@kernel("MatMul", "MatMulV2", attrs=("transpose_x1", "transpose_x2", "offset_x"))
def matmul(inputs, *, transpose_x1=False, transpose_x2=False, offset_x=0):
    a, b = need(inputs, 0, "x1"), need(inputs, 1, "x2")
    _no_offset(offset_x)
    if a.ndim != 2 or b.ndim != 2:
        raise KernelError(f"inputs x1 {a.shape} and x2 {b.shape} must be 2-D for MatMul")
    y = _product(a, b, as_bool(transpose_x1, "transpose_x1"), as_bool(transpose_x2, "transpose_x2"))
    return [_add_bias(y, optional(inputs, 2))]


@kernel("BatchMatMul", "BatchMatMulV2", attrs=("adj_x1", "adj_x2", "offset_x"))
def batch_matmul(inputs, *, adj_x1=False, adj_x2=False, offset_x=0):
    a, b = need(inputs, 0, "x1"), need(inputs, 1, "x2")
    _no_offset(offset_x)
    y = _product(a, b, as_bool(adj_x1, "adj_x1"), as_bool(adj_x2, "adj_x2"))
    return [_add_bias(y, optional(inputs, 2))]


@kernel("FullyConnection", attrs=("num_output", "transpose", "axis", "offset_x"))
def fully_connection(inputs, *, num_output=None, transpose=False, axis=1, offset_x=0):
    x, w = need(inputs, 0, "x"), need(inputs, 1, "w")
    _no_offset(offset_x)
    ax = norm_axis(as_int(axis, "axis"), x.ndim, "axis")
    if w.ndim < 2:
        raise KernelError(f"input w has rank {w.ndim}, FullyConnection needs >= 2")
    k = int(np.prod(x.shape[ax:]))
    w2 = (
        w.reshape(w.shape[0], -1)
        if not as_bool(transpose, "transpose")
        else w.reshape(-1, w.shape[-1]).T
    )
    if w2.shape[1] != k:
        raise KernelError(f"input w {w.shape} does not match x {x.shape} flattened from axis={ax}")
    n = w2.shape[0]
    if num_output is not None and as_int(num_output, "num_output") != n:
        raise KernelError(f"attribute num_output={num_output} but w has {n} outputs")
    y = x.reshape(int(np.prod(x.shape[:ax])), k) @ w2.T
    b = optional(inputs, 2)
    if b is not None:
        if b.size != n:
            raise KernelError(f"input b has {b.size} values for num_output={n}")
        y = y + b.reshape(-1)
    return [y.reshape(x.shape[:ax] + (n,) + (1,) * (x.ndim - ax - 1))]
