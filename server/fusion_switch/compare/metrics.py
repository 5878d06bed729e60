"""msaccucmp's ten comparison metrics, same formulas, same numbers, same CSV cells.

Both tensors arrive flattened. Like msaccucmp, non-bool data is cast to float32 first and every
metric is evaluated in float32 numpy arithmetic (StandardDeviation in float64), so our values are
bit-identical to msaccucmp's when numpy is the same. Two code paths compute them:

* :func:`_reference_metric` evaluates one metric at a time, written plainly from the formula. It
  handles every edge case (empty, bool, exceptions) and is the definition we test against.
* :func:`_fused_metrics` evaluates all selected metrics in one sweep for the common case (non-empty
  float data), sharing intermediate arrays and scratch buffers. It performs the same numpy
  operations on the same float32 values, so the results are the same bits, only faster.
* :func:`_kernel_cells` gets every value and cell from one call of the compiled kernel
  (``_kernel.c``: numpy's summation order and float32 arithmetic, ``'{:.6f}'`` cells, numpy's
  log), used only when it was built and, on first use, gave the numpy path's exact results on
  awkward vectors (:func:`kernel_in_use`); ``_kernel.metrics_raw`` also decodes file bytes.

A metric that cannot be computed yields ``MetricResult(value=None, text="NaN")``; a computed NaN
prints as ``nan``, exactly as msaccucmp's ``'{:.6f}'.format`` does.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
import warnings
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np

ALGORITHMS: tuple[str, ...] = (
    "CosineSimilarity",
    "MaxAbsoluteError",
    "AccumulatedRelativeError",
    "RelativeEuclideanDistance",
    "KullbackLeiblerDivergence",
    "StandardDeviation",
    "MeanAbsoluteError",
    "RootMeanSquareError",
    "MaxRelativeError",
    "MeanRelativeError",
)
"""All metrics in msaccucmp's index order (``-alg 0`` is CosineSimilarity)."""

BOOL_ALGORITHMS = frozenset({"CosineSimilarity", "RelativeEuclideanDistance"})
"""The only metrics msaccucmp evaluates when both tensors are bool."""

NAN_TEXT = "NaN"
_EPS = np.finfo(float).eps  # msaccucmp's FLOAT_EPSILON (float64 epsilon)
_EPS32 = np.finfo(np.float32).eps  # KL divergence floor
_STD_FLOOR = 0.001  # |mean| or |std| below this prints as 0
_INDEX = re.compile(r"^[0-9]$")
Vec = np.ndarray  # a flat float32 vector (the fused path's inputs and scratch buffers)


class AlgorithmSelectionError(ValueError):
    """``-alg`` named nothing we can compute."""


class MetricResult(NamedTuple):
    """One metric of one tensor pair.

    ``value`` is the number (``None`` when the metric was not computed; a computed NaN stays
    ``float('nan')``). ``text`` is the exact CSV cell. ``message`` is what msaccucmp appends to
    CompareFailReason for this metric (empty when nothing). StandardDeviation has no single
    number: ``value`` is None and ``std`` holds ``((left_mean, left_std), (right_mean,
    right_std))``. A named tuple, not a dataclass: ten are made per tensor pair, and a frozen
    dataclass costs several times as much to build.
    """

    name: str
    value: float | None
    text: str
    message: str = ""
    std: tuple[tuple[float, float], tuple[float, float]] | None = None


# ----------------------------------------------------------------------------- selection


def parse_algorithms(
    selection: str | Sequence[int | str] | None, warnings: list[str] | None = None
) -> list[str]:
    """The metric names ``-alg`` selects, in the order given, as msaccucmp resolves them.

    Accepts ``None``/``"all"`` (every metric in index order), a comma-separated string of
    single-digit indexes and/or names, or a list of ints/strings (``-alg 0 3`` style). Unknown
    entries are skipped with a warning appended to ``warnings`` (naming the closest algorithm);
    an empty result raises :class:`AlgorithmSelectionError`.
    """
    if selection is None:
        return list(ALGORITHMS)
    text = selection if isinstance(selection, str) else ",".join(str(item) for item in selection)
    if text.lower() == "all":
        return list(ALGORITHMS)
    chosen: list[str] = []
    unknown: list[str] = []
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        if _INDEX.match(item):
            name = ALGORITHMS[int(item)]
        elif item in ALGORITHMS:
            name = item
        else:
            unknown.append(item)
            continue
        if name not in chosen:
            chosen.append(name)
    if not chosen and not unknown:
        raise AlgorithmSelectionError(f"-alg: no algorithm selected. {_VALID}.")
    if not chosen:
        raise AlgorithmSelectionError(
            " ".join(_unknown_algorithm(item) for item in unknown) + f" {_VALID}."
        )
    if warnings is not None:
        warnings += [f"{_unknown_algorithm(item, skipped=True)} {_VALID}." for item in unknown]
    return chosen


