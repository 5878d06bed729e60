"""The metrics of one tensor pair, the public entry: flatten, cast, then the fastest path that
gives the reference's bits.

Bool and empty pairs go metric by metric through :mod:`.reference`; other pairs through the
compiled kernel when it is in use (:mod:`.native`), else the fused numpy sweep (:mod:`.fused`).
A vector the kernel cannot read falls back to numpy.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from . import native
from .cells import MetricCells, MetricResult
from .fused import SCRATCH, fused_metrics, mean_std_fast
from .reference import one_metric, std_result
from .selection import ALGORITHMS


class SizeMismatchError(ValueError):
    """The two flattened tensors have different lengths."""


def compute_metrics(
    left: np.ndarray,
    right: np.ndarray,
    algorithms: Iterable[str] = ALGORITHMS,
    *,
    scalar: bool = False,
    left_path: str = "",
    right_path: str = "",
    max_cmp_size: int = 0,
) -> list[MetricResult]:
    """The selected metrics of two tensors (compared flattened, C order), msaccucmp style.
    ``scalar``: msaccucmp's test on the compared left shape (every dim 1, or none): the cosine is
    then 1. Paths only appear in messages; ``max_cmp_size`` > 0 compares that many leading
    elements. Raises :class:`SizeMismatchError` when the lengths differ."""
    names = list(algorithms)
    left, right, is_bool = _flat_pair(left, right, left_path, right_path, max_cmp_size)
    results: dict[str, MetricResult] = {}
    if is_bool or left.size == 0:
        for name in names:
            results[name] = one_metric(name, left, right, is_bool, scalar, left_path, right_path)
    elif native.kernel_in_use():
        try:
            results = native.kernel_metrics(names, left, right, scalar, left_path, right_path)
        except (TypeError, ValueError, BufferError):  # a vector the kernel cannot read
            results = fused_metrics(names, left, right, scalar, left_path, right_path)
    else:
        results = fused_metrics(names, left, right, scalar, left_path, right_path)
    return [results[name] for name in names]


def metric_cells(
    left: np.ndarray,
    right: np.ndarray,
    algorithms: Sequence[str] = ALGORITHMS,
    *,
    scalar: bool = False,
    left_path: str = "",
    right_path: str = "",
    max_cmp_size: int = 0,
) -> MetricCells:
    """:func:`compute_metrics`' results in the form a result row stores them, without a
    :class:`MetricResult` per metric when the kernel answers (the measure stage's hot path)."""
    names = algorithms if isinstance(algorithms, list) else list(algorithms)
    in_use = native.kernel_in_use()
    # float16 is widened by the kernel (numpy's exact cast, faster) into the scratch buffers
    # native.kernel_cells does not use; only for the kernel: the numpy path works in all three
    size = max(left.size, right.size)
    scratch = SCRATCH.get(3, max(size, native.scratch_length(size))) if in_use else None
    x, y, is_bool = _flat_pair(
        left, right, left_path, right_path, max_cmp_size, scratch[1:] if scratch else None
    )
    if not is_bool and x.size and in_use:
        try:
            scratch_x = scratch[0][: native.scratch_length(x.size)]  # type: ignore[index]
            values, texts, messages, std = native.kernel_cells(
                x, y, scalar, left_path, right_path, scratch_x
            )
        except (TypeError, ValueError, BufferError):  # a vector the kernel cannot read
            x, y, is_bool = _flat_pair(left, right, left_path, right_path, max_cmp_size)
        else:
            return native.chosen(names, values, texts, messages, std)
    results = compute_metrics(
        x, y, names, scalar=scalar, left_path=left_path, right_path=right_path
    )
    std = None
    for result in results:
        if result.std is not None:
            std = result.std
    if std is None and not is_bool:  # as the kernel gives it, whatever -alg chose
        std = std_result(x, y, mean_std_fast).std
    return MetricCells(
        {r.name: r.value for r in results},
        {r.name: r.text for r in results},
        [r.message for r in results if r.message],
        std,
    )


def _flat_pair(
    left: np.ndarray,
    right: np.ndarray,
    left_path: str,
    right_path: str,
    max_cmp_size: int,
    widen: list[np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Both tensors flattened (C order) and, unless both are bool, as float32; the first
    ``max_cmp_size`` elements when that is > 0. Raises :class:`SizeMismatchError`.
    ``widen``: two float32 buffers the kernel may cast contiguous float16 data into."""
    left = np.asarray(left)
    right = np.asarray(right)
    if left.size != right.size:
        raise SizeMismatchError(
            f"The my output dump data size ({left.size}) in {left_path!r} does not match the "
            f"ground truth dump data size ({right.size}) in {right_path!r}."
        )
    is_bool = left.dtype == np.bool_ and right.dtype == np.bool_
    if max_cmp_size:
        left = left.reshape(-1)[:max_cmp_size]
        right = right.reshape(-1)[:max_cmp_size]
    if is_bool:
        return left.reshape(-1), right.reshape(-1), True
    if widen is not None:
        return _float32(left, widen[0]), _float32(right, widen[1]), False
    # flatten (C order) and cast in one pass; float32 C-contiguous input is used as is
    left = np.asarray(left, dtype=np.float32, order="C").reshape(-1)
    right = np.asarray(right, dtype=np.float32, order="C").reshape(-1)
    return left, right, False


_HALF = np.dtype(np.float16)


def _float32(values: np.ndarray, buffer: np.ndarray) -> np.ndarray:
    """``values`` flattened as float32; contiguous float16 is widened by the kernel into
    ``buffer`` (the same bits as numpy's cast, several times faster)."""
    if values.dtype == _HALF and values.flags.c_contiguous:
        out = native.widen_half(values, buffer)
        if out is not None:
            return out
    return np.asarray(values, dtype=np.float32, order="C").reshape(-1)
