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
def writes_nan(b1_conv2_writes):
    """b1_conv2's fusion-on kernel writes NaN into its first output values."""
    b1_conv2_writes(np.nan)


@pytest.mark.parametrize("replay", [True, False], ids=["replay", "no-replay"])
def test_a_fused_op_writing_nan_is_named_with_or_without_the_replay(tmp_path, writes_nan, replay):
    case = generate_case(tmp_path / "case", faults=[])
    done, summary = compare_summary(case, tmp_path / "out", *([] if replay else ["--no-replay"]))
    (first,) = summary["suspects"][:1]
    assert first["rule"] == "AConv2dMulFusion", summary["suspects"]
    assert first["verdict"] == ("introduces" if replay else "heuristic"), first
    assert done.returncode == 1, done.stdout
    assert "agree within the thresholds" not in done.stdout


@pytest.mark.parametrize("path", ["kernel", "numpy"])
@pytest.mark.parametrize("algorithms", [["0"], ["0", "3", "4"]])
def test_nan_in_one_run_is_seen_whatever_metrics_are_chosen(
    tmp_path, monkeypatch, writes_nan, algorithms, path
):
    """-alg without StandardDeviation dropped the pair the NaN check reads: "agree" again."""
    if path == "numpy":
        monkeypatch.setenv("FUSION_SWITCH_METRICS", "numpy")
    case = generate_case(tmp_path / "case", faults=[])
    done, summary = compare_summary(case, tmp_path / "out", "--no-replay", "-alg", *algorithms)
    assert summary["suspects"][0]["rule"] == "AConv2dMulFusion", summary["verdict"]
    assert done.returncode == 1, done.stdout
    header = next((tmp_path / "out").glob("result_*.csv")).read_text().splitlines()[0]
    assert "StandardDeviation" not in header  # the CSV keeps the metrics chosen


def test_infinity_passed_on_does_not_amplify_downstream(tmp_path, b1_conv2_writes):
    """b1_conv2 writes +inf into 8 values. Without the replay, every op downstream with inf in
    its input and output "amplified" it (inf >= 10 x inf): innocent rules were suspects."""
    b1_conv2_writes(np.inf)
    case = generate_case(tmp_path / "case", faults=[])
    done, summary = compare_summary(case, tmp_path / "out", "--no-replay")
    assert [s["rule"] for s in summary["suspects"]] == ["AConv2dMulFusion"], summary["suspects"]
    assert done.returncode == 1, done.stdout


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


@pytest.mark.parametrize("replay", [True, False], ids=["replay", "no-replay"])
def test_a_fused_output_that_cannot_be_compared_is_not_called_agreeing(
    tmp_path, on_dump_changed, replay
):
    """b1_conv2's output dump holds half the values of fusion off's: its row cannot be
    compared, the replay cannot check it. The run said "every output agrees" (and, without
    the replay, "agree within the thresholds", the rule harmless) and exited 0."""
    on_dump_changed("b1_conv2", "output", 0, lambda v: v[:, :, : v.shape[2] // 2, :].copy())
    case = generate_case(tmp_path / "case", faults=[])
    done, summary = compare_summary(case, tmp_path / "out", *([] if replay else ["--no-replay"]))
    assert summary["unjudged_fused_ops"] == ["b1_conv2"], summary["verdict"]
    assert "agree" not in summary["verdict"] and "not proven clean" in summary["verdict"]
    assert "AConv2dMulFusion" not in summary["harmless_rules"]
    assert done.returncode == 3, done.stdout


@pytest.mark.parametrize("k", [0, 1])
@pytest.mark.parametrize("replay", [True, False], ids=["replay", "no-replay"])
def test_one_output_of_two_that_cannot_be_compared_is_not_called_agreeing(
    tmp_path, on_dump_changed, replay, k
):
    """b1_split (two outputs): output k's dump holds half the values; the other compares
    clean. The op was "clean", its rule harmless, exit 0 (a review)."""
    on_dump_changed("b1_split", "output", k, lambda v: v.reshape(-1)[: v.size // 2].copy())
    case = generate_case(tmp_path / "case", faults=[])
    done, summary = compare_summary(case, tmp_path / "out", *([] if replay else ["--no-replay"]))
    assert summary["unjudged_fused_ops"] == ["b1_split"], summary["verdict"]
    assert "ZSplitDFusionPass" not in str(summary["harmless_rules"])
    assert done.returncode == 3, done.stdout


def test_nan_at_other_positions_in_both_runs_is_not_called_agreeing(
    tmp_path, network_changed, monkeypatch
):
    """The network's input holds NaN (both runs); b1_conv2 moves its NaN by one element.
    Every metric of its row is NaN, both StandardDeviation sides too: nothing judges it."""

    def nan_input(net) -> None:
        x = net.consts["input"].copy()
        x[0, :, 3, 3] = np.nan
        net.consts["input"] = x

    network_changed(nan_input)
    conv_mul = generator.FUSED_KERNELS["conv2"]

    def moving_nan(nodes, ins, fault):
        outs = conv_mul(nodes, ins, fault)
        if nodes[0].name != "b1_conv2":
            return outs
        flat = outs[0].reshape(-1)
        nan = ~np.isfinite(flat)
        moved = np.where(np.roll(nan, 1), np.float32(np.nan), np.where(nan, 0.5, flat))
        return [moved.astype(flat.dtype).reshape(outs[0].shape)]

    monkeypatch.setitem(generator.FUSED_KERNELS, "conv2", moving_nan)
    case = generate_case(tmp_path / "case", faults=[])
    done, summary = compare_summary(case, tmp_path / "out", "--no-replay")
    assert "b1_conv2" in summary["unjudged_fused_ops"], summary["verdict"]
    assert "agree" not in summary["verdict"], summary["verdict"]
    assert done.returncode == 3, done.stdout
