"""`compare` judges each chunk's rows as it arrives (issue 16): the attribution at the end
finds them indexed and judged, and gives what it would have given judging them itself."""

from __future__ import annotations

import json

import pytest
from fusion_switch.diagnose import attribution, summary
from fusion_switch.diagnose.thresholds import DEFAULT_THRESHOLDS
from fusion_switch.synth.generator import generate_case


@pytest.mark.parametrize("workers", ["1", "2"])
def test_the_rows_reach_the_attribution_judged(tmp_path, monkeypatch, capsys, workers):
    from fusion_switch.cli import main

    case = generate_case(tmp_path / "case", n_ops=80, seed=3, faults=["dropped_scale"])
    calls = []
    real = attribution.attribute

    def spy(rows, on_graph, **kwargs):
        index = kwargs.get("rows_index")
        thresholds = dict(kwargs.get("thresholds") or DEFAULT_THRESHOLDS)
        calls.append(index is not None and index.indexes(rows, thresholds))
        fed = real(rows, on_graph, **kwargs)
        alone = real(rows, on_graph, **{**kwargs, "rows_index": None})
        assert fed.suspects == alone.suspects and fed.findings == alone.findings
        return fed

    monkeypatch.setattr(summary, "attribute", spy)
    flags = [
        *("compare", "-m", str(case.on_dump), "-g", str(case.off_dump)),
        *("-f", str(case.on_graph), "-cf", str(case.off_graph)),
        *("-out", str(tmp_path / "out"), "--no-progress", "--no-replay", "--workers", workers),
    ]
    status = main(flags)
    assert status == 1, capsys.readouterr().err  # the fault is found
    assert calls == [True]
    found = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert found["suspects"], found["verdict"]
