"""The ten metrics written plainly from msaccucmp's formulas: the definition the faster paths
(:mod:`.fused`, the compiled kernel) are held to.

Both tensors arrive flattened (x = fusion on, y = fusion off). Like msaccucmp, non-bool data is
cast to float32 first and every metric is evaluated in float32 numpy arithmetic
(StandardDeviation in float64). :func:`one_metric` handles every edge case (empty, bool, a
failing metric); the early exits and last steps shared with :mod:`.fused` live here too.
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np

from .cells import (
    NAN_TEXT,
    SCALAR_MESSAGE,
    MetricResult,
    cosine_zero_message,
    format_value,
    kl_inf_message,
    kl_zero_message,
    std_cell,
)
from .selection import BOOL_ALGORITHMS

EPS = np.finfo(float).eps  # msaccucmp's FLOAT_EPSILON (float64 epsilon)
EPS32 = np.finfo(np.float32).eps  # KL divergence floor


@contextlib.contextmanager
def quiet():
    """Silence numpy's RuntimeWarnings (empty means, overflow) like msaccucmp's seterr."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def one_metric(
    name: str, x: np.ndarray, y: np.ndarray, is_bool: bool, scalar: bool, lpath: str, rpath: str
) -> MetricResult:
    """One metric with msaccucmp's edge cases: bool pairs, and any failure as NaN + message."""
    if is_bool and name not in BOOL_ALGORITHMS:
        return MetricResult(
            name, None, NAN_TEXT, f"Algorithm {name} does not support Boolean types."
        )
    try:
        with np.errstate(all="ignore"), quiet():
            return reference_metric(name, x, y, scalar, lpath, rpath)
    except Exception as error:  # msaccucmp turns any failure of one metric into NaN + message
        return MetricResult(
            name, None, NAN_TEXT, f"Failed to execute 'compare' in '{name}'. {error}"
        )


def plain(name: str, value) -> MetricResult:
    return MetricResult(name, float(value), format_value(value))


def cosine_from_norms(nx, ny, scalar: bool, lpath: str, rpath: str) -> MetricResult | None:
    """The early exits of CosineSimilarity, or None when the dot product must be computed."""
    name = "CosineSimilarity"
    if scalar:
        return MetricResult(name, 1.0, format_value(1), SCALAR_MESSAGE)
    if nx <= EPS and ny < EPS:
        return MetricResult(name, 1.0, "1.0")
    if nx**0.5 <= EPS:  # msaccucmp's norm ** 0.5
        return MetricResult(name, None, NAN_TEXT, cosine_zero_message(lpath))
    if ny**0.5 <= EPS:
        return MetricResult(name, None, NAN_TEXT, cosine_zero_message(rpath))
    return None


def finish_cosine(total) -> MetricResult:
    value = min(total, 1.0)  # NaN stays NaN: min() keeps its first argument unless 1.0 < it
    return MetricResult("CosineSimilarity", float(value), format_value(value))


def _kl_floor(values: np.ndarray) -> np.ndarray:
    high = values.max()
    low = values.min()
    span = high - low
    scaled = (values - low) / span if span != 0 else values
    return np.maximum(scaled, EPS32)


def finish_kl(total, rpath: str) -> MetricResult:
    value = total
    if abs(value) < EPS:
        value = 0.0
    message = ""
    if str(value) == "inf":
        message = kl_inf_message(rpath)
    return MetricResult("KullbackLeiblerDivergence", float(value), format_value(value), message)


def mean_std64(values: np.ndarray) -> tuple[float, float]:
    """Population mean and std accumulated in float64: ``np.mean/np.std(dtype=float64)``."""
    with np.errstate(all="ignore"), quiet():
        mean = np.mean(values, dtype=np.float64)
        std = np.std(values, dtype=np.float64)
    return float(mean), float(std)


def std_result(x: np.ndarray, y: np.ndarray, stats=mean_std64) -> MetricResult:
    """StandardDeviation of both sides; ``stats`` gives one side's (mean, std)."""
    left_mean, left_std = stats(x)
    right_mean, right_std = stats(y)
    pair = ((left_mean, left_std), (right_mean, right_std))
    return MetricResult(
        "StandardDeviation", None, std_cell(left_mean, left_std, right_mean, right_std), std=pair
    )


def _relative_terms(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where(np.abs(y) > EPS, np.abs(x / y - 1), 0)


def reference_metric(
    name: str, x: np.ndarray, y: np.ndarray, scalar: bool, lpath: str, rpath: str
) -> MetricResult:
    """One metric, written straight from msaccucmp's formula (x = fusion on, y = fusion off)."""
    if name == "CosineSimilarity":
        nx = np.linalg.norm(x, axis=-1, keepdims=True)
        ny = np.linalg.norm(y, axis=-1, keepdims=True)
        early = cosine_from_norms(nx, ny, scalar, lpath, rpath)
        if early is not None:
            return early
        return finish_cosine(((x / nx) * (y / ny)).sum())
    if name == "MaxAbsoluteError":
        return plain(name, np.abs(x - y).max())
    if name == "AccumulatedRelativeError":
        return plain(name, _relative_terms(x, y).sum())
    if name == "RelativeEuclideanDistance":
        y_square = (y**2).sum()
        ratio = 0.0 if y_square**0.5 <= EPS else ((x - y) ** 2).sum() / y_square
        return plain(name, ratio**0.5)
    if name == "KullbackLeiblerDivergence":
        p = _kl_floor(x)
        q = _kl_floor(y)
        p_zero = bool(np.all(p == 0))
        q_zero = bool(np.all(q == 0))
        if p_zero and q_zero:
            return MetricResult(name, None, NAN_TEXT, kl_zero_message(lpath, rpath))
        if p_zero or q_zero:
            return MetricResult(name, None, NAN_TEXT, kl_zero_message(lpath if p_zero else rpath))
        p = p / p.sum()
        q = q / q.sum()
        return finish_kl((p * np.log(p / q)).sum(), rpath)
    if name == "StandardDeviation":
        return std_result(x, y)
    if name == "MeanAbsoluteError":
        return plain(name, np.abs(x - y).mean())
    if name == "RootMeanSquareError":
        return plain(name, np.sqrt(np.average((x - y) ** 2)))
    if name == "MaxRelativeError":
        return plain(name, _relative_terms(x, y).max())
    if name == "MeanRelativeError":
        return plain(name, _relative_terms(x, y).mean())
    raise KeyError(name)
