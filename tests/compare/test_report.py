"""report.html: self-contained, suspects marked and labelled, a sortable table of every op."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from fusion_switch.compare.report import chart_svg, render_report


def summary(**extra) -> dict:
    ops = [
        {
            "op": "a",
            "type": "Conv2D",
            "order": 1,
            "verdict": "clean",
            "rules": ["RuleA"],
            "cosine": 1.0,
            "red": 1e-5,
            "kl": 0.0,
            "rmse": 0.0,
            "mre": 0.0,
            "badness": 0.001,
            "input_badness": 0.0,
        },
        {
            "op": "b<&>",
            "type": "Mul",
            "order": 2,
            "verdict": "introduces",
            "rules": ["RuleB"],
            "cosine": 1.0,
            "red": 7.0,
            "kl": 0.0,
            "rmse": 3.0,
            "mre": 7.0,
            "badness": 140.0,
            "input_badness": 0.0,
        },
        {
            "op": "c",
            "type": "Add",
            "order": 3,
            "verdict": "propagates",
            "rules": [],
            "cosine": 0.8,
            "red": "inf",
            "kl": "NaN",
            "rmse": 1.0,
            "mre": 2.0,
            "badness": "inf",
            "input_badness": 140.0,
        },
    ]
    data = {
        "tool": "fusion-switch test",
        "verdict": "most likely: RuleB (GraphFusion) at b<&>",
        "suspects": [
            {
                "rule": "RuleB",
                "section": "GraphFusion",
                "ops": ["b<&>"],
                "original_ops": ["b1"],
                "score": 2.1,
                "judged_ops": 1,
                "co_rules": [],
                "evidence": [
                    {
                        "op": "b<&>",
                        "type": "Mul",
                        "verdict": "introduces",
                        "inputs": [{"tensor": "b<&>:input:0", "badness": 0.0}],
                        "outputs": [{"crossed": ["RelativeEuclideanDistance 7 >= 0.05"]}],
                    }
                ],
            },
        ],
        "harmless_rules": [{"rule": "RuleA", "section": "GraphFusion", "ops": 1}],
        "inputs": {"on_dump": "/x/on", "notes": ["sides swapped"]},
        "soc_version": "Ascend910B1",
        "csv": "/x/out/result_1.csv",
        "thresholds": {"CosineSimilarity": {"limit": 0.99, "in_band": ">"}},
        "ops": ops,
    }
    data.update(extra)
    return data


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_report_is_self_contained():
    page = render_report(summary())
    assert not re.search(r"(?i)\b(?:https?:)?//[a-z0-9]", page.replace("://", "")), "no URLs"
    assert "http" not in page.lower()
    parser = _Collect()
    parser.feed(page)
    for tag, attrs in parser.tags:
        assert "src" not in attrs, (tag, attrs)
        assert not (tag == "link" and attrs.get("rel") == "stylesheet")
    assert "<style>" in page and "<script>" in page and "<svg" in page


def test_suspects_are_marked_and_labelled_on_the_chart():
    data = summary()
    svg = chart_svg(data["ops"], data["suspects"], data["thresholds"])
    assert svg.count('class="mark"') == 3  # a dashed line per panel + the label's leader
    assert ">#1 RuleB<title>b&lt;&amp;&gt;</title>" in svg
    assert "CosineSimilarity (worst output; in band above 0.99)" in svg
    assert "RelativeEuclideanDistance" in svg
    assert svg.count('class="band"') == 1  # only the cosine threshold is given


def test_labels_of_neighbouring_suspects_get_their_own_rows():
    ops = [
        {"op": f"o{i}", "order": i, "verdict": "introduces", "cosine": 0.5, "red": 1.0}
        for i in range(4)
    ]
    suspects = [{"rule": f"SomeRatherLongFusionRuleName{i}", "ops": [f"o{i}"]} for i in range(4)]
    svg = chart_svg(ops, suspects)
    assert svg.count('class="label"') == 4
    ys = {float(y) for y in re.findall(r'<text x="[0-9.]+" y="([0-9.]+)" text-anchor', svg)}
    assert len(ys) >= 2  # staggered, not all on one line


def test_table_lists_every_op_and_escapes_names():
    page = render_report(summary())
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    assert body.count("<tr") == 3
    assert "b&lt;&amp;&gt;" in body and "b<&>" not in body
    assert 'class="introduces"' in body
    assert 'data-v="1e308"' in body  # inf sorts last
    assert "table.sortable" in page  # the sorter is inline


def test_verdict_notes_and_harmless_rules_are_shown():
    page = render_report(summary())
    assert "most likely: RuleB (GraphFusion)" in page
    assert "sides swapped" in page and "Ascend910B1" in page
    assert "Harmless rules (1)" in page and "RuleA" in page


def test_no_comparable_tensor_gives_a_message_instead_of_a_chart():
    page = render_report(summary(ops=[], suspects=[], verdict="nothing compared"))
    assert "nothing to chart" in page and "<svg" not in page
    assert "No fused op introduces error." in page


def test_chart_is_well_formed_svg():
    import xml.etree.ElementTree as ET

    root = ET.fromstring(chart_svg(summary()["ops"], summary()["suspects"]))
    assert root.tag == "svg"
    circles = root.findall(".//circle")
    # one dot per op and panel (c's infinite RED is drawn at the top of its panel)
    assert len(circles) == 6
    assert all(c.find("title") is not None for c in circles)
