"""An error in channels far smaller than the tensor's largest.

The replay score is ``max|real - replay| / max|replay|``: one channel 1e5 times larger than the
rest hides a 50% error in all the others (5e-6 of the largest value, under float32's floor of
1e-5). The run said "no fused op introduces error" and blamed b1_add1, an op no rule produced,
with exit status 0. A score per output channel, each against its own largest value, sees it.
It cannot prove the rule (values that cancel within a channel raise it for a right kernel too),
so the op is unverified and the run is not proven clean."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from fusion_switch.diagnose.exit_status import exit_status
from fusion_switch.diagnose.noise import CHANNEL_GAIN, channel_axis, channel_score
from fusion_switch.synth import generator
from fusion_switch.synth.generator import generate_case

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from compare_cli import compare_summary


@pytest.fixture
def outlier_channel(network_changed):
    """b1_conv2's output channel 0 is 1e5 times larger than the others (both runs)."""

    def scale(net):
        weight = net.consts["b1_conv2_weight"].copy()
        weight[0] *= np.float32(1e5)
        net.consts["b1_conv2_weight"] = weight

    network_changed(scale)


@pytest.fixture
def small_channels_wrong(monkeypatch):
    """b1_conv2's fusion-on kernel gives 1.5 times the right value in channels 1 and up."""
    conv_mul = generator.FUSED_KERNELS["conv2"]

    def writing(nodes, ins, fault):
        outs = conv_mul(nodes, ins, fault)
        if nodes[0].name == "b1_conv2":
            out = outs[0].copy()
            out[:, 1:] *= np.float32(1.5)
            outs = [out]
        return outs

    monkeypatch.setitem(generator.FUSED_KERNELS, "conv2", writing)


def _op(summary: dict, name: str) -> dict:
    return next(o for o in summary["fused_ops"] if o["op"] == name)


def test_an_error_in_the_small_channels_is_not_called_clean(
    tmp_path, outlier_channel, small_channels_wrong
):
    case = generate_case(tmp_path / "case", faults=[])
    done, summary = compare_summary(case, tmp_path / "out")
    op = _op(summary, "b1_conv2")
    assert op["verdict"] == "unverified", op
    assert "channel" in op["reason"] and "output 0" in op["reason"], op["reason"]
    assert not summary["suspects"] or all(
        s.get("verdict") != "introduces" for s in summary["suspects"]
    ), summary["suspects"]
    assert done.returncode == 3, done.stdout
    assert "no fused op introduces error" not in done.stdout, done.stdout
    rule = next(r for r in summary["rules"] if r["rule"] == "AConv2dMulFusion")
    assert rule["verdict"] == "unverified", rule
    (found,) = summary["channel_disagreements"]
    assert found["op"] == "b1_conv2" and found["output"] == 0 and found["channel"] >= 1, found
    assert found["rules"] == ["AConv2dMulFusion"] and found["score"] > found["tolerance"]
    assert "b1_conv2" in summary["verdict"] and "not proven clean" in summary["verdict"]


def test_a_channel_disagreement_is_not_clean_where_every_row_agrees():
    """Rows that all agree (a small channel's error stays small downstream too) made an
    unverified op exit 0, as custom ops no kernel covers do: this one is evidence against."""
    summary = {
        "verdict": "no replayed fused op introduces error; 1 of 34 fused ops unverified",
        "suspects": [],
        "fused_ops": [{"op": "b1_conv2", "verdict": "unverified"}],
        "counts": {"ops_by_verdict": {"clean": 50}},
    }
    assert exit_status(summary) == 0
    summary["channel_disagreements"] = [{"op": "b1_conv2", "output": 0, "channel": 3}]
    assert exit_status(summary) == 3


def test_a_right_op_with_an_outlier_channel_stays_clean(tmp_path, outlier_channel):
    case = generate_case(tmp_path / "case", faults=[])
    done, summary = compare_summary(case, tmp_path / "out")
    # the generated runs drift apart (their kernels differ): "propagates" is a right op too
    assert _op(summary, "b1_conv2")["verdict"] in ("clean", "propagates"), summary["fused_ops"]
    assert not [o for o in summary["fused_ops"] if o["verdict"] == "unverified"]
    assert done.returncode == 0, done.stdout


@pytest.mark.parametrize(
    ("fmt", "ndim", "axis"),
    [
        ("NCHW", 4, 1),
        ("NCDHW", 5, 1),
        ("NHWC", 4, 3),
        ("NDHWC", 5, 4),
        ("ND", 2, 1),
        ("ND", 3, 2),
        ("ND", 1, None),  # one value per "channel": nothing to add to the whole-tensor score
        ("NCHW", 2, None),  # a desc that does not match the array: no guess
        ("HWCN", 4, None),
        ("", 4, None),
    ],
)
def test_channel_axis_follows_the_host_format(fmt, ndim, axis):
    assert channel_axis(fmt, ndim) == axis


