"""What a comparison summary means for one configuration: where the diagnostics go, what the
fixes do, lenses, hints, evidence, and the small command answer. Inline summaries."""

from __future__ import annotations

import pytest
from fusion_switch import cfg
from fusion_switch.workflow import annotate

OUTPUT = {
    "tensor": "conv_bn:output:0",
    "metrics": {"CosineSimilarity": 0.62, "RelativeEuclideanDistance": 0.5},
    "badness": 40.0,
    "crossed": ["CosineSimilarity 0.62 <= 0.99"],
}
INPUT = {
    "tensor": "conv_bn:input:0",
    "metrics": {"CosineSimilarity": 1.0, "RelativeEuclideanDistance": 1e-6},
    "badness": 0.0,
    "crossed": [],
}
SUMMARY = {
    "verdict": "most likely: ConvBatchnormFusionPass (GraphFusion) at conv_bn",
    "suspects": [
        {
            "rule": "ConvBatchnormFusionPass",
            "section": "GraphFusion",
            "verdict": "introduces",
            "ops": ["conv_bn", "conv_bn2"],
            "score": 1.5,
            "evidence": [
                {
                    "op": "conv_bn",
                    "type": "Conv2D",
                    "original_ops": ["conv", "bn"],
                    "inputs": [INPUT],
                    "outputs": [OUTPUT],
                }
            ],
        },
        {
            "rule": "TbeCommonRules0FusionPass",
            "section": "UBFusion",
            "verdict": "introduces",
            "ops": ["x"],
            "evidence": [],
        },
    ],
    "harmless_rules": [{"rule": "AvgPoolFusionPass", "section": "GraphFusion", "ops": 2}],
    "ops": [{"op": "conv_bn"}],
    "counts": {"ops": 10, "ops_by_verdict": {"clean": 9}},
    "report": "/r/report.html",
    "csv": "/r/result.csv",
    "soc_version": "Ascend910B1",
}


def spans(text: str) -> dict[str, list[str]]:
    found = annotate.findings(cfg.parse(text), SUMMARY)
    out: dict[str, list[str]] = {}
    for f in found:
        out.setdefault(f.code, []).append(text[f.span.start : f.span.end])
    return out


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the rule's key when present and not off; section key, Switch, first char otherwise
        (
            '{"Switch": {"GraphFusion": {"ConvBatchnormFusionPass": "on"}, "UBFusion": {}}}',
            {"fusion-suspect": ['"ConvBatchnormFusionPass"', '"UBFusion"']},
        ),
        (
            '{"Switch": {"GraphFusion": {"ALL": "off"}}}',
            {"fusion-suspect": ['"GraphFusion"', '"Switch"']},
        ),
        ("{}", {"fusion-suspect": ["{", "{"]}),
        # already off: nothing to do; an off rule found harmless: information
        (
            '{"Switch": {"GraphFusion": {"ConvBatchnormFusionPass": "off",'
            ' "AvgPoolFusionPass": "off"}, "UBFusion": {"TbeCommonRules0FusionPass": "off"}}}',
            {"fusion-harmless-off": ['"AvgPoolFusionPass"']},
        ),
        # a harmless rule that is on says nothing
        ('{"Switch": {"GraphFusion": {"AvgPoolFusionPass": "on"}}}', None),
        # the line format has no sections: the name's line counts
        ("ConvBatchnormFusionPass:on\n", {"fusion-suspect": ["ConvBatchnormFusionPass", "C"]}),
    ],
)
def test_where_findings_go(text: str, expected) -> None:
    found = spans(text)
    if expected is None:
        assert "fusion-harmless-off" not in found
    else:
        assert found == expected


def test_suspect_message_names_rule_op_metrics_and_threshold() -> None:
    text = '{"Switch": {"GraphFusion": {"ConvBatchnormFusionPass": "on"}}}'
    [first, *_] = annotate.findings(cfg.parse(text), SUMMARY)
    assert first.severity == "warning"
    for part in (
        "ConvBatchnormFusionPass",
        "conv_bn",
        "Conv2D",
        "inputs cosine 1.0000",
        "outputs cosine 0.6200",
        "CosineSimilarity 0.62 <= 0.99",
        "1 more fused ops",
    ):
        assert part in first.message
    assert first.data == {
        "rule": "ConvBatchnormFusionPass",
        "section": "GraphFusion",
        "present": True,
    }


