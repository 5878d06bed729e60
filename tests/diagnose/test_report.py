"""report.html: self-contained, suspects marked and labelled, a sortable table of every op."""

from __future__ import annotations

import re
import shutil
from html.parser import HTMLParser

import pytest
from fusion_switch.diagnose.report import chart_svg, render_report
from hypothesis import given, settings
from hypothesis import strategies as st


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
    assert ">#1 RuleB<title>b&lt;&amp;&gt;: #1 RuleB</title>" in svg
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
    # nothing compared (exit 2) is no all-clear: it was green, "No fused op introduces error."
    assert "No fused op introduces error." not in page and 'class="verdict ok"' not in page


def test_chart_is_well_formed_svg():
    import xml.etree.ElementTree as ET

    root = ET.fromstring(chart_svg(summary()["ops"], summary()["suspects"]))
    assert root.tag == "svg"
    circles = [c for c in root.findall(".//circle") if c.get("class") != "key"]
    # one dot per op and panel (c's infinite RED is drawn at the top of its panel)
    assert len(circles) == 6
    assert all(c.find("title") is not None for c in circles)
    legend = [c.get("fill") for c in root.findall(".//circle") if c.get("class") == "key"]
    assert len(legend) == 5  # one per verdict colour


def _ops(n: int, *, name=lambda i: f"op{i}", cosine=lambda i: 1.0, verdict=lambda i: "clean"):
    return [
        {
            "op": name(i),
            "type": "Conv2D",
            "order": i * 2,
            "verdict": verdict(i),
            "rules": ["RuleA"],
            "cosine": cosine(i),
            "red": 1e-4,
        }
        for i in range(n)
    ]


def test_cosine_ticks_are_round_numbers():
    ops = _ops(5, cosine=lambda i: [1.0, 0.93, 0.31, 0.7, -0.04][i])
    svg = chart_svg(ops, [], {"CosineSimilarity": {"limit": 0.99, "in_band": ">"}})
    labels = re.findall(r'class="tick">(-?[0-9.]+)</text>', svg)
    assert labels == ["0.00", "0.25", "0.50", "0.75", "1.00"]


def test_x_axis_is_labelled_with_op_indexes_and_the_verdict_strip_is_compact():
    ops = _ops(30, verdict=lambda i: "clean" if i < 20 else "propagates")
    svg = chart_svg(ops, [])
    xlabels = re.findall(r'class="xlabel">(\d+)</text>', svg)
    assert xlabels[0] == "0" and xlabels[-1] == "58" and len(xlabels) == 10
    strip = re.findall(r"<rect [^>]*><title>(\w+): #(\d+)\.\.#(\d+)</title>", svg)
    assert strip == [("clean", "0", "38"), ("propagates", "40", "58")]
    assert "op index in the graph" in svg


def test_large_cases_keep_the_report_small_but_mark_every_suspect():
    n = 5000
    ops = _ops(n, verdict=lambda i: "introduces" if i == 4000 else "clean")
    suspects = [{"rule": "RuleA", "ops": ["op4000"]}]
    page = render_report({"suspects": suspects, "ops": ops, "verdict": "x"})
    svg = chart_svg(ops, suspects)
    circles = [c for c in re.findall(r"<circle [^>]*>", svg) if 'class="key"' not in c]
    assert len(circles) == 2  # only the suspect, once per panel; the line shows the rest
    assert page.count("<tr") == n + 1
    assert len(page) < 350 * n  # bytes per op, table row included (was 700 with a dot per op)


def test_long_names_are_cut_on_the_chart_and_wrap_in_the_table():
    long_rule = "VeryLongFusionRuleName" * 6
    ops = _ops(3, name=lambda i: "scope/" * 40 + f"op{i}")
    suspects = [{"rule": long_rule, "ops": [ops[2]["op"]]}]
    svg = chart_svg(ops, suspects)
    (label,) = re.findall(r'class="label">([^<]*)<title>', svg)
    assert label.endswith("\u2026") and len(label) < 50
    assert 'text-anchor="end"' in svg  # the last op's label runs left, inside the chart
    page = render_report({"suspects": suspects, "ops": ops, "verdict": "x"})
    assert "overflow-wrap:anywhere" in page


