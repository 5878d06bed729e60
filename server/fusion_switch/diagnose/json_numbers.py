"""Numbers as summary.json holds them: strict JSON, which has no NaN and no infinity.

A script reads them without type checks: NaN is null, an infinity is the largest double
(of its sign), and values are rounded to a few significant digits. Rounding can itself
overflow (the largest double to 4 digits is 1.798e308, beyond it): that too is the largest
double, so nothing reaches the file as null or ``Infinity`` that was a number."""

from __future__ import annotations

import math
import sys

DBL_MAX = sys.float_info.max


def json_number(value: float | None, digits: int = 9) -> float | None:
    """``value`` to ``digits`` significant digits (9: small metrics keep their precision);
    NaN as None, +-inf and what rounds beyond the largest double as +-DBL_MAX."""
    if value is None:
        return None
    value = float(value)
    if math.isnan(value):
        return None
    if not math.isinf(value):
        value = float(f"{value:.{digits}g}")
    return math.copysign(DBL_MAX, value) if math.isinf(value) else value
