"""Variants that fit the output by coincidence prove no pass (a review of the localisation,
forty-first round: each case below proved the innocent graph pass and cleared the UB pass
that went wrong).

- An epsilon variant scales each channel by about the same factor: it "explained" a UB tail's
  constant 4.6% low. A scale of the whole output can come from any op of the chain, so it
  names none; and a variant the output contradicts in one channel explains nothing.
- An axis variant over an axis of size 1 makes a Softmax all ones, a LogSoftmax all zeros: it
  "explained" a UB Mul that left out its gate. It is no other legal axis and is not tried;
  a binary op skipped may pass either of its inputs through.
- An output holding one value is explained by whatever makes it constant: no proof.
- A Transpose's perm on a square tensor is what any later op writing its tile in the other
  order gives: its owners share the blame.
"""

from __future__ import annotations

import numpy as np
import pytest
from localise_support import localised

UB_SCALE = 0.954  # the UB kernel's Mul constant, 4.6% low


def _bn_mul_relu(quiet_channel: bool, variances: tuple[float, float] = (0.95, 1.05)):
    rng = np.random.default_rng(1)
    channels = 8
    variance, gamma = rng.uniform(*variances, channels), rng.uniform(0.5, 1.5, channels)
    if quiet_channel:  # a trained net's quiet channel: ~0.1% of the tensor's largest value
        variance[0], gamma[0] = 1e-3, 5e-5
    data = {
        "x": rng.standard_normal((2, channels, 4, 4)) + 2.0,
        "c_g": gamma,
        "c_b": np.zeros(channels),
        "c_m": np.zeros(channels),
        "c_v": variance,
        "c_k": rng.uniform(1.5, 2.5, (1, channels, 1, 1)),
    }
    bn = {"epsilon": 1e-5, "data_format": "NCHW", "is_training": False}
    spec = [
        ("bn", "BatchNorm", ["x:0", "c_g:0", "c_b:0", "c_m:0", "c_v:0"], bn),
        ("scale", "Mul", ["bn:0", "c_k:0"], {}),
        ("relu", "Relu", ["scale:0"], {}),
    ]
    return spec, data


BN_PASSES = {
    "pass_name": ["ConvBatchnormFusionPass", "TbeMulReluUb"],
    "pass_name_ub": "TbeMulReluUb",
}


@pytest.mark.parametrize(
    ("quiet_channel", "tail"),
    [(False, []), (True, []), (False, [("cast", "Cast", ["relu:0"], {"dst_type": 1})])],
)
def test_a_scale_of_the_whole_output_names_no_pass(quiet_channel: bool, tail: list) -> None:
    """A second review: a float Cast after the tail keeps a multiple a multiple; counted as
    breaking it, only the Cast could scale the output and the epsilon variant named its pass
    again. A scale the output fits stays a candidate beside any variant that explains it."""
    spec, data = _bn_mul_relu(quiet_channel)
    spec = spec + tail

    def ub_constant_low(v):  # the UB pass's Mul is wrong; the BatchNorm (graph pass) is right
        return np.maximum(v["bn"] * (data["c_k"] * UB_SCALE), 0)

    result, verdicts = localised(
        spec, data, BN_PASSES, ub_constant_low, dtype="DT_FLOAT16", off_noise={"bn": 1.5e-3}
    )
    assert result.verdict == "introduces"  # the fused op is proven wrong...
    assert "guilty" not in result.localisation, result.localisation  # ...by no one pass
    assert set(result.localisation["undecided"]) == {"ConvBatchnormFusionPass", "TbeMulReluUb"}
    assert verdicts["ConvBatchnormFusionPass"] != "introduces", verdicts


def test_a_variant_contradicted_in_one_channel_explains_nothing() -> None:
    """Variances far apart: no one scale fits the output, and the epsilon variant fits it but
    in channel 0, which holds 0.954 of its right values in the output and 0.10 in the variant."""
    spec, data = _bn_mul_relu(quiet_channel=True, variances=(0.5, 2.0))
    variance = data["c_v"].reshape(1, -1, 1, 1)
    ratio = np.sqrt((variance + 1e-5) / (variance + 0.1))  # epsilon 0.1 against 1e-5

    def epsilon_like_but_not_in_channel_0(v):  # fits the variant but in the quiet channel
        out = np.maximum(v["bn"] * ratio * data["c_k"], 0)
        out[:, 0] = np.maximum(v["bn"][:, 0] * data["c_k"][0, 0] * UB_SCALE, 0)
        return out

    result, verdicts = localised(
        spec,
        data,
        BN_PASSES,
        epsilon_like_but_not_in_channel_0,
        dtype="DT_FLOAT16",
        off_noise={"bn": 1.5e-3},
        layout="NCHW",
    )
    assert result.verdict == "introduces"
    explained = result.localisation.get("explained_by", [])
    assert all(e["variant"] != "epsilon 0.1" for e in explained), result.localisation
    assert verdicts["ConvBatchnormFusionPass"] != "introduces", verdicts