_VALID = f"Valid: 0..9 or {', '.join(ALGORITHMS)} (or all)"


def _unknown_algorithm(item: str, skipped: bool = False) -> str:
    """``-alg ITEM: unknown algorithm`` with the closest name(s) when there are any."""
    head = f"-alg {item}: unknown algorithm" + (", skipped" if skipped else "")
    if item.isdigit():
        return f"{head} (indexes go from 0 to {len(ALGORITHMS) - 1})."
    close = closest_algorithms(item)
    if not close:
        return f"{head}."
    names = close[0] if len(close) == 1 else f"{', '.join(close[:-1])} or {close[-1]}"
    return f"{head}; did you mean {names}?"


_MAX_SUGGESTIONS = 4


def _initials(name: str) -> str:
    return "".join(char for char in name if char.isupper()).lower()


def _is_subsequence(short: str, long: str) -> bool:
    letters = iter(long)
    return all(char in letters for char in short)


def closest_algorithms(item: str) -> list[str]:
    """The algorithm names a mistyped ``-alg`` entry most likely means, best first: the same
    name in another case; the name's initials (``rmse``; ``mae`` is both Max- and
    MeanAbsoluteError) or their start (``kl``); names containing the entry (``Cosine``);
    names spelled alike (``CosineSimilarty``); names with the entry's letters in order and
    the same first letter (``std``). Empty when nothing is close enough, or too much is
    (``Error``)."""
    key = item.lower()
    lowered = {name.lower(): name for name in ALGORITHMS}
    if key in lowered:
        return [lowered[key]]
    for candidates in (
        [name for name in ALGORITHMS if _initials(name) == key],
        [name for name in ALGORITHMS if len(key) >= 2 and _initials(name).startswith(key)],
        [name for name in ALGORITHMS if len(key) >= 3 and key in name.lower()],
        [lowered[name] for name in difflib.get_close_matches(key, list(lowered), n=2)],
    ):
        if 0 < len(candidates) <= _MAX_SUGGESTIONS:
            return candidates
    spelled = [
        name
        for low, name in lowered.items()
        if len(key) >= 2 and low[0] == key[0] and _is_subsequence(key, low)
    ]
    return spelled if len(spelled) <= _MAX_SUGGESTIONS else []


# ----------------------------------------------------------------------------- formatting


def format_value(value: float) -> str:
    """msaccucmp's cell text: six decimals (NaN prints ``nan``, infinities ``inf``/``-inf``)."""
    return f"{float(value):.6f}"


def _std_cell(left_mean: float, left_std: float, right_mean: float, right_std: float) -> str:
    values = [
        0.0 if abs(v) < _STD_FLOOR else v for v in (left_mean, left_std, right_mean, right_std)
    ]
    return "({:.3f};{:.3f}),({:.3f};{:.3f})".format(*values)


def _std_result(x: np.ndarray, y: np.ndarray, fast: bool = False) -> MetricResult:
    stats = _mean_std_fast if fast else _mean_std64
    left_mean, left_std = stats(x)
    right_mean, right_std = stats(y)
    pair = ((left_mean, left_std), (right_mean, right_std))
    return MetricResult(
        "StandardDeviation", None, _std_cell(left_mean, left_std, right_mean, right_std), std=pair
    )


def _mean_std64(values: np.ndarray) -> tuple[float, float]:
    """Population mean and std accumulated in float64: ``np.mean/np.std(dtype=float64)``."""
    with np.errstate(all="ignore"), _quiet():
        mean = np.mean(values, dtype=np.float64)
        std = np.std(values, dtype=np.float64)
    return float(mean), float(std)


_WIDE = [np.empty(0, dtype=np.float64)]


