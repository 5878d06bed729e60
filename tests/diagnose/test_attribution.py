"""Attribution: blame the fused op that introduces error, not the loudest one downstream."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pytest
from fusion_switch.compare.engine import CompareRequest, run_compare
from fusion_switch.diagnose.attribution import _verdict, attribute, load_fusion_result
from fusion_switch.diagnose.thresholds import (
    DEFAULT_THRESHOLDS,
    TensorEvidence,
    judge,
    parse_thresholds,
)
from fusion_switch.synth.faults import FAULT_KINDS
from fusion_switch.synth.generator import generate_case

GOOD = {
    "CosineSimilarity": 0.99999,
    "RelativeEuclideanDistance": 0.001,
    "KullbackLeiblerDivergence": 0.0,
    "RootMeanSquareError": 0.001,
    "MeanRelativeError": 0.001,
}


def bad(**changes: float) -> dict:
    return {**GOOD, **changes}


@dataclass
class Row:
    npu_dump: str
    tensor_index: str
    metrics: dict


@dataclass
class Op:
    name: str
    type: str = "Conv2D"
    inputs: list[str] = field(default_factory=list)
    passes: list[str] = field(default_factory=list)
    ub: list[str] = field(default_factory=list)
    originals: list[str] = field(default_factory=list)
    attrs: dict = field(default_factory=dict)

    @property
    def data_inputs(self) -> list[str]:
        return self.inputs

    @property
    def pass_names(self) -> list[str]:
        return list(dict.fromkeys(self.passes + self.ub))

    @property
    def ub_pass_names(self) -> list[str]:
        return self.ub

    @property
    def original_names(self) -> list[str]:
        return self.originals or [self.name]


@dataclass
class Graph:
    ops: list[Op]


def rows_for(op: str, inputs: list[dict | None], outputs: list[dict]) -> list[Row]:
    rows = []
    for i, m in enumerate(inputs):
        rows.append(Row(op, f"{op}:input:{i}", m or dict.fromkeys(GOOD, math.nan)))
    rows.extend(Row(op, f"{op}:output:{i}", m) for i, m in enumerate(outputs))
    return rows


# ---------------------------------------------------------------------------------- judging


@pytest.mark.parametrize(
    ("metrics", "expected_bad", "crossed_names"),
    [
        (GOOD, False, []),
        (bad(CosineSimilarity=0.98), True, ["CosineSimilarity"]),
        # dropped scale: cosine stays 1.0, the distance explodes
        (
            bad(CosineSimilarity=1.0, RelativeEuclideanDistance=7.0),
            True,
            ["RelativeEuclideanDistance"],
        ),
        (bad(KullbackLeiblerDivergence=0.01), True, ["KullbackLeiblerDivergence"]),
        (
            bad(RootMeanSquareError=2.0, MeanRelativeError=3.0),
            True,
            ["RootMeanSquareError", "MeanRelativeError"],
        ),
        # NaN / missing metrics are ignored, not counted as agreement or failure
        (
            bad(CosineSimilarity=math.nan, RelativeEuclideanDistance=0.2),
            True,
            ["RelativeEuclideanDistance"],
        ),
        (bad(RelativeEuclideanDistance=math.inf), True, ["RelativeEuclideanDistance"]),
    ],
)
def test_judge_flags_any_metric_outside_its_band(metrics, expected_bad, crossed_names):
    badness, crossed = judge(metrics, DEFAULT_THRESHOLDS)
    assert (badness > 1) is expected_bad
    assert [c.split()[0] for c in crossed] == crossed_names


def test_judge_without_numbers_is_unknown():
    assert judge(dict.fromkeys(GOOD, math.nan), DEFAULT_THRESHOLDS) == (None, [])
    assert judge({}, DEFAULT_THRESHOLDS) == (None, [])


def test_threshold_boundary_is_in_band():
    badness, crossed = judge(
        bad(CosineSimilarity=0.99, RelativeEuclideanDistance=0.05), DEFAULT_THRESHOLDS
    )
    assert badness == pytest.approx(1.0) and crossed == []


@pytest.mark.parametrize(
    ("items", "metric", "limit"),
    [
        (["cos=0.999"], "CosineSimilarity", 0.999),
        (["RelativeEuclideanDistance=0.1"], "RelativeEuclideanDistance", 0.1),
        (["KL=0.5"], "KullbackLeiblerDivergence", 0.5),
        (["mae=0.2"], "MeanAbsoluteError", 0.2),
    ],
)
def test_thresholds_can_be_overridden(items, metric, limit):
    thresholds = parse_thresholds(items)
    assert thresholds[metric].limit == limit
    assert len(thresholds) >= len(DEFAULT_THRESHOLDS)


def test_threshold_can_be_switched_off():
    assert "KullbackLeiblerDivergence" not in parse_thresholds(["kl=off"])


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("cos", "expected NAME=VALUE"),
        ("speed=3", "expected NAME=VALUE with NAME one of CosineSimilarity"),
        ("red=abc", "'abc' is not a number"),
        ("red=nan", "must be finite"),
    ],
)
def test_bad_thresholds_are_explained(item, message):
    with pytest.raises(ValueError, match=message):
        parse_thresholds([item])


# ---------------------------------------------------------------- blame on hand-made rows


def chain_graph() -> Graph:
    """a (RuleA) -> b (RuleB, built from 2 passes) -> c (RuleC) -> d (no rule)."""
    return Graph(
        [
            Op("a", inputs=["data:0"], passes=["RuleA"], originals=["a1", "a2"]),
            Op(
                "b",
                inputs=["a:0"],
                passes=["RuleB", "TbeEltwiseFusionPass"],
                ub=["TbeEltwiseFusionPass"],
                originals=["b1", "b2"],
            ),
            Op("c", inputs=["b:0"], passes=["RuleC"]),
            Op("d", type="Add", inputs=["c:0"]),
        ]
    )


def test_the_op_that_introduces_error_is_blamed_not_the_loudest():
    rows = [
        *rows_for("a", [GOOD], [GOOD]),
        *rows_for("b", [GOOD], [bad(CosineSimilarity=0.95)]),
        # downstream the error grows, but it only propagates
        *rows_for("c", [bad(CosineSimilarity=0.95)], [bad(CosineSimilarity=0.5)]),
        *rows_for("d", [bad(CosineSimilarity=0.5)], [bad(CosineSimilarity=0.2)]),
    ]
    result = attribute(rows, chain_graph())
    verdicts = {f.op: f.verdict for f in result.findings}
    assert verdicts == {"a": "clean", "b": "introduces", "c": "propagates", "d": "propagates"}
    assert [s.rule for s in result.suspects] == ["TbeEltwiseFusionPass", "RuleB"]
    top = result.suspects[0]
    assert top.section == "UBFusion" and top.section_source == "pass_name_ub"
    assert result.suspects[1].section == "GraphFusion"
    assert top.ops == ["b"] and top.original_ops == ["b1", "b2"]
    assert top.co_rules == ["RuleB"]
    assert [h["rule"] for h in result.harmless_rules] == ["RuleA"]
    assert [d["rule"] for d in result.downstream_only_rules] == ["RuleC"]
    assert result.unattributed == []


def test_dropped_scale_is_caught_although_cosine_is_perfect():
    rows = [
        *rows_for(
            "a",
            [GOOD],
            [bad(CosineSimilarity=1.0, RelativeEuclideanDistance=7.0, MeanRelativeError=7.0)],
        ),
        *rows_for(
            "b",
            [bad(CosineSimilarity=1.0, RelativeEuclideanDistance=7.0)],
            [bad(CosineSimilarity=0.9, RelativeEuclideanDistance=0.6)],
        ),
    ]
    result = attribute(rows, chain_graph())
    assert result.suspects[0].rule == "RuleA"
    assert any(
        "RelativeEuclideanDistance 7" in c
        for c in result.suspects[0].evidence[0].outputs[0].crossed
    )
    # b mixes the scaled tensor: its cosine drops, but that is not a new fault
    assert {f.op: f.verdict for f in result.findings}["b"] == "propagates"


def test_drift_that_just_crosses_the_band_is_not_blamed():
    rows = [
        *rows_for("a", [GOOD], [bad(RelativeEuclideanDistance=0.045)]),
        *rows_for(
            "b", [bad(RelativeEuclideanDistance=0.045)], [bad(RelativeEuclideanDistance=0.06)]
        ),
    ]
    result = attribute(rows, chain_graph())
    assert {f.op: f.verdict for f in result.findings}["b"] == "propagates"
    assert result.suspects == []


def test_a_second_fault_downstream_amplifies():
    rows = [
        *rows_for("a", [GOOD], [bad(CosineSimilarity=0.98, RelativeEuclideanDistance=0.06)]),
        *rows_for(
            "b",
            [bad(CosineSimilarity=0.98, RelativeEuclideanDistance=0.06)],
            [bad(CosineSimilarity=0.5, RelativeEuclideanDistance=0.9)],
        ),
    ]
    result = attribute(rows, chain_graph())
    verdicts = {f.op: f.verdict for f in result.findings}
    assert verdicts["a"] == "introduces" and verdicts["b"] == "amplifies"
    # both causes are named; the larger jump (b: cosine 0.98 -> 0.5) ranks first
    assert [s.rule for s in result.suspects] == ["TbeEltwiseFusionPass", "RuleB", "RuleA"]
    scores = [s.score for s in result.suspects]
    assert scores == sorted(scores, reverse=True) and scores[-1] > 0


def test_inputs_msaccucmp_could_not_pair_are_judged_from_the_producer():
    graph = Graph(
        [
            Op("a", inputs=["data:0"], passes=["RuleA"]),
            Op("trans_TransData_0", type="TransData", inputs=["a:0"]),
            Op("b", inputs=["trans_TransData_0:0"], passes=["RuleB"]),
        ]
    )
    bad_a = bad(CosineSimilarity=0.7)
    rows = [
        *rows_for("a", [GOOD], [bad_a]),
        *rows_for("b", [None], [bad(CosineSimilarity=0.6)]),  # input row: NaN, unpaired
    ]
    result = attribute(rows, graph)
    b = next(f for f in result.findings if f.op == "b")
    assert b.inputs[0].via == "a:output:0"
    assert b.verdict == "propagates"
    assert [s.rule for s in result.suspects] == ["RuleA"]


def test_a_rule_that_also_fires_on_clean_ops_ranks_below_the_specific_one():
    graph = Graph(
        [
            Op("x", inputs=["data:0"], passes=["UbRule"], ub=["UbRule"]),
            Op("y", inputs=["x:0"], passes=["GraphRule", "UbRule"], ub=["UbRule"]),
        ]
    )
    rows = [
        *rows_for("x", [GOOD], [GOOD]),
        *rows_for("y", [GOOD], [bad(CosineSimilarity=0.5)]),
    ]
    result = attribute(rows, graph)
    assert [(s.rule, s.share) for s in result.suspects] == [("GraphRule", 1.0), ("UbRule", 0.5)]


def test_ops_without_a_rule_that_introduce_error_are_reported_apart():
    rows = [*rows_for("d", [GOOD], [bad(CosineSimilarity=0.1)])]
    result = attribute(rows, chain_graph())
    assert result.suspects == []
    assert [f.op for f in result.unattributed] == ["d"]


def test_fusion_result_decides_the_section(tmp_path):
    path = tmp_path / "fusion_result.json"
    # two concatenated objects, as the compiler appends one per graph
    path.write_text(
        '{"graphId": "1", "graph_fusion": {"RuleB": {"effect_times": "1"}}}\n'
        '{"graphId": "2", "ub_fusion": {"RuleA": {"effect_times": "2", "match_times": "2"}}}'
    )
    table = load_fusion_result(path)
    assert table == {
        "RuleB": {"section": "GraphFusion", "effect_times": 1},
        "RuleA": {"section": "UBFusion", "effect_times": 2},
    }
    rows = rows_for("a", [GOOD], [bad(CosineSimilarity=0.5)])
    result = attribute(rows, chain_graph(), fusion_result=table)
    assert (result.suspects[0].section, result.suspects[0].section_source) == (
        "UBFusion",
        "fusion_result.json",
    )


def test_the_fused_op_s_own_ub_mark_wins_over_fusion_result_s_section():
    """A review (forty-first round): CANN has a graph pass and a UB pass of the same name
    (MatMulTransposeWeightFusionPass); fusion_result.json lists it under graph_fusion first,
    and that section was taken for an op whose pass_name_ub says the UB pass built it: apply
    switched an unrelated graph pass off and left the UB pass on."""
    from fusion_switch.diagnose.attribution import rule_section
    from fusion_switch.readers.graph_model import Op

    rule = "MatMulTransposeWeightFusionPass"
    table = {rule: {"section": "GraphFusion", "effect_times": 1}}
    by_ub = Op("mm", "MatMulV2", attrs={"pass_name": [rule], "pass_name_ub": rule})
    assert rule_section(rule, by_ub, table, None) == ("UBFusion", "pass_name_ub")
    single = Op("mm", "MatMulV2", attrs={"pass_name": [rule], "_single_op_ub_pass_name": rule})
    assert rule_section(rule, single, table, None)[0] == "UBFusion"  # a UB mark of its own too
    by_graph = Op("mm", "MatMulV2", attrs={"pass_name": [rule]})
    assert rule_section(rule, by_graph, table, None) == ("GraphFusion", "fusion_result.json")


def test_broken_fusion_result_names_line_and_column(tmp_path):
    path = tmp_path / "fusion_result.json"
    path.write_text('{"graph_fusion": {\n  "A": ,}}')
    with pytest.raises(ValueError, match=r"line 2 column 8"):
        load_fusion_result(path)


def test_a_cut_fusion_result_is_said_once_and_readably(tmp_path):
    """A review: a fusion_result.json found next to the graph and cut in a string gave both
    "rule sections taken from X" and "fusion_result.json ignored: X", and a message that read
    "Unterminated string starting at (not JSON)"."""
    from fusion_switch.diagnose.summary import rule_table

    graph = tmp_path / "graph.json"
    graph.write_text("{}")
    (tmp_path / "fusion_result.json").write_text('{"graph_fusion": {"AR')
    table = rule_table(None, {"on_graph": str(graph)}, None)
    assert table.path is None and table.table is None
    (note,) = table.notes
    assert note.startswith(f"fusion_result.json ignored: {tmp_path / 'fusion_result.json'}: ")
    assert "line 1 column 19: Unterminated string starting (not JSON)" in note, note


def test_no_comparable_output_gives_a_note_not_a_crash():
    rows = rows_for("a", [None], [dict.fromkeys(GOOD, math.nan)])
    result = attribute(rows, chain_graph())
    assert result.suspects == [] and result.notes


# ------------------------------------------------------------- blame on generated cases


def _attribute_case(tmp_path, kind: str, formats: str):
    case = generate_case(
        tmp_path / "case", n_ops=70, faults=[kind], formats=formats, graph_text=False
    )
    outcome = run_compare(
        CompareRequest(
            case.on_dump, case.off_dump, case.on_graph, case.off_graph, tmp_path / "out", workers=1
        )
    )
    return case, attribute(outcome.rows, outcome.on_graph)


# The row heuristic on its own; the kinds added for the replay (a UB tail dropped behind a graph
# pass, a subtle float16 fault) are the ones it gets wrong: tests/diagnose/test_replay_cli.py.
HEURISTIC_KINDS = sorted(set(FAULT_KINDS) - {"dropped_relu", "approx_gelu"})


@pytest.mark.parametrize("kind", HEURISTIC_KINDS)
def test_top_suspect_is_the_injected_rule(tmp_path, kind):
    case, result = _attribute_case(tmp_path, kind, "device")
    (truth,) = case.truth["faults"]
    top = result.suspects[0]
    assert (top.rule, top.section) == (truth["rule"], truth["section"])
    assert top.ops[0] == truth["op"]
    assert set(truth["original_ops"]) <= set(top.original_ops)
    # every blamed op of the top rule is the faulty one or downstream of it, never upstream
    finding = top.evidence[0]
    assert finding.verdict == "introduces"
    assert all(t.badness is not None and t.badness <= 1 for t in finding.inputs)


@pytest.mark.parametrize("kind", ["dropped_bias", "wrong_perm"])
def test_host_format_cases_blame_the_same_rule(tmp_path, kind):
    case, result = _attribute_case(tmp_path, kind, "host")
    assert result.suspects[0].rule == case.truth["faults"][0]["rule"]


def test_a_clean_case_has_no_suspect_and_every_rule_is_harmless(tmp_path):
    case = generate_case(tmp_path / "case", n_ops=40, faults=[], graph_text=False)
    outcome = run_compare(
        CompareRequest(
            case.on_dump, case.off_dump, case.on_graph, case.off_graph, tmp_path / "out", workers=1
        )
    )
    result = attribute(outcome.rows, outcome.on_graph)
    assert result.suspects == [] and result.unattributed == []
    harmless = {h["rule"] for h in result.harmless_rules}
    assert {"ConvBatchnormFusionPass", "TbeCommonRules0FusionPass", "SoftmaxFusionPass"} <= harmless


def test_two_faults_far_apart_are_both_named(tmp_path):
    case = generate_case(
        tmp_path / "case",
        n_ops=100,
        faults=["fp16_saturation@0", "wrong_epsilon@2"],
        graph_text=False,
    )
    outcome = run_compare(
        CompareRequest(
            case.on_dump, case.off_dump, case.on_graph, case.off_graph, tmp_path / "out", workers=1
        )
    )
    result = attribute(outcome.rows, outcome.on_graph)
    named = {(s.rule, s.ops[0]) for s in result.suspects}
    for truth in case.truth["faults"]:
        assert (truth["rule"], truth["op"]) in named
    assert result.suspects[0].rule == "SoftmaxFusionPass"  # the larger error first


def _tensor(name: str, badness: float) -> TensorEvidence:
    return TensorEvidence(name, {}, badness, [])


@pytest.mark.parametrize(
    ("input_badness", "output_badness", "verdict"),
    [
        (0.001, 46.0, "introduces"),  # clean inputs, a new error
        (0.2, 0.9, "clean"),
        (0.5, 1.01, "introduces"),  # inputs within NEAR_BAND: any output out of band is new
        (0.9, 1.5, "propagates"),  # drift close to the band's edge that crosses it
        (0.73, 4.9, "propagates"),  # near-band drift amplified by a softmax (seen on cases)
        (0.69, 29.0, "introduces"),  # a second fault behind near-band drift
        (0.73, 7.3, "introduces"),  # exactly AMPLIFICATION times worse
    ],
)
def test_near_band_inputs_need_a_large_jump(input_badness, output_badness, verdict):
    got, worst = _verdict(
        [_tensor("op:input:0", input_badness)], [_tensor("op:output:0", output_badness)]
    )
    assert (got, worst) == (verdict, output_badness)


def test_wrong_epsilon_blames_only_the_rules_of_the_faulty_op(tmp_path):
    case = generate_case(tmp_path / "case", n_ops=70, faults=["wrong_epsilon"], graph_text=False)
    outcome = run_compare(
        CompareRequest(
            case.on_dump, case.off_dump, case.on_graph, case.off_graph, tmp_path / "out", workers=1
        )
    )
    result = attribute(outcome.rows, outcome.on_graph)
    [truth] = case.truth["faults"]
    assert {op for s in result.suspects for op in s.ops} == {truth["op"]}
    assert result.suspects[0].rule == truth["rule"]
