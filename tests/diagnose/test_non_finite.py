"""NaN and infinity where the other run has none.

- A fused op that writes NaN: every metric of its row skips those values or is NaN itself, so
  without the replay the run said "fusion-on and fusion-off agree within the thresholds" and
  exited 0. The row's StandardDeviation pair shows the side that holds them.
- A fused op whose input dump holds NaN where its producer wrote finite values in the same
  run: the input changed after the producer ran (dumps are taken after an op runs, so the
  fused op may have written over its own input). Its replay on that input agrees with its NaN
  output, which made it "propagates", an error passed on from a clean upstream."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from fusion_switch.diagnose.thresholds import DEFAULT_THRESHOLDS, RowIndex
from fusion_switch.synth import generator
from fusion_switch.synth.generator import generate_case

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from compare_cli import compare_summary


@pytest.fixture
def writes_nan(monkeypatch):
    """b1_conv2's fusion-on kernel writes NaN into its first output values."""
    conv_mul = generator.FUSED_KERNELS["conv2"]

    def nan_writing(nodes, ins, fault):
        outs = conv_mul(nodes, ins, fault)
        if nodes[0].name == "b1_conv2":
            out = outs[0].copy()
            out.reshape(-1)[:8] = np.nan
            outs = [out]
        return outs

    monkeypatch.setitem(generator.FUSED_KERNELS, "conv2", nan_writing)


@pytest.mark.parametrize("replay", [True, False], ids=["replay", "no-replay"])
def test_a_fused_op_writing_nan_is_named_with_or_without_the_replay(tmp_path, writes_nan, replay):
    case = generate_case(tmp_path / "case", faults=[])
    done, summary = compare_summary(case, tmp_path / "out", *([] if replay else ["--no-replay"]))
    (first,) = summary["suspects"][:1]
    assert first["rule"] == "AConv2dMulFusion", summary["suspects"]
    assert first["verdict"] == ("introduces" if replay else "heuristic"), first
    assert done.returncode == 1, done.stdout
    assert "agree within the thresholds" not in done.stdout


class _Row:
    def __init__(self, name: str, std) -> None:
        self.tensor_index = f"{name}:output:0"
        self.metrics = {"CosineSimilarity": math.nan, "MaxAbsoluteError": math.nan}
        self.std = std


@pytest.mark.parametrize(
    ("std", "crossed"),
    [
        (((math.nan, math.nan), (0.3, 0.6)), "NaN or infinity in fusion on only"),
        (((0.3, 0.6), (math.inf, math.nan)), "NaN or infinity in fusion off only"),
        (((math.nan, math.nan), (math.nan, math.nan)), None),  # both runs: no difference
        (None, None),  # StandardDeviation not computed: nothing to tell
    ],
)
def test_a_row_tells_which_run_holds_nan(std, crossed):
    judged = RowIndex(DEFAULT_THRESHOLDS).feed([_Row("op", std)]).judged[("op", "output", 0)]
    if crossed is None:
        assert judged is None
    else:
        assert judged.badness > 1 and judged.crossed == [crossed], judged


@pytest.fixture
def overwritten_input(monkeypatch):
    """b1_conv2's fusion-on run writes NaN over the first values of its activation input
    before computing with it (its input dump then shows them)."""
    conv_mul = generator.FUSED_KERNELS["conv2"]

    def overwriting(nodes, ins, fault):
        conv = nodes[0]
        if conv.name == "b1_conv2":
            ref = conv.inputs[0]
            written = ins[ref].copy()  # the producer's own array (its dump) stays finite
            written.reshape(-1)[:8] = np.nan
            ins[ref] = written
        return conv_mul(nodes, ins, fault)

    monkeypatch.setitem(generator.FUSED_KERNELS, "conv2", overwriting)


def _fused(summary: dict, name: str) -> dict:
    (found,) = (op for op in summary["fused_ops"] if op["op"] == name)
    return found


def test_an_input_written_over_after_its_producer_ran_is_not_passed_on(tmp_path, overwritten_input):
    case = generate_case(tmp_path / "case", faults=[])
    done, summary = compare_summary(case, tmp_path / "out")
    op = _fused(summary, "b1_conv2")
    assert op["verdict"] == "unverified", op
    assert "NaN" in op["reason"] and "after" in op["reason"], op["reason"]
    # downstream, the NaN comes from the producer's own output: passed on, as before
    downstream = [o for o in summary["fused_ops"] if o["order"] > op["order"]]
    assert any(o["verdict"] == "propagates" for o in downstream), downstream
    assert done.returncode == 3, done.stdout