def _mean_std_fast(values: np.ndarray) -> tuple[float, float]:
    """The same two numbers as :func:`_mean_std64` for a non-empty float32 vector, computed
    with the ufunc calls numpy's ``_var`` makes (same reductions, so the same bits) minus its
    Python overhead, in a reused float64 buffer."""
    n = values.size
    if _WIDE[0].size < n:
        _WIDE[0] = np.empty(n, dtype=np.float64)
    wide = _WIDE[0][:n]
    total = np.add.reduce(values, dtype=np.float64)
    mean = total / np.intp(n)
    np.subtract(values, mean, out=wide)
    np.square(wide, out=wide)
    variance = np.add.reduce(wide) / np.intp(n)
    return float(mean), float(np.sqrt(variance))


@contextlib.contextmanager
def _quiet():
    """Silence numpy's RuntimeWarnings (empty means, overflow) like msaccucmp's seterr."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


# ----------------------------------------------------------------------------- public entry


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
            results[name] = _one(name, left, right, is_bool, scalar, left_path, right_path)
    elif kernel_in_use():
        try:
            results = _kernel_metrics(names, left, right, scalar, left_path, right_path)
        except (TypeError, ValueError, BufferError):  # a vector the kernel cannot read
            results = _fused_metrics(names, left, right, scalar, left_path, right_path)
    else:
        results = _fused_metrics(names, left, right, scalar, left_path, right_path)
    return [results[name] for name in names]


class MetricCells(NamedTuple):
    """A tensor pair's metrics as a result row holds them: ``values`` and ``texts`` by name
    (selection order), the CompareFailReason ``messages``, and StandardDeviation's pair."""

    values: dict[str, float | None]
    texts: dict[str, str]
    messages: list[str]
    std: tuple[tuple[float, float], tuple[float, float]] | None


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
    native = kernel_in_use()
    # float16 is widened by the kernel (numpy's exact cast, faster) into the scratch buffers
    # _kernel_cells does not use; only for the kernel: the numpy path works in all three
    scratch = SCRATCH.get(3, max(left.size, right.size)) if native else None
    x, y, is_bool = _flat_pair(
        left, right, left_path, right_path, max_cmp_size, scratch[1:] if scratch else None
    )
    if not is_bool and x.size and native:
        try:
            scratch_x = scratch[0][: x.size]  # type: ignore[index]
            values, texts, messages, std = _kernel_cells(
                x, y, scalar, left_path, right_path, scratch_x
            )
        except (TypeError, ValueError, BufferError):  # a vector the kernel cannot read
            x, y, is_bool = _flat_pair(left, right, left_path, right_path, max_cmp_size)
        else:
            return _chosen(names, values, texts, messages, std)
    results = compute_metrics(
        x, y, names, scalar=scalar, left_path=left_path, right_path=right_path
    )
    std = None
    for result in results:
        if result.std is not None:
            std = result.std
    return MetricCells(
        {r.name: r.value for r in results},
        {r.name: r.text for r in results},
        [r.message for r in results if r.message],
        std,
    )


_ALL = list(ALGORITHMS)


def _chosen(names: list[str], values, texts, messages: dict[str, str], std) -> MetricCells:
    """The kernel's ten values and cells (:data:`ALGORITHMS` order) narrowed to ``names``."""
    if names == _ALL:
        chosen_values = dict(zip(ALGORITHMS, values, strict=True))
        chosen_texts = dict(zip(ALGORITHMS, texts, strict=True))
    else:
        chosen_values = {name: values[_POSITION[name]] for name in names}
        chosen_texts = {name: texts[_POSITION[name]] for name in names}
    notes = [messages[name] for name in names if name in messages] if messages else []
    std = std if "StandardDeviation" in chosen_values else None
    return MetricCells(chosen_values, chosen_texts, notes, std)


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
    if values.dtype == _HALF and values.flags.c_contiguous and _kernel is not None:
        out = buffer[: values.size]
        _kernel.widen_half(values.reshape(-1), out)
        return out
    return np.asarray(values, dtype=np.float32, order="C").reshape(-1)


def _one(
    name: str, x: np.ndarray, y: np.ndarray, is_bool: bool, scalar: bool, lpath: str, rpath: str
) -> MetricResult:
    if is_bool and name not in BOOL_ALGORITHMS:
        return MetricResult(
            name, None, NAN_TEXT, f"Algorithm {name} does not support Boolean types."
        )
    try:
        with np.errstate(all="ignore"), _quiet():
            return _reference_metric(name, x, y, scalar, lpath, rpath)
    except Exception as error:  # msaccucmp turns any failure of one metric into NaN + message
        return MetricResult(
            name, None, NAN_TEXT, f"Failed to execute 'compare' in '{name}'. {error}"
        )


