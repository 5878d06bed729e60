"""Shared helper for the kernel tables: run a kernel through the registry, as the replay does."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest
from fusion_switch.diagnose.kernels import KernelError, lookup
from fusion_switch.readers.graph import Graph, GraphError, load_graph


def run(op: str, inputs, attrs=None, **keywords):
    spec = lookup(op)
    assert spec is not None, f"no kernel registered for {op}"
    arrays = [None if a is None else np.asarray(a, dtype=np.float64) for a in inputs]
    return spec.fn(arrays, **(attrs or {}), **keywords)


def check(op: str, inputs, attrs, expected, *, output: int = 0, **keywords) -> None:
    outs = run(op, inputs, attrs, **keywords)
    got = outs[output]
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, np.asarray(expected, dtype=np.float64), rtol=1e-12, atol=1e-12)


def refuses(op: str, inputs, attrs, names: str, **keywords) -> None:
    """The kernel raises KernelError and the message names ``names``."""
    with pytest.raises(KernelError, match=names):
        run(op, inputs, attrs, **keywords)


DATA = Path(__file__).resolve().parents[2] / "data"  # byte copies of shared/samples (checked)
GRAPH_FILES = sorted((DATA / "real" / "graphs").glob("*")) + sorted(
    (DATA / "graphs").glob("*.json")
)


@functools.cache
def real_graphs() -> tuple[tuple[Path, Graph], ...]:
    """The real sample files that are GE graphs, read once per test session (several MB)."""
    graphs = []
    for path in GRAPH_FILES:
        try:
            graphs.append((path, load_graph(path)))
        except GraphError:
            continue  # not a GE graph (Caffe/TF prototxt, a 1-byte fixture): PROVENANCE.md
    return tuple(graphs)
