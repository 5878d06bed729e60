"""msaccucmp's ten comparison metrics, same formulas, same numbers, same CSV cells.

One module per concept:

* :mod:`.selection` — the metric names and ``-alg`` (:func:`parse_algorithms`);
* :mod:`.cells` — what a metric becomes in the CSV: cell texts, CompareFailReason messages,
  :class:`MetricResult`, :class:`MetricCells`;
* :mod:`.reference` — each metric written plainly from msaccucmp's formula, every edge case
  (empty, bool, a failing metric): the definition the faster paths are held to;
* :mod:`.fused` — all selected metrics in one numpy sweep with reused scratch buffers, the same
  numpy operations on the same float32 values, so the same bits;
* :mod:`.native` — the compiled kernel (``compare/_kernel.c``): loaded if built, proved against
  :mod:`.fused` on first use (:func:`kernel_in_use`), its entry points (float32 vectors, or two
  tensors still in their dump files' bytes: :func:`cells_from_bytes`);
* :mod:`.compute` — the public entry, :func:`compute_metrics` / :func:`metric_cells`: flatten,
  cast to float32 like msaccucmp, take the fastest path that gives the reference's bits.
"""

from __future__ import annotations

import importlib
from typing import Any

from .cells import NAN_TEXT, MetricCells, MetricResult, format_value
from .selection import (
    ALGORITHMS,
    BOOL_ALGORITHMS,
    AlgorithmSelectionError,
    closest_algorithms,
    parse_algorithms,
)

# Imported on first use: these need numpy (~0.1 s to import), and `compare` reads its graphs and
# dump folders before it needs any of them; it imports numpy while it waits for its helper then.
_LAZY = {
    "SizeMismatchError": ".compute",
    "compute_metrics": ".compute",
    "metric_cells": ".compute",
    "SCRATCH": ".fused",
    "NUMPY_ONLY_VARIABLE": ".native",
    "cells_from_bytes": ".native",
    "kernel_in_use": ".native",
    "kernel_probe_vectors": ".native",
    "release_kernel_buffer": ".native",
    "stored_source": ".native",
    "stored_tensor": ".native",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "ALGORITHMS",
    "BOOL_ALGORITHMS",
    "NAN_TEXT",
    "NUMPY_ONLY_VARIABLE",
    "SCRATCH",
    "AlgorithmSelectionError",
    "MetricCells",
    "MetricResult",
    "SizeMismatchError",
    "cells_from_bytes",
    "closest_algorithms",
    "compute_metrics",
    "format_value",
    "kernel_in_use",
    "kernel_probe_vectors",
    "metric_cells",
    "parse_algorithms",
    "release_kernel_buffer",
    "stored_source",
    "stored_tensor",
]