def test_channel_score_judges_each_channel_against_its_own_largest_value():
    replay = np.ones((2, 3, 4, 4))
    replay[:, 0] *= 1e3
    real = replay.copy()
    real[1, 2, 3, 3] *= 1.5  # half of channel 2's own scale
    value, channel = channel_score(real, replay, "DT_FLOAT", 1)
    assert channel == 2
    assert value == pytest.approx(0.5 / 1e-5)
    assert channel_score(replay.copy(), replay, "DT_FLOAT", 1) == (0.0, 0)


def test_a_channel_far_below_the_largest_is_judged_against_a_share_of_the_largest():
    """Values that cancel to almost nothing raise a right kernel's score per channel by their
    own smallness: that gain is bounded by CHANNEL_GAIN."""
    replay = np.ones((1, 2, 4))
    replay[0, 0] *= 1e5
    real = replay.copy()
    real[0, 1] *= 1.5
    value, channel = channel_score(real, replay, "DT_FLOAT", 1)
    assert channel == 1
    assert value == pytest.approx(0.5 / (1e5 / CHANNEL_GAIN) / 1e-5)


def test_channel_score_of_a_channel_below_the_smallest_normal_is_held_to_that_normal():
    """float16 stores values under 2^-14 on a grid of 2^-24: a right kernel's channel of such
    values is off by up to half a step of that grid, many units of its own scale."""
    replay = np.full((1, 2, 4), 1e-6)
    replay[0, 0] = 1.0
    real = replay + 2.0**-25
    value, _ = channel_score(real, replay, "DT_FLOAT16", 1)
    assert value <= 1.0


def test_channel_score_leaves_values_not_finite_on_one_side_to_the_whole_tensor_score():
    replay = np.ones((1, 2, 4))
    real = replay.copy()
    real[0, 1, 0] = np.nan
    assert channel_score(real, replay, "DT_FLOAT", 1) is None


def test_values_not_finite_alike_on_both_sides_leave_the_other_values_judged():
    """A review: one channel infinite in both runs (a mask of -inf) turned the check off, and
    the 50% error of the small channels was "clean" again."""
    replay = np.ones((1, 3, 4))
    replay[0, 0] *= 1e5
    replay[0, 1] = -np.inf
    real = replay.copy()
    real[0, 2] *= 1.5
    value, channel = channel_score(real, replay, "DT_FLOAT", 1)
    assert channel == 2 and value > 100


def test_a_replay_of_zeros_holds_its_channels_to_one():
    """A review: an all-zero replay held its channels to float32's smallest normal, and a
    1e-9 residue scored 8.5e33 where the whole-tensor score (which divides by 1) was 1e-4."""
    replay = np.zeros((1, 2, 4))
    real = replay + 1e-9
    value, _ = channel_score(real, replay, "DT_FLOAT", 1)
    assert value == pytest.approx(1e-9 / (1.0 / CHANNEL_GAIN) / 1e-5)


@pytest.fixture
def outlier_feature(network_changed):
    """b1_mm1's feature 0 is some thousand times the others (float16, both runs)."""

    def scale(net):
        weight = net.consts["b1_mm1_weight"].copy()
        weight[:, 0] *= np.float16(8000)
        net.consts["b1_mm1_weight"] = weight

    network_changed(scale)


def test_a_right_float16_matmul_with_an_outlier_feature_stays_verified(tmp_path, outlier_feature):
    case = generate_case(tmp_path / "case", faults=[])
    done, summary = compare_summary(case, tmp_path / "out")
    assert _op(summary, "b1_mm1b1_gelu")["verdict"] in ("clean", "propagates")
    assert summary["channel_disagreements"] == []
    assert done.returncode == 0, done.stdout


def test_an_error_in_the_small_features_of_a_float16_matmul_is_not_called_clean(
    tmp_path, monkeypatch, outlier_feature
):
    """The float16 path, ND layout (features on the last axis): a 50% error in the features
    next to the outlier is under float16's floor of the tensor's largest value."""
    run_member = generator._run_member

    def running(node, inputs, fault):
        outs = run_member(node, inputs, fault)
        if node.name == "b1_gelu":
            out = outs[0].copy()
            out[..., 1:] *= np.float16(1.5)
            outs = [out]
        return outs

    monkeypatch.setattr(generator, "_run_member", running)
    case = generate_case(tmp_path / "case", faults=[])
    done, summary = compare_summary(case, tmp_path / "out")
    op = _op(summary, "b1_mm1b1_gelu")
    assert op["verdict"] == "unverified" and "channel" in op["reason"], op
    assert [c["op"] for c in summary["channel_disagreements"]] == ["b1_mm1b1_gelu"]
    assert done.returncode == 3, done.stdout
