"""The localisation names one pass only where the evidence tells the passes apart (a review of
it, fortieth round of issue 16). Each case was a false proof: one pass "introduces", the one
that went wrong "clean"."""

from __future__ import annotations

import numpy as np
from localise_support import localised

RNG = np.random.default_rng(1)
X, RES = RNG.standard_normal((4, 16)), RNG.standard_normal((4, 8)) + 1.0
W, B = RNG.standard_normal((16, 8)), RNG.uniform(0.5, 1.5, 8)
DATA = {"x": X, "res": RES, "c_w": W, "c_b": B}


def _mm_bias_relu(bias_type: str) -> list:
    """MatMul -> a bias (``Add`` as TF and ONNX write it, or ``BiasAdd``) -> Relu."""
    return [
        ("mm", "MatMul", ["x:0", "c_w:0"], {}),
        ("bias", bias_type, ["mm:0", "c_b:0"], {}),
        ("relu", "Relu", ["bias:0"], {}),
    ]


def _passes(graph_rule: str, ub_rule: str) -> dict:
    """A graph pass then a UB pass, the UB one also in ``pass_name_ub``."""
    return {"pass_name": [graph_rule, ub_rule], "pass_name_ub": ub_rule}


def _undecided(verdicts: dict, *rules: str) -> bool:
    return all(verdicts[r] == "undecided" for r in rules) and "introduces" not in verdicts.values()


def test_a_bias_add_the_graph_pass_folded_is_not_the_ub_pass_s():
    """MatMulBiasAddFusionPass folds MatMul + Add (a bias as TF and ONNX graphs write it), the
    UB pass adds the Relu; the graph pass dropped the bias, and the UB pass was proven."""
    passes = _passes("MatMulBiasAddFusionPass", "TbeMatmulReluUb")
    result, verdicts = localised(
        _mm_bias_relu("Add"), DATA, passes, lambda v: np.maximum(v["mm"], 0)
    )
    assert result.verdict == "introduces"
    assert _undecided(verdicts, "MatMulBiasAddFusionPass", "TbeMatmulReluUb"), verdicts


def test_a_scale_a_graph_rule_s_pattern_names_is_not_the_ub_pass_s():
    """AConv2dMulFusion's catalogue pattern names Mul: it may have folded the scale."""
    conv = {"strides": [1, 1, 1, 1], "pads": [1, 1, 1, 1], "dilations": [1, 1, 1, 1]}
    spec = [
        ("conv", "Conv2D", ["x:0", "c_w:0"], {**conv, "data_format": "NCHW"}),
        ("scale", "Mul", ["conv:0", "c_k:0"], {}),
        ("relu", "Relu", ["scale:0"], {}),
    ]
    data = {
        "x": RNG.standard_normal((1, 3, 6, 6)),
        "c_w": RNG.standard_normal((4, 3, 3, 3)),
        "c_k": np.full((1, 4, 1, 1), 2.5),
    }
    passes = _passes("AConv2dMulFusion", "TbeConvReluUb")
    _, verdicts = localised(spec, data, passes, lambda v: np.maximum(v["conv"], 0))
    assert _undecided(verdicts, "AConv2dMulFusion", "TbeConvReluUb"), verdicts


def test_an_activation_tail_stays_the_ub_pass_s():
    """What the split still proves: a Relu no graph pass folds, dropped by the UB pass."""
    passes = _passes("MatMulBiasAddFusionPass", "TbeMatmulReluUb")
    _, verdicts = localised(_mm_bias_relu("BiasAdd"), DATA, passes, lambda v: v["bias"])
    assert verdicts == {"TbeMatmulReluUb": "introduces", "MatMulBiasAddFusionPass": "clean"}