@pytest.mark.parametrize(
    ("text", "code", "expected"),
    [
        (
            '{"Switch": {"GraphFusion": {"ALL": "off"}}}',
            "fusion-suspect",
            '{"Switch": {"GraphFusion": {"ALL": "off", "ConvBatchnormFusionPass": "off"}}}',
        ),
        (
            '{"Switch": {"GraphFusion": {"AvgPoolFusionPass": "off"}}}',
            "fusion-harmless-off",
            '{"Switch": {"GraphFusion": {"AvgPoolFusionPass": "on"}}}',
        ),
    ],
)
def test_fixes_apply_from_data(text: str, code: str, expected: str) -> None:
    doc = cfg.parse(text)
    found = [f for f in annotate.findings(doc, SUMMARY) if f.code == code][:1]
    [fix] = annotate.fixes(doc, found)
    assert cfg.apply_edits(text, fix.edits) == expected


def test_suspect_changes_all_or_named() -> None:
    assert annotate.suspect_changes(SUMMARY) == [
        ("GraphFusion", "ConvBatchnormFusionPass", "off"),
        ("UBFusion", "TbeCommonRules0FusionPass", "off"),
    ]
    assert annotate.suspect_changes(SUMMARY, ["TbeCommonRules0FusionPass"]) == [
        ("UBFusion", "TbeCommonRules0FusionPass", "off")
    ]


def test_lenses_hints_evidence_and_brief() -> None:
    text = '{"Switch": {"GraphFusion": {"ConvBatchnormFusionPass": "on"}}}'
    doc = cfg.parse(text)
    titles = [(lens.title, lens.command) for lens in annotate.lenses(doc, SUMMARY, "file:///c")]
    assert titles[:2] == [
        ("Last comparison: 2 suspects · Show report", "fusionSwitch.showReport"),
        ("Compare again", "fusionSwitch.compare"),
    ]
    assert (
        "2 fused ops diverge · worst cosine 0.62 · Turn ConvBatchnormFusionPass off",
        "fusionSwitch.applySuspects",
    ) in titles
    [hint] = annotate.hints(doc, SUMMARY)
    assert hint.offset == text.index('"on"') + 4 and hint.label == " suspect · cosine 0.62"
    evidence = annotate.evidence_markdown(SUMMARY)
    assert (
        "| conv_bn | output 0 | 0.6200 | 0.5000 | CosineSimilarity 0.62 <= 0.99 |"
        in (evidence["ConvBatchnormFusionPass"])
    )
    assert "harmless" in evidence["AvgPoolFusionPass"]
    brief = annotate.brief(SUMMARY)
    assert brief["suspects"][0] == {
        "rule": "ConvBatchnormFusionPass",
        "section": "GraphFusion",
        "ops": ["conv_bn", "conv_bn2"],
    }
    assert brief["counts"] == {"ops": 10} and brief["report"] == "/r/report.html"
    assert "ops" not in annotate.compact_summary(SUMMARY)


def test_no_summary_means_no_annotations() -> None:
    doc = cfg.parse("{}")
    assert annotate.findings(doc, None) == [] and annotate.lenses(doc, None, "u") == []
    assert annotate.hints(doc, {}) == [] and annotate.evidence_markdown(None) == {}


BIG = 1.7976931348623157e308  # how summary.json writes infinity (strict JSON has no inf)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (BIG, "inf"),
        (-BIG, "-inf"),
        (1e308, "inf"),
        (float("inf"), "inf"),
        (None, "–"),  # NaN is written as null
        (float("nan"), "–"),
        ("0.5", "–"),
        (True, "–"),
        (0.62, "0.6200"),
        (9.9e307, "9.90e+307"),  # large but finite
    ],
)
def test_metric_values_as_shown(value, shown) -> None:
    assert annotate._fmt(annotate._num(value)) == shown


