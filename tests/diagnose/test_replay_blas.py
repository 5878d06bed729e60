"""The replay holds BLAS at one thread around all it measures (diagnose/kernels/blas.py): its
kernel calls then do not each ask OpenBLAS for the count, and the count it found is restored."""

from __future__ import annotations

import pytest
from fusion_switch.compare.engine import CompareRequest, run_compare
from fusion_switch.diagnose.kernels import blas, registry
from fusion_switch.diagnose.replay_job import replay_outcome
from fusion_switch.synth.generator import generate_case


def test_the_replay_asks_blas_for_its_count_once_and_restores_it(tmp_path, monkeypatch):
    controls = blas._controls()
    if controls is None:
        pytest.skip("numpy's BLAS is not an OpenBLAS found in /proc/self/maps")
    setter, getter = controls
    case = generate_case(tmp_path / "case", n_ops=40, seed=3, graph_text=False)
    request = CompareRequest(
        case.on_dump, case.off_dump, case.on_graph, case.off_graph, tmp_path / "out", workers=1
    )
    outcome = run_compare(request)
    asked, counts = [], []

    def asking():
        asked.append(1)
        return getter()

    monkeypatch.setattr(blas, "_controls", lambda: (setter, asking))
    for spec in list(registry.REGISTRY.values()):  # the count as each kernel is called
        fn = spec.fn

        def counted(inputs, _fn=fn, **given):
            counts.append(getter())
            return _fn(inputs, **given)

        monkeypatch.setitem(registry.REGISTRY, spec.op_type, spec.__class__(
            spec.op_type, counted, spec.attrs, spec.layout_sensitive
        ))  # fmt: skip
    before = getter()
    setter(2)
    try:
        report = replay_outcome(outcome, None, [], workers=1)
        assert getter() == 2
    finally:
        setter(before)
    assert report is not None and len(counts) > 10
    assert set(counts) == {1}
    assert asked == [1]
