"""The range check the replay's rounding made before a numpy cast, frozen as the oracle of the
tests that hold the bit operations to the old cast paths (``test_replay_cpu.py``,
``test_replay_cost.py``). A plain module: imported by a test module inside a running hypothesis
test, a test module's own ``@given`` decorators fail hypothesis's nested-given check."""

from __future__ import annotations

import numpy as np


def normal_range(values: np.ndarray, smallest: float, largest: float) -> bool:
    """Every value is 0 or has a magnitude in [smallest, largest] (a NaN is not)."""
    if values.size == 0:
        return False
    high, low = values.max(), values.min()
    if not (high <= largest and -low <= largest):
        return False
    if low >= smallest or high <= -smallest:
        return True
    magnitude = np.abs(values)
    tiny = magnitude < smallest
    return not tiny.any() or not magnitude[tiny].any()