# ----------------------------------------------------------------------------- reference path


def _cosine_zero_message(path: str) -> str:
    return f"Cannot compare by Cosine Similarity. All the data is zero in {path}."


def _cosine_from_norms(nx, ny, scalar: bool, lpath: str, rpath: str) -> MetricResult | None:
    """The early exits of CosineSimilarity, or None when the dot product must be computed."""
    name = "CosineSimilarity"
    if scalar:
        return MetricResult(name, 1.0, format_value(1), "This tensor is scalar.")
    if nx <= _EPS and ny < _EPS:
        return MetricResult(name, 1.0, "1.0")
    if nx**0.5 <= _EPS:  # msaccucmp's norm ** 0.5
        return MetricResult(name, None, NAN_TEXT, _cosine_zero_message(lpath))
    if ny**0.5 <= _EPS:
        return MetricResult(name, None, NAN_TEXT, _cosine_zero_message(rpath))
    return None


def _finish_cosine(total) -> MetricResult:
    value = min(total, 1.0)  # NaN stays NaN: min() keeps its first argument unless 1.0 < it
    return MetricResult("CosineSimilarity", float(value), format_value(value))


def _kl_floor(values: np.ndarray) -> np.ndarray:
    high = values.max()
    low = values.min()
    span = high - low
    scaled = (values - low) / span if span != 0 else values
    return np.maximum(scaled, _EPS32)


def _kl_zero_message(*paths: str) -> str:
    if len(paths) == 2:
        first, second = paths
        return f"Cannot compare by KL Divergence. All the data is zero in {first!r} and {second!r}."
    return f"Cannot compare by KL Divergence. All the data is zero in {paths[0]}."


def _finish_kl(total, rpath: str) -> MetricResult:
    value = total
    if abs(value) < _EPS:
        value = 0.0
    message = ""
    if str(value) == "inf":
        message = f"Cannot compare by KL Divergence. The data contains 0 in {rpath!r}."
    return MetricResult("KullbackLeiblerDivergence", float(value), format_value(value), message)


