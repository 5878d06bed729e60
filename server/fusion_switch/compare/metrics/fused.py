"""All selected metrics of one float32 pair in one numpy sweep: the path without the kernel.

It performs the reference's numpy operations (:mod:`.reference`) on the same float32 values,
sharing intermediate arrays and reusing per-process scratch buffers (:data:`SCRATCH`, also the
kernel's), so its results are the same bits, only faster. Only for non-empty float vectors.
"""

from __future__ import annotations

import threading

import numpy as np

from .cells import MetricResult
from .reference import (
    EPS,
    EPS32,
    cosine_from_norms,
    finish_cosine,
    finish_kl,
    plain,
    std_result,
)

Vec = np.ndarray  # a flat float32 vector (inputs and scratch buffers)


def mean_std_fast(values: np.ndarray) -> tuple[float, float]:
    """The same two numbers as :func:`.reference.mean_std64` for a non-empty float32 vector,
    computed with the ufunc calls numpy's ``_var`` makes (same reductions, so the same bits)
    minus its Python overhead, in a reused float64 buffer."""
    n = values.size
    wide = SCRATCH.wide(n)
    total = np.add.reduce(values, dtype=np.float64)
    mean = total / np.intp(n)
    np.subtract(values, mean, out=wide)
    np.square(wide, out=wide)
    variance = np.add.reduce(wide) / np.intp(n)
    return float(mean), float(np.sqrt(variance))


class _Scratch(threading.local):
    """Work buffers, grown on demand and reused across tensors: float32 ones, and the float64
    one of the mean and std. Each thread has its own: a Dask worker with several threads
    compares chunks side by side in one process, and buffers shared by the process gave
    wrong metrics in 40-180 of 3,000 rows (a review of the cluster set-up, issue 16)."""

    def __init__(self) -> None:  # run again in each thread that uses it
        self._buffers: list[np.ndarray] = []
        self._wide = np.empty(0, dtype=np.float64)

    def get(self, count: int, n: int) -> list[np.ndarray]:
        if len(self._buffers) < count or self._buffers[0].size < n:
            size = max(n, self._buffers[0].size if self._buffers else 0)
            self._buffers = [np.empty(size, dtype=np.float32) for _ in range(max(count, 3))]
        return [buffer[:n] for buffer in self._buffers[:count]]

    def one(self, n: int) -> np.ndarray:
        """The first buffer's first ``n`` elements (``get(1, n)[0]``, once per tensor pair)."""
        buffers = self._buffers
        if buffers and buffers[0].size >= n:
            return buffers[0][:n]
        return self.get(1, n)[0]

    def wide(self, n: int) -> np.ndarray:
        """``n`` float64 elements (:func:`mean_std_fast`)."""
        if self._wide.size < n:
            self._wide = np.empty(n, dtype=np.float64)
        return self._wide[:n]

    def held_bytes(self) -> int:
        """Bytes of the work buffers kept (these and the float64 one of the mean and std)."""
        return sum(b.nbytes for b in self._buffers) + self._wide.nbytes

    def release_if_larger(self, limit: int) -> None:
        """Drop buffers bigger than ``limit`` elements so one huge tensor does not pin memory."""
        if self._buffers and self._buffers[0].size > limit:
            self._buffers = []
        if self._wide.size > limit:
            self._wide = np.empty(0, dtype=np.float64)


SCRATCH = _Scratch()


def _mean32(total: np.float32, n: int) -> np.float32:
    """``ndarray.mean()`` of a float32 array from its float32 sum: numpy divides by an ``intp``
    count, which promotes to float64, and rounds the quotient back to float32."""
    return total.dtype.type(float(total) / n)  # the same float64 division, less wrapping


_add = np.add.reduce  # what ndarray.sum() and .mean() call, without their Python wrappers
_max = np.maximum.reduce  # ndarray.max()
_min = np.minimum.reduce  # ndarray.min()