def test_sorter_puts_blanks_last_and_sorts_metrics_worst_first():
    page = render_report(summary())
    assert "blanks always last" in page and "(x === '') - (y === '')" in page
    assert '<th data-first="desc" title="RelativeEuclideanDistance">RED</th>' in page
    assert '<th title="CosineSimilarity of the worst output">cosine</th>' in page
    body = page.split("<tbody>", 1)[1]
    assert '<td data-v="">NaN</td>' in body  # c's KL: no sort value, shown as NaN


def test_largest_double_reads_as_infinite():
    ops = _ops(2)
    ops[1]["red"] = 1.7976931348623157e308
    page = render_report({"suspects": [], "ops": ops, "verdict": "x"})
    assert '<td data-v="1e308">inf</td>' in page


VALUES = [None, "NaN", "inf", "-inf", 0.0, 1.0, -1.0, 0.5, 1e-30, 1e-12, 3e12, 1e30]
VALUES += [1.7976931348623157e308, -1.7976931348623157e308, float("nan"), "x", True]


@settings(max_examples=300, deadline=None)
@given(
    metrics=st.lists(
        st.tuples(st.sampled_from(VALUES), st.sampled_from(VALUES), st.sampled_from(VALUES)),
        max_size=8,
    ),
    verdicts=st.lists(st.sampled_from(["clean", "introduces", "odd", None]), min_size=8),
    suspects=st.lists(st.tuples(st.integers(0, 9), st.integers(0, 80)), max_size=3),
    limits=st.none() | st.tuples(st.sampled_from(VALUES), st.sampled_from(VALUES)),
)
def test_any_summary_values_give_a_well_formed_chart(metrics, verdicts, suspects, limits):
    """Hand-edited or old summaries (strings, NaN, huge numbers) never break the page and never
    put NaN or infinity into a coordinate."""
    import xml.etree.ElementTree as ET

    ops = [
        {"op": f"o{i}", "order": i, "verdict": verdicts[i], "cosine": c, "red": r, "kl": k}
        for i, (c, r, k) in enumerate(metrics)
    ]
    sus = [{"rule": "R" * length, "ops": [f"o{i}"]} for i, length in suspects]
    thresholds = None
    if limits is not None:
        thresholds = {
            "CosineSimilarity": {"limit": limits[0]},
            "RelativeEuclideanDistance": {"limit": limits[1]},
        }
    svg = chart_svg(ops, sus, thresholds)
    if svg.startswith("<svg"):
        ET.fromstring(svg)
        coordinates = re.findall(r'\b(?:x|y|x1|x2|y1|y2|cx|cy|width|points)="([^"]*)"', svg)
        assert not [c for c in coordinates if "nan" in c or "inf" in c]
    render_report({"ops": ops, "suspects": sus, "thresholds": thresholds or {}})


def test_inputs_out_of_band_are_not_called_in_band():
    """Defect: a suspect's evidence listed its inputs under "inputs in band" even when they were
    already out of band with fusion off (an op that amplifies)."""
    evidence = {"op": "b", "verdict": "amplifies", "inputs": [{"tensor": "b:input:0"}]}
    pages = {}
    for badness in (0.5, 2.0, 1.7976931348623157e308):
        evidence["inputs"][0]["badness"] = badness
        suspect = {"rule": "R", "section": "UBFusion", "score": 0.6, "evidence": [evidence]}
        pages[badness] = render_report({"ops": _ops(2), "suspects": [suspect]})
    assert "inputs in band: b:input:0: badness 0.500000" in pages[0.5]
    assert "inputs already out of band: b:input:0: badness 2.000000" in pages[2.0]
    assert "inputs already out of band: b:input:0: badness inf" in pages[1.7976931348623157e308]


SCORES = [None, "x", True, float("nan"), 0.0, -1.0, 1e-300, 0.5, 1.0, 10.0, 100.0, 1e12, 1e300]
SCORES += [1.7976931348623157e308, float("inf")]