def _relative_terms(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where(np.abs(y) > _EPS, np.abs(x / y - 1), 0)


def _plain(name: str, value) -> MetricResult:
    return MetricResult(name, float(value), format_value(value))


def _reference_metric(
    name: str, x: np.ndarray, y: np.ndarray, scalar: bool, lpath: str, rpath: str
) -> MetricResult:
    """One metric, written straight from msaccucmp's formula (x = fusion on, y = fusion off)."""
    if name == "CosineSimilarity":
        nx = np.linalg.norm(x, axis=-1, keepdims=True)
        ny = np.linalg.norm(y, axis=-1, keepdims=True)
        early = _cosine_from_norms(nx, ny, scalar, lpath, rpath)
        if early is not None:
            return early
        return _finish_cosine(((x / nx) * (y / ny)).sum())
    if name == "MaxAbsoluteError":
        return _plain(name, np.abs(x - y).max())
    if name == "AccumulatedRelativeError":
        return _plain(name, _relative_terms(x, y).sum())
    if name == "RelativeEuclideanDistance":
        y_square = (y**2).sum()
        ratio = 0.0 if y_square**0.5 <= _EPS else ((x - y) ** 2).sum() / y_square
        return _plain(name, ratio**0.5)
    if name == "KullbackLeiblerDivergence":
        p = _kl_floor(x)
        q = _kl_floor(y)
        p_zero = bool(np.all(p == 0))
        q_zero = bool(np.all(q == 0))
        if p_zero and q_zero:
            return MetricResult(name, None, NAN_TEXT, _kl_zero_message(lpath, rpath))
        if p_zero or q_zero:
            return MetricResult(name, None, NAN_TEXT, _kl_zero_message(lpath if p_zero else rpath))
        p = p / p.sum()
        q = q / q.sum()
        return _finish_kl((p * np.log(p / q)).sum(), rpath)
    if name == "StandardDeviation":
        return _std_result(x, y)
    if name == "MeanAbsoluteError":
        return _plain(name, np.abs(x - y).mean())
    if name == "RootMeanSquareError":
        return _plain(name, np.sqrt(np.average((x - y) ** 2)))
    if name == "MaxRelativeError":
        return _plain(name, _relative_terms(x, y).max())
    if name == "MeanRelativeError":
        return _plain(name, _relative_terms(x, y).mean())
    raise KeyError(name)


# ----------------------------------------------------------------------------- fused path


class _Scratch:
    """Per-process float32 work buffers, grown on demand and reused across tensors."""

    def __init__(self) -> None:
        self._buffers: list[np.ndarray] = []

    def get(self, count: int, n: int) -> list[np.ndarray]:
        if len(self._buffers) < count or self._buffers[0].size < n:
            size = max(n, self._buffers[0].size if self._buffers else 0)
            self._buffers = [np.empty(size, dtype=np.float32) for _ in range(max(count, 3))]
        return [buffer[:n] for buffer in self._buffers[:count]]

    def release_if_larger(self, limit: int) -> None:
        """Drop buffers bigger than ``limit`` elements so one huge tensor does not pin memory."""
        if self._buffers and self._buffers[0].size > limit:
            self._buffers = []
        if _WIDE[0].size > limit:
            _WIDE[0] = np.empty(0, dtype=np.float64)


SCRATCH = _Scratch()


def _mean32(total: np.float32, n: int) -> np.float32:
    """``ndarray.mean()`` of a float32 array from its float32 sum: numpy divides by an ``intp``
    count, which promotes to float64, and rounds the quotient back to float32."""
    return total.dtype.type(float(total) / n)  # the same float64 division, less wrapping


_add = np.add.reduce  # what ndarray.sum() and .mean() call, without their Python wrappers
_max = np.maximum.reduce  # ndarray.max()
_min = np.minimum.reduce  # ndarray.min()


def _fused_metrics(
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
                out["MaxAbsoluteError"] = _plain("MaxAbsoluteError", _max(a))
            if "MeanAbsoluteError" in wanted:
                out["MeanAbsoluteError"] = _plain("MeanAbsoluteError", _mean32(_add(a), n))
            if wanted & {"RelativeEuclideanDistance", "RootMeanSquareError"}:
                np.multiply(a, a, out=b)
                diff_square = _add(b)
                if "RootMeanSquareError" in wanted:
                    out["RootMeanSquareError"] = _plain(
                        "RootMeanSquareError", np.sqrt(_mean32(diff_square, n))
                    )
                if "RelativeEuclideanDistance" in wanted:
                    np.multiply(y, y, out=b)
                    y_square = _add(b)
                    ratio = 0.0 if y_square**0.5 <= _EPS else diff_square / y_square
                    out["RelativeEuclideanDistance"] = _plain(
                        "RelativeEuclideanDistance", ratio**0.5
                    )
        if "CosineSimilarity" in wanted:
            out["CosineSimilarity"] = _fused_cosine(x, y, a, b, y_square, scalar, lpath, rpath)
        if wanted & {"AccumulatedRelativeError", "MaxRelativeError", "MeanRelativeError"}:
            np.divide(x, y, out=a)
            np.subtract(a, 1, out=a)
            np.abs(a, out=a)
            np.abs(y, out=b)
            a[~np.greater(b, _EPS)] = 0  # msaccucmp: where(|y| > eps, term, 0)
            if "AccumulatedRelativeError" in wanted or "MeanRelativeError" in wanted:
                total = _add(a)
                if "AccumulatedRelativeError" in wanted:
                    out["AccumulatedRelativeError"] = _plain("AccumulatedRelativeError", total)
                if "MeanRelativeError" in wanted:
                    out["MeanRelativeError"] = _plain("MeanRelativeError", _mean32(total, n))
            if "MaxRelativeError" in wanted:
                out["MaxRelativeError"] = _plain("MaxRelativeError", _max(a))
        if "KullbackLeiblerDivergence" in wanted:
            out["KullbackLeiblerDivergence"] = _fused_kl(x, y, a, b, c, lpath, rpath)
        if "StandardDeviation" in wanted:
            out["StandardDeviation"] = _std_result(x, y, fast=True)
    return out


def _fused_cosine(
    x: Vec, y: Vec, a: Vec, b: Vec, y_square, scalar: bool, lpath: str, rpath: str
) -> MetricResult:
    if scalar:
        return _cosine_from_norms(None, None, True, lpath, rpath)  # type: ignore[return-value]
    np.multiply(x, x, out=a)
    nx = np.sqrt(_add(a, keepdims=True))
    if y_square is None:
        np.multiply(y, y, out=a)
        y_square = _add(a)
    ny = np.sqrt(np.reshape(y_square, (1,)))  # np.linalg.norm's keepdims shape
    early = _cosine_from_norms(nx, ny, False, lpath, rpath)
    if early is not None:
        return early
    np.divide(x, nx, out=a)
    np.divide(y, ny, out=b)
    np.multiply(a, b, out=a)
    return _finish_cosine(_add(a))


def _fused_kl_floor(values: np.ndarray, out: np.ndarray) -> np.ndarray:
    high = _max(values)
    low = _min(values)
    span = high - low
    if span != 0:
        np.subtract(values, low, out=out)
        np.divide(out, span, out=out)
        np.maximum(out, _EPS32, out=out)
    else:
        np.maximum(values, _EPS32, out=out)
    return out


def _fused_kl(x: Vec, y: Vec, a: Vec, b: Vec, c: Vec, lpath: str, rpath: str) -> MetricResult:
    p = _fused_kl_floor(x, a)
    q = _fused_kl_floor(y, b)
    # msaccucmp's "all the data is zero" checks (see _reference_metric) cannot fire here: after
    # the floor every element is >= float32 eps or NaN, and NaN != 0, so on non-empty vectors
    # they would cost two passes to find nothing.
    np.divide(p, _add(p), out=p)
    np.divide(q, _add(q), out=q)
    np.divide(p, q, out=c)
    np.log(c, out=c)
    np.multiply(p, c, out=c)
    return _finish_kl(_add(c), rpath)


# ----------------------------------------------------------------------------- compiled path

try:
    from . import _kernel  # built by pip install from _kernel.c; optional
except ImportError:  # pragma: no cover - exercised on machines without a C compiler
    _kernel = None

_BUFFER_SIZE = np.getbufsize()  # numpy casts float32 to float64 for a sum in chunks of this
_KERNEL_STATE: list[bool] = []  # [] not yet checked, [True] agreed with numpy, [False] not


NUMPY_ONLY_VARIABLE = "FUSION_SWITCH_METRICS"
"""Set to ``numpy`` to compute every metric with numpy alone (to rule the kernel out)."""


def kernel_in_use() -> bool:
    """Whether metrics come from the compiled kernel: it was built, it is not switched off by
    ``FUSION_SWITCH_METRICS=numpy``, and on first use it gave the numpy path's exact cells on
    :func:`kernel_probe_vectors`, from float32 vectors and from file bytes (``metrics_raw``)."""
    if not _KERNEL_STATE:
        off = os.environ.get(NUMPY_ONLY_VARIABLE, "").lower() == "numpy"
        _KERNEL_STATE.append(_kernel is not None and not off and _kernel_agrees_with_numpy())
    return _KERNEL_STATE[0]


def kernel_probe_vectors() -> list[tuple[np.ndarray, np.ndarray]]:
    """Pairs on which summation order shows: every leaf and split size of numpy's pairwise sum,
    more than one float64 cast chunk, magnitudes from 1e-30 to 1e30, zeros, infinities, NaN.
    Scrambled values, not numpy.random: importing it would add some 4 MB to every process."""
    pairs = []
    for n in (1, 5, 8, 9, 16, 127, 128, 129, 300, 1000, _BUFFER_SIZE + 37):
        for decades in (4, 30):  # finite squares and sums; overflowing ones
            x = _scrambled(n, decades, seed=n).astype(np.float32)
            y = (x * (1 + _scrambled(n, 0, seed=n + 1) * 1e-3)).astype(np.float32)
            pairs.append((x, y))
    x = _scrambled(200, 1, seed=7).astype(np.float32)
    y = x.copy()
    y[::7] = 0
    y[3] = np.inf
    pairs.append((x, y))
    y = x.copy()
    y[11] = np.nan
    pairs.append((x, y))
    pairs.append((np.zeros(40, np.float32), np.full(40, 3, np.float32)))
    return pairs


def _scrambled(n: int, decades: int, seed: int) -> np.ndarray:
    """``n`` float64 values in (-1, 1) times 10**k, k spread over -decades..decades: the
    fractional part of a large multiple of sin, a classic hash, varies in every digit."""
    index = np.arange(n, dtype=np.float64) + seed
    mantissa = np.modf(np.sin(index * 12.9898) * 43758.5453)[0]
    exponent = (np.arange(n) * 7919 + seed) % (2 * decades + 1) - decades
    return mantissa * 10.0**exponent


def _kernel_agrees_with_numpy() -> bool:
    for x, y in kernel_probe_vectors():
        try:
            native = _kernel_metrics(list(ALGORITHMS), x, y, False, "L", "R")
        except Exception:
            return False
        numpy_path = _fused_metrics(list(ALGORITHMS), x, y, False, "L", "R")
        # repr: NaN equals NaN, -0.0 differs from 0.0
        if any(repr(native[name]) != repr(numpy_path[name]) for name in ALGORITHMS):
            return False
    return all(_raw_agrees(x, y) for x, y in kernel_probe_vectors())


def _raw_agrees(x: np.ndarray, y: np.ndarray) -> bool:
    """``metrics_raw`` on the bytes of x and y (unaligned) as float32, float16 and int8, and on
    x laid out in NC1HWC0 blocks, gives ``metrics``' result on the values as numpy casts them."""
    n = x.size
    with np.errstate(all="ignore"):
        for dtype in ("<f4", "<f2", "i1"):
            left, right = x.astype(dtype), y.astype(dtype)
            data = b"?" + left.tobytes() + right.tobytes()
            rest = (np.empty(n, np.float32), n == 1, _BUFFER_SIZE, np.log)
            raw = _kernel.metrics_raw(  # type: ignore[union-attr]
                data, 1, left.dtype.char, data, 1 + left.nbytes, right.dtype.char, n, *rest
            )
            cast = _kernel.metrics(left.astype(np.float32), right.astype(np.float32), *rest)  # type: ignore[union-attr]
            if repr(raw) != repr(cast):
                return False
        if n % 60 == 0:  # N, C, H, W = n/60, 3, 4, 5 in C0 = 16 blocks, 13 channels of padding
            blocks = np.zeros((n // 60, 1, 4, 5, 16), np.float32)
            blocks[:, 0, :, :, :3] = x.reshape(-1, 3, 4, 5).transpose(0, 2, 3, 1)
            shape = (n // 60, 1, 4, 5, 16, 3)
            raw = _kernel.metrics_raw(blocks, 0, "f", y, 0, "f", n, *rest, shape)  # type: ignore[union-attr]
            return repr(raw) == repr(_kernel.metrics(x, y, *rest))  # type: ignore[union-attr]
    return True


_POSITION = {name: index for index, name in enumerate(ALGORITHMS)}


def _kernel_cells(x, y, scalar: bool, lpath: str, rpath: str, scratch=None) -> tuple:
    """Every metric from one kernel call: values and cells in :data:`ALGORITHMS` order, the
    messages by metric name, and the StandardDeviation pair (see ``_kernel.c``)."""
    assert _kernel is not None
    if scratch is None:  # a float32 vector as long as x, for KL's ratio
        (scratch,) = SCRATCH.get(1, x.size)
    with np.errstate(all="ignore"):
        values, texts, cosine_note, kl_inf, std = _kernel.metrics(
            x, y, scratch, scalar, _BUFFER_SIZE, np.log
        )
    return values, texts, _kernel_messages(cosine_note, kl_inf, lpath, rpath), std


def _kernel_messages(cosine_note: int, kl_inf: bool, lpath: str, rpath: str) -> dict[str, str]:
    messages = {}
    if cosine_note:
        messages["CosineSimilarity"] = (
            "This tensor is scalar."
            if cosine_note == 1
            else _cosine_zero_message(lpath if cosine_note == 2 else rpath)
        )
    if kl_inf:
        messages["KullbackLeiblerDivergence"] = (
            f"Cannot compare by KL Divergence. The data contains 0 in {rpath!r}."
        )
    return messages


def _kernel_metrics(
    names: list[str], x: np.ndarray, y: np.ndarray, scalar: bool, lpath: str, rpath: str
) -> dict[str, MetricResult]:
    """:func:`_fused_metrics`' results, from the compiled kernel (:func:`_kernel_cells`)."""
    values, texts, messages, std = _kernel_cells(x, y, scalar, lpath, rpath)
    out = {}
    for name in names:
        at = _POSITION[name]
        pair = std if name == "StandardDeviation" else None
        out[name] = MetricResult(name, values[at], texts[at], messages.get(name, ""), pair)
    return out
