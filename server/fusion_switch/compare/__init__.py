"""Fusion-on vs fusion-off comparison engine: dumps, graphs, pairing, metrics, reports (pure numpy).

Code map (one concept per module):

* reading: ``protowire`` / ``dump`` (binary dump files), ``dumpdir`` (dump folders), ``graph`` /
  ``graph_text`` (atc JSON and ``ge_proto_*.txt``), ``dtypes``, ``formats``;
* msaccucmp-exact core: ``pairing`` (which fusion-off tensor each fusion-on tensor is compared
  with), ``align`` (device layout back to the fusion-off layout), ``metrics`` (the ten
  metrics), ``result`` / ``result_csv`` (rows and ``result_*.csv``);
* the job: ``workers`` (compare groups of ops, any process), ``engine`` (``run_compare``:
  inputs, process pool, progress, cancel, CSV);
* on top: attribution, summary, report; ``generator`` builds realistic test cases.

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
