"""Fusion-on vs fusion-off comparison engine: pairing, metrics, CSV (pure numpy).

Code map (one concept per module):

* msaccucmp-exact core: ``pairing`` (which fusion-off tensor each fusion-on tensor is compared
  with), ``align`` (device layout back to the fusion-off layout), ``metrics/`` (the ten
  metrics, a package: ``selection`` for ``-alg``, ``cells`` for cell texts and messages,
  ``reference`` the formulas, ``fused`` one numpy sweep, ``native`` the compiled kernel
  ``_kernel.c`` and its entry points, ``compute`` the public entry), ``result`` /
  ``result_csv`` (rows and ``result_*.csv``);
* the job, a pipeline of named stages (``engine.run_compare``: ``discover -> pair ->
  load/measure -> write``): ``discover`` (graphs, dump folders, orientation), ``workers``
  (load and measure groups of ops, any process), ``runners`` (here, a process pool, Dask),
  ``engine`` (the pipeline, progress, cancel, streamed CSV).

Inputs come from ``fusion_switch.readers``; verdicts are made by ``fusion_switch.diagnose``,
which imports this package, never the reverse.

Invariant: rows, pairing, shapes, reasons and metric cells equal msaccucmp 26.2's own output
(``tests/compare/test_oracle.py`` runs it). The main names are importable from here; they load
lazily so that importing a reader does not pull in numpy-heavy modules.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "run_compare": "engine",
    "CompareRequest": "engine",
    "CompareOutcome": "engine",
    "CompareCancelled": "engine",
    "CompareInputError": "engine",
    "ResultRow": "result",
    "CompareCounts": "result",
    "ALGORITHMS": "metrics",
    "compute_metrics": "metrics",
    "parse_algorithms": "metrics",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{module}", __name__), name)