SOFTMAX_PASSES = {
    "pass_name": ["ASoftmaxFusionPass", "TbeSoftmaxMulUb"],
    "pass_name_ub": "TbeSoftmaxMulUb",
}


@pytest.mark.parametrize("dtype", ["DT_FLOAT", "DT_FLOAT16"])
@pytest.mark.parametrize("order", [["sm:0", "v:0"], ["v:0", "sm:0"]])
def test_an_axis_of_size_one_is_no_variant_and_a_skip_passes_either_input(order, dtype) -> None:
    """Batch 1: softmax over the batch axis gives ones, which the gate Mul left out gives too.
    The Mul skipped explains it, whichever its operand order; so does a softmax that wrote the
    identity (ones) in the gate: its pass shares the blame (a second review)."""
    rng = np.random.default_rng(3)
    data = {"logits": rng.standard_normal((1, 16)) * 2, "v": rng.standard_normal((1, 16)) + 1}
    spec = [("sm", "SoftmaxV2", ["logits:0"], {"axes": [-1]}), ("mul", "Mul", order, {})]
    result, verdicts = localised(spec, data, SOFTMAX_PASSES, lambda v: v["v"], dtype=dtype)
    assert set(result.localisation["undecided"]) == {"TbeSoftmaxMulUb", "ASoftmaxFusionPass"}
    assert "introduces" not in verdicts.values(), verdicts
    assert [e["original_op"] for e in result.localisation["explained_by"]] == ["mul"]


@pytest.mark.parametrize("order", [["bn:0", "r:0"], ["r:0", "bn:0"]])
def test_an_operand_skipped_is_shared_with_the_ops_that_made_the_other_one(order) -> None:
    """A second review: the BatchNorm (graph pass) wrote zeros, so the output is relu(r):
    "the Add skipped, its output = r" fits bit for bit, and proved the UB pass."""
    rng = np.random.default_rng(1)
    channels = 8
    data = {
        "x": rng.standard_normal((2, channels, 4, 4)) + 2.0,
        "r": rng.standard_normal((2, channels, 4, 4)),
        "c_g": rng.uniform(0.5, 1.5, channels),
        "c_b": np.zeros(channels),
        "c_m": np.zeros(channels),
        "c_v": rng.uniform(0.95, 1.05, channels),
    }
    bn = {"epsilon": 1e-5, "data_format": "NCHW", "is_training": False}
    spec = [
        ("bn", "BatchNorm", ["x:0", "c_g:0", "c_b:0", "c_m:0", "c_v:0"], bn),
        ("add", "Add", order, {}),
        ("relu", "Relu", ["add:0"], {}),
    ]
    passes = {
        "pass_name": ["ConvBatchnormFusionPass", "TbeAddReluUb"],
        "pass_name_ub": "TbeAddReluUb",
    }
    bn_wrote_zeros = lambda v: np.maximum(v["r"], 0)  # noqa: E731
    result, verdicts = localised(spec, data, passes, bn_wrote_zeros, dtype="DT_FLOAT16")
    assert set(result.localisation["undecided"]) == {"ConvBatchnormFusionPass", "TbeAddReluUb"}
    assert "introduces" not in verdicts.values(), verdicts


@pytest.mark.parametrize("dtype", ["DT_FLOAT", "DT_FLOAT16"])
def test_an_output_of_one_value_proves_no_pass(dtype: str) -> None:
    rng = np.random.default_rng(5)
    data = {"x": rng.standard_normal((1, 32)) * 2}
    spec = [
        ("ls", "LogSoftmaxV2", ["x:0"], {"axes": [-1]}),
        ("neg", "Muls", ["ls:0"], {"value": -1.0}),
    ]
    passes = {"pass_name": ["ALogSoftmaxGraphPass", "TbeMulsUb"], "pass_name_ub": "TbeMulsUb"}
    zeros = lambda v: np.zeros_like(v["neg"])  # noqa: E731 - a buffer never written
    result, verdicts = localised(spec, data, passes, zeros, dtype=dtype)
    assert result.verdict == "introduces"
    assert "guilty" not in result.localisation, result.localisation
    assert not any(v == "introduces" for v in verdicts.values()), verdicts


def test_a_permutation_is_shared_with_the_ops_after_it() -> None:
    """On a square tensor "the Transpose dropped" and "the Relu wrote its tile transposed"
    give the same bits."""
    x = np.random.default_rng(0).standard_normal((8, 8)) * 3
    spec = [("tr", "TransposeD", ["x:0"], {"perm": [1, 0]}), ("relu", "Relu", ["tr:0"], {})]
    passes = {"pass_name": ["TransposeGraphPass", "TbeReluUb"], "pass_name_ub": "TbeReluUb"}
    result, verdicts = localised(spec, {"x": x}, passes, lambda v: np.maximum(v["tr"], 0).T)
    assert "guilty" not in result.localisation, result.localisation
    assert set(result.localisation["undecided"]) == {"TransposeGraphPass", "TbeReluUb"}
    assert verdicts["TransposeGraphPass"] != "introduces", verdicts
