"""Quick fixes: each fix applied gives the expected text, and the fixed finding is gone."""

from __future__ import annotations

import itertools

import pytest
from cfg_helpers import ATLAS_350, CTX, FORBIDDEN, GRAPH, UB, apply, switch
from fusion_switch.cfg import Finding, Span, analyse, code_actions, parse
from test_diagnostics import CASES

FIXES = [
    # (id, text, context, code, fix title start, expected text)
    (
        "did-you-mean",
        switch('      "ConvBatchnormFusionPas": "off"'),
        CTX,
        "unknown-rule",
        "Replace with ConvBatchnormFusionPass",
        switch(f'      "{GRAPH}": "off"'),
    ),
    (
        "did-you-mean-lines",
        "ConvBatchnormFusionPas:off\n",
        CTX,
        "unknown-rule",
        "Replace with",
        f"{GRAPH}:off\n",
    ),
    (
        "move-new-section",
        switch(f'      "{GRAPH}": "on",\n      "{UB}": "off"'),
        CTX,
        "wrong-section",
        f"Move {UB} to UBFusion",
        switch(f'      "{GRAPH}": "on"', f'      "{UB}": "off"'),
    ),
    (
        "move-existing-section",
        switch(f'      "{UB}": "off",\n      "{GRAPH}": "on"', '      "ALL": "on"'),
        CTX,
        "wrong-section",
        "Move",
        switch(f'      "{GRAPH}": "on"', f'      "ALL": "on",\n      "{UB}": "off"'),
    ),
    (
        "move-reverse-only-entry",
        switch('      "ALL": "off"', f'      "{GRAPH}": "off"'),
        CTX,
        "wrong-section",
        "Move",
        '{\n  "Switch": {\n    "GraphFusion": {\n      "ALL": "off",\n'
        f'      "{GRAPH}": "off"\n    }},\n    "UBFusion": {{}}\n  }}\n}}\n',
    ),
    (
        "trailing-comma",
        '{"Switch": {"GraphFusion": {"ALL": "on",}}}',
        CTX,
        "trailing-comma",
        "Remove the trailing comma",
        '{"Switch": {"GraphFusion": {"ALL": "on"}}}',
    ),
    (
        "comment-own-line",
        '{\n  // switch all off\n  "Switch": {}\n}\n',
        CTX,
        "comment",
        "Remove the comment",
        '{\n  "Switch": {}\n}\n',
    ),
    (
        "comment-end-of-line",
        '{\n  "Switch": {} /* 注释 */\n}\n',
        CTX,
        "comment",
        "Remove the comment",
        '{\n  "Switch": {}\n}\n',
    ),
    (
        "value-case",
        switch(f'      "{GRAPH}": "OFF"'),
        CTX,
        "invalid-switch-value",
        'Change the value to "off"',
        switch(f'      "{GRAPH}": "off"'),
    ),
    (
        "value-spaces",
        switch(f'      "{GRAPH}": " on "'),
        CTX,
        "invalid-switch-value",
        'Change the value to "on"',
        switch(f'      "{GRAPH}": "on"'),
    ),
    (
        "top-level-key-spaces",
        '{" Switch ": {}}',
        CTX,
        "unknown-top-level-key",
        "Replace with Switch",
        '{"Switch": {}}',
    ),
    (
        "value-case-lines",
        f"{GRAPH}:Off\n",
        CTX,
        "invalid-switch-value",
        "Change",
        f"{GRAPH}:off\n",
    ),
    (
        "ub-section",
        switch(f'      "{GRAPH}": "off"', f'      "{UB}": "off"'),
        ATLAS_350,
        "ub-unsupported-on-target",
        "Remove the Switch.UBFusion section",
        switch(f'      "{GRAPH}": "off"'),
    ),
    (
        "ub-section-top-level-key-with-spaces",
        '{" Switch ": {"GraphFusion": {}, "UBFusion": {"ALL": "off"}}}',
        ATLAS_350,
        "ub-unsupported-on-target",
        "Remove the Switch.UBFusion section",
        '{" Switch ": {"GraphFusion": {}}}',
    ),
    (
        "ub-line",
        f"{GRAPH}:off\n{UB}:off\n",
        ATLAS_350,
        "ub-unsupported-on-target",
        "Remove this UBFusion rule",
        f"{GRAPH}:off\n",
    ),
    (
        "convert-lines",
        f"ALL:off\n{GRAPH}:on\n{UB}:on\nMyOwnPass:off\n",
        CTX,
        "legacy-line-format",
        "Convert to the JSON format",
        '{\n  "Switch": {\n    "GraphFusion": {\n      "ALL": "off",\n'
        f'      "{GRAPH}": "on",\n      "MyOwnPass": "off"\n    }},\n'
        '    "UBFusion": {\n      "ALL": "off",\n'
        f'      "{UB}": "on",\n      "MyOwnPass": "off"\n    }}\n  }}\n}}\n',
    ),
    (
        "duplicate",
        switch(f'      "{GRAPH}": "on",\n      "ALL": "off",\n      "{GRAPH}": "off"'),
        CTX,
        "duplicate-key",
        "Remove this duplicate",
        switch(f'      "ALL": "off",\n      "{GRAPH}": "off"'),
    ),
    (
        "duplicate-compact",
        '{"Switch": {"GraphFusion": {"A": "on", "A": "off"}}}',
        CTX,
        "duplicate-key",
        "Remove this duplicate",
        '{"Switch": {"GraphFusion": {"A": "off"}}}',
    ),
    (
        "duplicate-lines",
        f"{GRAPH}:on\n{GRAPH}:off\n",
        CTX,
        "duplicate-key",
        "Remove this repeated line",
        f"{GRAPH}:off\n",
    ),
    (
        "cannot-switch-off",
        switch(f'      "{GRAPH}": "off",\n      "{FORBIDDEN}": "off"'),
        CTX,
        "cannot-switch-off",
        "Remove this entry",
        switch(f'      "{GRAPH}": "off"'),
    ),
    (
        "top-level-case",
        '{"switch": {}}',
        CTX,
        "unknown-top-level-key",
        "Replace with Switch",
        '{"Switch": {}}',
    ),
    (
        "section-case",
        '{"Switch": {"graphfusion": {}}}',
        CTX,
        "unknown-section",
        "Replace with GraphFusion",
        '{"Switch": {"GraphFusion": {}}}',
    ),
    (
        "insert-comma",
        '{"Switch": {"GraphFusion": {"A": "on" "B": "off"}}}',
        CTX,
        "json-syntax",
        "Insert ','",
        '{"Switch": {"GraphFusion": {"A": "on", "B": "off"}}}',
    ),
    (
        "insert-colon",
        '{"Switch": {"GraphFusion": {"A" "on"}}}',
        CTX,
        "json-syntax",
        "Insert ':'",
        '{"Switch": {"GraphFusion": {"A": "on"}}}',
    ),
    (
        "insert-brace",
        '{"Switch": {}',
        CTX,
        "json-syntax",
        "Insert '}'",
        '{"Switch": {}}',
    ),
    (
        "double-comma",
        '{"Switch": {"GraphFusion": {"A": "on",, "B": "off"}}}',
        CTX,
        "json-syntax",
        "Remove the extra ','",
        '{"Switch": {"GraphFusion": {"A": "on", "B": "off"}}}',
    ),
    (
        "empty-file",
        "\n",
        CTX,
        "empty-file",
        "Insert a fusion_switch.cfg skeleton",
        '{\n  "Switch": {\n    "GraphFusion": {\n    },\n    "UBFusion": {\n    }\n  }\n}\n',
    ),
    (
        "line-syntax",
        f"# note\n{GRAPH}:off\n",
        CTX,
        "line-syntax",
        "Remove this line",
        f"{GRAPH}:off\n",
    ),
]


