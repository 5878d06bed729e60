"""What a metric becomes in the CSV: msaccucmp's cell texts and CompareFailReason messages.

A metric that cannot be computed yields ``MetricResult(value=None, text="NaN")``; a computed NaN
prints as ``nan``, exactly as msaccucmp's ``'{:.6f}'.format`` does. The compiled kernel formats
the same cells in C (``_kernel.c``); its messages are worded here.
"""

from __future__ import annotations

from typing import NamedTuple

NAN_TEXT = "NaN"
STD_FLOOR = 0.001  # |mean| or |std| below this prints as 0

StdPair = tuple[tuple[float, float], tuple[float, float]]


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
    std: StdPair | None = None


class MetricCells(NamedTuple):
    """A tensor pair's metrics as a result row holds them: ``values`` and ``texts`` by name
    (selection order), the CompareFailReason ``messages``, and StandardDeviation's pair."""

    values: dict[str, float | None]
    texts: dict[str, str]
    messages: list[str]
    std: StdPair | None


def format_value(value: float) -> str:
    """msaccucmp's cell text: six decimals (NaN prints ``nan``, infinities ``inf``/``-inf``)."""
    return f"{float(value):.6f}"


def std_cell(left_mean: float, left_std: float, right_mean: float, right_std: float) -> str:
    """StandardDeviation's cell: ``(mean;std),(mean;std)``, three decimals, tiny values as 0."""
    values = [
        0.0 if abs(v) < STD_FLOOR else v for v in (left_mean, left_std, right_mean, right_std)
    ]
    return "({:.3f};{:.3f}),({:.3f};{:.3f})".format(*values)


SCALAR_MESSAGE = "This tensor is scalar."


def cosine_zero_message(path: str) -> str:
    return f"Cannot compare by Cosine Similarity. All the data is zero in {path}."


def kl_zero_message(*paths: str) -> str:
    if len(paths) == 2:
        first, second = paths
        return f"Cannot compare by KL Divergence. All the data is zero in {first!r} and {second!r}."
    return f"Cannot compare by KL Divergence. All the data is zero in {paths[0]}."


def kl_inf_message(rpath: str) -> str:
    return f"Cannot compare by KL Divergence. The data contains 0 in {rpath!r}."
