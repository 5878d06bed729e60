"""``judge`` (badness and crossed thresholds of one tensor) against the reading it replaced
(issue 16: it runs for every compared tensor): the same answer for every kind of value a
row's metrics can hold, NaN and infinities, ints, numpy scalars, and every threshold."""

from __future__ import annotations

import itertools
import math

import numpy as np
from fusion_switch.diagnose.thresholds import DEFAULT_THRESHOLDS, Threshold, judge


def _reference(metrics, thresholds):
    worst = None
    crossed = []
    for name, threshold in thresholds.items():
        value = metrics.get(name)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        b = threshold.exceedance(float(value))
        if math.isnan(b):
            continue
        worst = b if worst is None else max(worst, b)
        if b > 1.0:
            crossed.append(threshold.describe(float(value)))
    return worst, crossed


VALUES = [
    None,
    math.nan,
    math.inf,
    -math.inf,
    0.0,
    -0.0,
    1.0,
    0.99,
    0.5,
    1.5,
    1e-9,
    1e300,
    2,
    0,
    np.float32(0.98),
    np.float64(math.nan),
    np.float16(2.0),
]

EXTRA = {
    **DEFAULT_THRESHOLDS,
    "CosineSimilarity": Threshold("CosineSimilarity", 1.0, True),  # no gap: 0 or inf
    "RootMeanSquareError": Threshold("RootMeanSquareError", 0.0, False),
}


def test_every_value_against_every_threshold():
    names = list(DEFAULT_THRESHOLDS)
    for thresholds in (DEFAULT_THRESHOLDS, EXTRA):
        for first, second in itertools.product(VALUES, repeat=2):
            for a, b in itertools.combinations(names, 2):
                metrics = {a: first, b: second, "MaxAbsoluteError": 3.0}
                assert judge(metrics, thresholds) == _reference(metrics, thresholds), metrics


def test_ties_and_order_of_crossed_thresholds():
    metrics = {name: 1e6 for name in DEFAULT_THRESHOLDS} | {"CosineSimilarity": -1.0}
    worst, crossed = judge(metrics, DEFAULT_THRESHOLDS)
    assert (worst, crossed) == _reference(metrics, DEFAULT_THRESHOLDS)
    assert len(crossed) == len(DEFAULT_THRESHOLDS)