def test_a_ub_pass_that_absorbed_a_residual_add_is_a_candidate():
    """The UB pass absorbed AddV2 only (a type the tail did not know): it was no candidate,
    and the graph pass was proven without a variant run."""
    spec = [
        ("mm", "MatMul", ["x:0", "c_w:0"], {}),
        ("bias", "BiasAdd", ["mm:0", "c_b:0"], {}),
        ("add", "AddV2", ["bias:0", "res:0"], {}),
    ]
    passes = _passes("MatMulBiasAddFusionPass", "TbeMatmulAddUb")
    result, verdicts = localised(spec, DATA, passes, lambda v: v["bias"])
    assert result.localisation.get("method") != "one pass built every original op"
    assert verdicts["MatMulBiasAddFusionPass"] != "introduces", verdicts


def test_a_single_op_ub_compile_shares_the_op():
    """SoftmaxV2 by SoftmaxFusionPass, compiled by a single-op UB pass too: either may be what
    went wrong, and no variant was run before SoftmaxFusionPass was proven."""
    x = RNG.standard_normal((4, 16)) * 3
    spec = [("softmax", "SoftmaxV2", ["x:0"], {"axes": [-1]})]
    passes = {
        "pass_name": ["SoftmaxFusionPass"],
        "_single_op_ub_pass_name": "TbeReduceElemwiseFusionPass",
    }

    def wrong(v):
        out = v["softmax"]
        return out * (1 + 0.01 * np.sin(np.arange(out.size)).reshape(out.shape))

    _, verdicts = localised(spec, {"x": x}, passes, wrong)
    assert _undecided(verdicts, "SoftmaxFusionPass", "TbeReduceElemwiseFusionPass"), verdicts


def test_two_ub_passes_share_the_tail():
    """pass_name [G, U1, U2], pass_name_ub U2: U1 was taken for a graph pass, and U1's Add
    dropped was proven U2's."""
    spec = [
        ("mm", "MatMul", ["x:0", "c_w:0"], {}),
        ("bias", "BiasAdd", ["mm:0", "c_b:0"], {}),
        ("add", "Add", ["bias:0", "res:0"], {}),
        ("relu", "Relu", ["add:0"], {}),
    ]
    rules = ["MatMulBiasAddFusionPass", "TbeEltwiseUbU1", "TbeReluUbU2"]
    table = {
        "MatMulBiasAddFusionPass": {"section": "GraphFusion", "effect_times": 1},
        "TbeEltwiseUbU1": {"section": "UBFusion", "effect_times": 1},
        "TbeReluUbU2": {"section": "UBFusion", "effect_times": 1},
    }
    passes = {"pass_name": rules, "pass_name_ub": "TbeReluUbU2"}
    _, verdicts = localised(spec, DATA, passes, lambda v: np.maximum(v["bias"], 0), table)
    assert verdicts["TbeReluUbU2"] != "introduces" and verdicts["TbeEltwiseUbU1"] != "clean"


def test_a_variant_that_only_nudges_the_score_under_the_tolerance_explains_nothing():
    """The UB pass's Mul constant is off by 1.3e-5 (score 1.3, tolerance 1); the BatchNorm's
    epsilon 0 variant moved the score to 0.8 and proved the graph pass."""
    x = RNG.standard_normal((2, 4, 3, 3)) + 2.0
    bn = {"epsilon": 1e-5, "data_format": "NCHW", "is_training": False}
    spec = [
        ("bn", "BatchNorm", ["x:0", "c_g:0", "c_b:0", "c_m:0", "c_v:0"], bn),
        ("scale", "Mul", ["bn:0", "c_k:0"], {}),
        ("relu", "Relu", ["scale:0"], {}),
    ]
    data = {
        "x": x,
        "c_g": RNG.uniform(0.5, 1.5, 4),
        "c_b": np.zeros(4),
        "c_m": np.zeros(4),
        "c_v": np.ones(4),
        "c_k": np.full((1, 4, 1, 1), 2.0),
    }
    passes = _passes("BatchNormGraphPass", "TbeMulReluUb")
    result, verdicts = localised(
        spec, data, passes, lambda v: np.maximum(v["bn"] * (2.0 * (1 + 1.3e-5)), 0)
    )
    assert result.verdict == "introduces" and result.score < 10 * result.tolerance
    assert verdicts["BatchNormGraphPass"] != "introduces", (verdicts, result.localisation)