def fused_metrics(
    names: list[str], x: np.ndarray, y: np.ndarray, scalar: bool, lpath: str, rpath: str
) -> dict[str, MetricResult]:
    """All selected metrics for non-empty float32 vectors; identical bits to the reference
    (``a.sum()`` is ``np.add.reduce(a)``: called directly, same pairwise sum, same bits)."""
    wanted = set(names)
    n = x.size
    out: dict[str, MetricResult] = {}
    a, b, c = SCRATCH.get(3, n)
    y_square = None  # sum(y * y), shared by RelativeEuclideanDistance and the cosine's |y|
    with np.errstate(all="ignore"):
        # |x - y| feeds MaxAbsoluteError and MeanAbsoluteError; its square (== (x - y)**2
        # bit for bit) feeds RelativeEuclideanDistance and RootMeanSquareError.
        if wanted & {
            "MaxAbsoluteError",
            "MeanAbsoluteError",
            "RelativeEuclideanDistance",
            "RootMeanSquareError",
        }:
            np.subtract(x, y, out=a)
            np.abs(a, out=a)
            if "MaxAbsoluteError" in wanted:
                out["MaxAbsoluteError"] = plain("MaxAbsoluteError", _max(a))
            if "MeanAbsoluteError" in wanted:
                out["MeanAbsoluteError"] = plain("MeanAbsoluteError", _mean32(_add(a), n))
            if wanted & {"RelativeEuclideanDistance", "RootMeanSquareError"}:
                np.multiply(a, a, out=b)
                diff_square = _add(b)
                if "RootMeanSquareError" in wanted:
                    out["RootMeanSquareError"] = plain(
                        "RootMeanSquareError", np.sqrt(_mean32(diff_square, n))
                    )
                if "RelativeEuclideanDistance" in wanted:
                    np.multiply(y, y, out=b)
                    y_square = _add(b)
                    ratio = 0.0 if y_square**0.5 <= EPS else diff_square / y_square
                    out["RelativeEuclideanDistance"] = plain(
                        "RelativeEuclideanDistance", ratio**0.5
                    )
        if "CosineSimilarity" in wanted:
            out["CosineSimilarity"] = _fused_cosine(x, y, a, b, y_square, scalar, lpath, rpath)
        if wanted & {"AccumulatedRelativeError", "MaxRelativeError", "MeanRelativeError"}:
            np.divide(x, y, out=a)
            np.subtract(a, 1, out=a)
            np.abs(a, out=a)
            np.abs(y, out=b)
            a[~np.greater(b, EPS)] = 0  # msaccucmp: where(|y| > eps, term, 0)
            if "AccumulatedRelativeError" in wanted or "MeanRelativeError" in wanted:
                total = _add(a)
                if "AccumulatedRelativeError" in wanted:
                    out["AccumulatedRelativeError"] = plain("AccumulatedRelativeError", total)
                if "MeanRelativeError" in wanted:
                    out["MeanRelativeError"] = plain("MeanRelativeError", _mean32(total, n))
            if "MaxRelativeError" in wanted:
                out["MaxRelativeError"] = plain("MaxRelativeError", _max(a))
        if "KullbackLeiblerDivergence" in wanted:
            out["KullbackLeiblerDivergence"] = _fused_kl(x, y, a, b, c, lpath, rpath)
        if "StandardDeviation" in wanted:
            out["StandardDeviation"] = std_result(x, y, mean_std_fast)
    return out


def _fused_cosine(
    x: Vec, y: Vec, a: Vec, b: Vec, y_square, scalar: bool, lpath: str, rpath: str
) -> MetricResult:
    if scalar:
        return cosine_from_norms(None, None, True, lpath, rpath)  # type: ignore[return-value]
    np.multiply(x, x, out=a)
    nx = np.sqrt(_add(a, keepdims=True))
    if y_square is None:
        np.multiply(y, y, out=a)
        y_square = _add(a)
    ny = np.sqrt(np.reshape(y_square, (1,)))  # np.linalg.norm's keepdims shape
    early = cosine_from_norms(nx, ny, False, lpath, rpath)
    if early is not None:
        return early
    np.divide(x, nx, out=a)
    np.divide(y, ny, out=b)
    np.multiply(a, b, out=a)
    return finish_cosine(_add(a))


def _fused_kl_floor(values: np.ndarray, out: np.ndarray) -> np.ndarray:
    high = _max(values)
    low = _min(values)
    span = high - low
    if span != 0:
        np.subtract(values, low, out=out)
        np.divide(out, span, out=out)
        np.maximum(out, EPS32, out=out)
    else:
        np.maximum(values, EPS32, out=out)
    return out


def _fused_kl(x: Vec, y: Vec, a: Vec, b: Vec, c: Vec, lpath: str, rpath: str) -> MetricResult:
    p = _fused_kl_floor(x, a)
    q = _fused_kl_floor(y, b)
    # msaccucmp's "all the data is zero" checks (reference.reference_metric) cannot fire here:
    # after the floor every element is >= float32 eps or NaN, and NaN != 0, so on non-empty
    # vectors they would cost two passes to find nothing.
    np.divide(p, _add(p), out=p)
    np.divide(q, _add(q), out=q)
    np.divide(p, q, out=c)
    np.log(c, out=c)
    np.multiply(p, c, out=c)
    return finish_kl(_add(c), rpath)
