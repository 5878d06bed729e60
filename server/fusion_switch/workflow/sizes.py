"""Sizes as people type them: ``4G``, ``512M``, ``1048576`` (``--memory-budget`` and the
editor's ``fusionSwitch.compare.memoryBudget`` read them the same way)."""

from __future__ import annotations

import math

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
MINIMUM = 1 << 20


def parse_size(text: str) -> int:
    """Bytes of ``text`` (binary units, an optional trailing B or iB); ValueError saying what
    is wrong otherwise, or when it is under 1M."""
    cleaned = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = cleaned[-1:] if cleaned[-1:] in _UNITS and not cleaned[-1:].isdigit() else ""
    number = cleaned[: len(cleaned) - len(unit)]
    try:
        value = float(number) * _UNITS[unit]
    except ValueError:
        value = math.nan
    if not math.isfinite(value):  # also inf, nan and 1e400, which float() takes
        raise ValueError(f"{text!r} is not a size like 4G or 512M") from None
    if value < MINIMUM:
        raise ValueError(f"{text}: give at least 1M")
    return int(value)
