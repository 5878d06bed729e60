"""Reductions: ReduceMean/Sum/Max/Min/Prod, the ``D`` forms (axes as attribute) and the plain
forms (axes as input 1).

Source: GE's op definitions in ``reduce_ops.h`` of mindspore-ai/graphengine
(``third_party/fwkacllib/inc/ops/reduce_ops.h``): ``REG_OP(ReduceMeanD)`` (``axes`` required,
``keep_dims`` false, ``noop_with_empty_axes`` false), ``REG_OP(ReduceMean)`` (axes input,
``noop_with_empty_axes`` true), likewise ReduceSum(D), ReduceMax(D), ReduceMin(D),
ReduceProd(D). Empty ``axes`` reduce every axis unless ``noop_with_empty_axes`` is true (ONNX
reading). Outputs follow ``keep_dims``; the generator writes no ``keep_dims`` but its graphs
describe the kept axes ([1, 256, 1]): the values are the same, so a caller that holds the
output desc reshapes to it (see the package docstring).
"""

from __future__ import annotations

import numpy as np

from .common import as_bool, int_list, need, norm_axis, optional
from .registry import KernelError, kernel

_FUNCS = {
    "Mean": np.mean,
    "Sum": np.sum,
    "Max": np.max,
    "Min": np.min,
    "Prod": np.prod,
}


def _reduce(func, x: np.ndarray, axes: list[int], keep_dims, noop) -> np.ndarray:
    if not axes:
        if as_bool(noop, "noop_with_empty_axes"):
            return x
        axes = list(range(x.ndim))
    ax = tuple(sorted({norm_axis(a, x.ndim, "axes") for a in axes}))
    return func(x, axis=ax, keepdims=as_bool(keep_dims, "keep_dims"))


def _with_attr(name: str):
    func = _FUNCS[name]

    def reduce_d(inputs, *, axes=None, keep_dims=False, noop_with_empty_axes=False):
        x = need(inputs, 0, "x")
        if axes is None:  # required by GE; an empty list (present) reduces every axis
            raise KernelError("attribute axes is missing (GE requires it)")
        return [_reduce(func, x, int_list(axes, "axes"), keep_dims, noop_with_empty_axes)]

    reduce_d.__name__ = f"reduce_{name.lower()}_d"
    return reduce_d


def _with_input(name: str):
    func = _FUNCS[name]

    def reduce(inputs, *, keep_dims=False, noop_with_empty_axes=True):
        x = need(inputs, 0, "x")
        a = optional(inputs, 1)
        axes = [] if a is None else int_list([float(v) for v in a.ravel()], "axes")
        return [_reduce(func, x, axes, keep_dims, noop_with_empty_axes)]

    reduce.__name__ = f"reduce_{name.lower()}"
    return reduce


for _name in _FUNCS:
    kernel(f"Reduce{_name}D", attrs=("axes", "keep_dims", "noop_with_empty_axes"))(
        _with_attr(_name)
    )
    kernel(f"Reduce{_name}", attrs=("keep_dims", "noop_with_empty_axes"))(_with_input(_name))