def _count(text, ctx, code):
    return sum(f.code == code for f in analyse(text, ctx).findings)


@pytest.mark.parametrize(
    ("text", "ctx", "code", "title", "expected"), [c[1:] for c in FIXES], ids=[c[0] for c in FIXES]
)
def test_fix(text, ctx, code, title, expected):
    result = analyse(text, ctx)
    findings = [f for f in result.findings if f.code == code]
    assert findings, f"no {code} finding"
    fixes = [
        x for x in code_actions(result.document, findings[:1], ctx) if x.title.startswith(title)
    ]
    assert fixes, [x.title for x in code_actions(result.document, findings, ctx)]
    fix = fixes[0]
    assert fix.codes == [code]
    new = apply(text, fix.edits)
    assert new == expected
    assert _count(new, ctx, code) < len(findings)


def test_fixes_work_from_rebuilt_findings():
    """The protocol layer only has code, span and data back from the client."""
    text = switch(f'      "{UB}": "off"')
    original = next(f for f in analyse(text).findings if f.code == "wrong-section")
    rebuilt = Finding(
        original.code,
        "warning",
        Span(original.span.start, original.span.end),
        "",
        dict(original.data),
    )
    fixes = code_actions(parse(text), [rebuilt], CTX)
    assert [f.title for f in fixes] == [f"Move {UB} to UBFusion"]


def test_stale_findings_give_no_fix_and_no_error():
    text = switch(f'      "{GRAPH}": "off"')
    stale = [
        Finding("unknown-rule", "warning", Span(3, 9), "", {"suggestions": ["X"]}),
        Finding("wrong-section", "warning", Span(0, 1), "", {"target_section": "UBFusion"}),
        Finding("duplicate-key", "warning", Span(500, 510), "", {}),
        Finding("json-syntax", "error", Span(0, 0), "", {"insert": ",", "at": "nonsense"}),
        Finding("ub-unsupported-on-target", "warning", Span(0, 0), "", {"path": ["Nope"]}),
    ]
    assert code_actions(parse(text), stale, CTX) == []


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_every_offered_fix_removes_its_finding(case):
    _, text, ctx, _, _ = case
    result = analyse(text, ctx)
    for finding in result.findings:
        for fix in code_actions(result.document, [finding], ctx):
            spans = sorted((e.span.start, e.span.end) for e in fix.edits)
            assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans)), fix
            new = apply(text, fix.edits)
            same = (finding.code, finding.message)
            before = sum((f.code, f.message) == same for f in result.findings)
            after = sum((f.code, f.message) == same for f in analyse(new, ctx).findings)
            assert after < before, (fix.title, new)


def test_syntax_repairs_are_checked_a_few_per_request(monkeypatch):
    """Each syntax repair is offered only once a re-parse shows it removes its error. Fifty
    diagnostics of a 100 KB file of brackets re-parsed it fifty times, 0.9 s of the editor's
    event loop per code action request (a review). A request re-parses at most
    CHECKED_REPAIRS times."""
    from fusion_switch.cfg import fixes as fixes_module

    text = '{"a":' * 20_000
    doc = parse(text)
    findings = list(doc.syntax_findings)[:50]
    assert len(findings) > fixes_module.CHECKED_REPAIRS
    parses = []
    real = fixes_module.parse
    monkeypatch.setattr(fixes_module, "parse", lambda t: parses.append(1) or real(t))
    code_actions(doc, findings, CTX)
    assert len(parses) <= fixes_module.CHECKED_REPAIRS