@settings(max_examples=300, deadline=None)
@given(scores=st.lists(st.tuples(st.sampled_from(SCORES), st.sampled_from(SCORES)), max_size=6))
def test_any_replay_scores_give_a_well_formed_replay_chart(scores):
    """The replay's chart takes any scores a summary holds. Defect: when every score shown was
    the same power of ten from 10 up (a lone fused op whose scores are infinite, written as the
    largest double and charted at the 1e12 cap), the axis had no span and the report was not
    written (ZeroDivisionError)."""
    import xml.etree.ElementTree as ET

    fused = [
        {"op": f"f{i}", "order": i, "verdict": "introduces", "replay_score": r, "observed_score": o}
        for i, (r, o) in enumerate(scores)
    ]
    page = render_report({"ops": _ops(2), "suspects": [], "replay": {}, "fused_ops": fused})
    found = re.search(r'<svg viewBox="0 0 900 240" class="chart".*?</svg>', page, re.S)
    # a positive number is charted; without one the section says there is nothing to chart
    charted = any(type(v) in (int, float) and v > 0 for pair in scores for v in pair)
    assert (found is not None) == charted
    if found is not None:
        svg = found.group(0)
        ET.fromstring(svg)
        coordinates = re.findall(r'\b(?:x|y|x1|x2|y1|y2|cx|cy)="([^"]*)"', svg)
        assert not [c for c in coordinates if "nan" in c or "inf" in c]
    else:
        assert "nothing to chart" in page


def test_a_lone_infinite_replay_score_is_charted():
    fused = [{"op": "f", "verdict": "introduces", "replay_score": 1.7976931348623157e308}]
    page = render_report({"ops": _ops(2), "suspects": [], "replay": {}, "fused_ops": fused})
    assert "<title>f: replay inf (introduces)</title>" in page


def test_rules_seen_only_downstream_are_listed_apart_from_harmless_ones():
    downstream = [{"rule": "SoftmaxFusionPass", "section": "GraphFusion", "ops": ["s1"]}]
    page = render_report(summary(downstream_only_rules=downstream))
    assert "Not judged: only downstream of the error (1)" in page
    assert "SoftmaxFusionPass" in page.split("Not judged", 1)[1].split("<h2>", 1)[0]
    assert "Not judged" not in render_report(summary())


CLICKS = """<script>
function column(i) {
  var body = document.querySelector('table.sortable').tBodies[0];
  return Array.prototype.map.call(body.rows, function(r) { return r.cells[i].textContent; });
}
var heads = document.querySelectorAll('table.sortable th'), seen = {};
heads[5].click(); seen.cosine = column(5);
heads[6].click(); seen.red_first = column(6);
heads[6].click(); seen.red_second = column(6);
heads[1].click(); seen.op = column(1);
document.body.setAttribute('data-seen', JSON.stringify(seen));
</script>"""


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium")
def test_table_sorts_in_a_real_browser(tmp_path):
    """Headless chromium clicks the headers; blanks stay last, metrics sort worst first."""
    import html as html_module
    import json
    import subprocess

    ops = [
        {"op": "b", "order": 1, "verdict": "clean", "cosine": 0.5, "red": 0.2},
        {"op": "a", "order": 2, "verdict": "clean", "cosine": None, "red": None},
        {"op": "10x", "order": 3, "verdict": "clean", "cosine": 0.9, "red": 1e-6},
        {"op": "c", "order": 4, "verdict": "clean", "cosine": 1.0, "red": "inf"},
    ]
    page = render_report({"ops": ops, "suspects": [], "verdict": "x"})
    path = tmp_path / "report.html"
    path.write_text(page.replace("</body>", CLICKS + "</body>"))
    result = subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            path.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    found = re.search(r'data-seen="([^"]*)"', result.stdout)
    assert found, result.stderr[-2000:]
    seen = json.loads(html_module.unescape(found.group(1)))
    assert seen["cosine"] == ["0.500000", "0.900000", "1.000000", ""]
    assert seen["red_first"] == ["inf", "0.200000", "1.000e-06", ""]
    assert seen["red_second"] == ["1.000e-06", "0.200000", "inf", ""]
    assert seen["op"] == ["10x", "a", "b", "c"]  # a name that starts with digits is text