def test_infinite_metrics_show_as_inf_in_messages_hovers_lenses_and_hints() -> None:
    output = {
        "tensor": "conv_bn:output:0",
        "metrics": {"CosineSimilarity": -BIG, "RelativeEuclideanDistance": BIG},
        "crossed": ["RelativeEuclideanDistance inf >= 0.05"],
    }
    suspect = {
        "rule": "ConvBatchnormFusionPass",
        "section": "GraphFusion",
        "verdict": "introduces",
        "ops": ["conv_bn"],
        "score": BIG,
        "evidence": [{"op": "conv_bn", "type": "Conv2D", "inputs": [], "outputs": [output]}],
    }
    summary = {"suspects": [suspect]}
    text = '{"Switch": {"GraphFusion": {"ConvBatchnormFusionPass": "on"}}}'
    doc = cfg.parse(text)
    assert "outputs cosine -inf, RED inf;" in annotate.suspect_message(suspect)
    hover = annotate.evidence_markdown(summary)["ConvBatchnormFusionPass"]
    assert "score inf;" in hover
    assert "| conv_bn | output 0 | -inf | inf |" in hover
    titles = [lens.title for lens in annotate.lenses(doc, summary, "file:///c")]
    assert "1 fused op diverges · worst cosine -inf · Turn ConvBatchnormFusionPass off" in titles
    [hint] = annotate.hints(doc, summary)
    assert hint.label == " suspect · cosine -inf"
    assert "1.79" not in hover + hint.tooltip + "".join(titles)


@pytest.mark.parametrize(
    "missing",
    [
        {"evidence_missing": ["/d/Conv2D.a.1.1.1: truncated"]},
        {"replay_left_out": "replay: not run, to stay within --memory-budget (10 MiB)"},
    ],
)
def test_a_verdict_without_the_evidence_it_needs_is_not_called_clean(missing):
    """Exit 3 (a review): the editor said "no fusion rule is suspect" of a verdict that
    lacked a dump it needed, or the replay the budget left out."""
    verdict = "evidence missing: 1 dump file(s) a verdict needs cannot be read"
    message = annotate.verdict_message({"verdict": verdict, "suspects": [], **missing})
    assert message == f"fusion-switch: comparison done, not proven clean: {verdict}"
    assert annotate.incomplete({"suspects": [], **missing})
    assert not annotate.incomplete({"suspects": [], "evidence_missing": []})


def test_rules_not_proven_keep_their_order_and_say_an_assumed_section() -> None:
    """A review: a rule named twice moved behind the others (which verdict_message names
    first), and a guess whose section is assumed did not say so."""
    summary = {
        "unverified_rules": [
            {"rule": "TbeMyFusionPass", "section": "GraphFusion", "verdict": "heuristic",
             "section_source": "assumed (pass_name only, not in the catalogue)"},
            {"rule": "B", "section": "UBFusion", "verdict": "undecided"},
        ],
        "suspects": [{"rule": "TbeMyFusionPass", "section": "GraphFusion", "verdict": "heuristic"}],
    }  # fmt: skip
    found = annotate.unverified(summary)
    assert [u["rule"] for u in found] == ["TbeMyFusionPass", "B"]
    message = annotate.unverified_message(found[0])
    assert "The section is assumed: the graph names TbeMyFusionPass without" in message, message


def test_a_summary_naming_no_rule_offers_the_editor_nothing_to_write() -> None:
    """A summary whose rule name holds ':' and a line break made apply write 'ALL:off' into a
    line-format cfg (a review); the editor offers no change, fix or finding for it either."""
    hostile = "FooFusionPass:on\nALL"
    for verdict in ("introduces", "heuristic"):
        summary = {"suspects": [{"rule": hostile, "section": "GraphFusion", "verdict": verdict}]}
        assert annotate.suspects(summary) == [] and annotate.unverified(summary) == []
        assert annotate.suspect_changes(summary, include_unverified=True) == []
        doc = cfg.parse("ConvBatchnormFusionPass:on\n")
        assert annotate.findings(doc, summary) == []
    doc = cfg.parse("ConvBatchnormFusionPass:on\n")
    assert cfg.set_switches(doc, [("GraphFusion", hostile, "off")]) == []
    assert cfg.set_switches(doc, [("GraphFusion", "ALL", "off")]) == []


def test_a_proven_rule_whose_name_no_cfg_can_hold_is_still_said():
    """A review: a rule named "Softmax FusionPass" proven by the replay (the command exits 1,
    says "proven by replay") vanished from the editor: "no fusion rule is suspect". Its name
    cannot be written as a switch, so no quick fix offers it, but the message says it."""
    summary = {
        "verdict": "proven by replay: Softmax FusionPass (GraphFusion) introduces the error at x",
        "suspects": [
            {"rule": "Softmax FusionPass", "section": "GraphFusion", "verdict": "introduces"}
        ],
        "rules": [],
    }
    assert annotate.suspects(summary) == []  # never written into a cfg
    message = annotate.verdict_message(summary)
    assert "Softmax FusionPass" in message and "no fusion rule is suspect" not in message
    assert annotate.alarming(summary)
