"""Every diagnostic code: positive and negative cases, JSON and the line format.

Each case lists the text each finding of that code covers, so spans are checked exactly.
"""

from __future__ import annotations

import pytest
from cfg_helpers import ATLAS_350, CTX, FORBIDDEN, GRAPH, UB, found, sub, switch
from fusion_switch.catalogue import Catalogue, Rule, resolve_target
from fusion_switch.cfg import CODES, Context, analyse

GE_PASS = "AddRmsNormDynamicQuantV2FusionPass"  # REG_FUSION_PASS: run by GE's own executor
GE_PASS_ON = "AInplaceAddFusionPass"  # the same; "on" is what it is anyway

A2 = Context(target=resolve_target("Ascend910B1"))
BOTH = "MatMulTransposeWeightFusionPass"  # a name listed in both sections

CASES = [
    # (id, text, context, code, covered texts)
    (
        "syntax-missing-colon",
        '{"Switch": {"GraphFusion": {"A" "on"}}}',
        CTX,
        "json-syntax",
        ['"A"'],
    ),
    (
        "syntax-missing-comma",
        '{"Switch": {"GraphFusion": {"A": "on" "B": "off"}}}',
        CTX,
        "json-syntax",
        ['"'],
    ),
    ("syntax-unclosed", '{"Switch": {', CTX, "json-syntax", ["", ""]),
    ("syntax-unterminated", '{"A\n}', CTX, "json-syntax", ['"A']),
    ("syntax-single-quotes", "{'Switch': {}}", CTX, "json-syntax", ["'Switch'"]),
    # CANN's reader (nlohmann's >>) stops at the end of the top-level value (a review)
    ("syntax-after-root", "{} x", CTX, "text-after-object", ["x"]),
    ("text-after-object-none", "{}  \n", CTX, "text-after-object", []),
    ("text-after-object-comma", '{"Switch": {}},', CTX, "text-after-object", [","]),
    (
        "syntax-bad-escape",
        '{"Switch": {"GraphFusion": {"A\\q": "on"}}}',
        CTX,
        "json-syntax",
        ["\\q"],
    ),
    (
        "syntax-control-char",
        '{"Switch": {"GraphFusion": {"A\tB": "on"}}}',
        CTX,
        "json-syntax",
        ["\t"],
    ),
    ("syntax-missing-value", '{"Switch": {"GraphFusion": {"A": }}}', CTX, "json-syntax", [":"]),
    ("syntax-bare-value", '{"Switch": {"GraphFusion": {"A": on}}}', CTX, "json-syntax", ["on"]),
    ("syntax-valid", switch(f'      "{GRAPH}": "off"'), CTX, "json-syntax", []),
    ("syntax-lines-none", f"{GRAPH}:off\n", CTX, "json-syntax", []),
    ("line-syntax", f"{GRAPH} off\nB:on\n", CTX, "line-syntax", [f"{GRAPH} off"]),
    ("line-syntax-comment-line", f"# note\n{GRAPH}:off\n", CTX, "line-syntax", ["# note"]),
    ("line-syntax-valid", f"{GRAPH}:off\n\n  ALL : on \n", CTX, "line-syntax", []),
    (
        "trailing-comma-object",
        '{"Switch": {"GraphFusion": {"ALL": "on",}}}',
        CTX,
        "trailing-comma",
        [","],
    ),
    ("trailing-comma-array", '{"ExceptionalPassOfO1Level": ["A",]}', CTX, "trailing-comma", [","]),
    (
        "trailing-comma-none",
        '{"Switch": {"GraphFusion": {"ALL": "on"}}}',
        CTX,
        "trailing-comma",
        [],
    ),
    ("comment-line", '// c\n{"Switch": {}}', CTX, "comment", ["// c"]),
    ("comment-block", '{"Switch": /* x */ {}}', CTX, "comment", ["/* x */"]),
    ("comment-inside-string", '{"Switch": {"GraphFusion": {"//x": "on"}}}', CTX, "comment", []),
    ("empty", "", CTX, "empty-file", [""]),
    ("empty-blank", "  \n", CTX, "empty-file", ["  \n"]),
    ("empty-not", "{}", CTX, "empty-file", []),
    (
        "duplicate-json",
        switch(f'      "{GRAPH}": "on",\n      "{GRAPH}": "off"'),
        CTX,
        "duplicate-key",
        [f'"{GRAPH}"'],
    ),
    (
        "duplicate-section",
        '{"Switch": {"GraphFusion": {}, "GraphFusion": {}}}',
        CTX,
        "duplicate-key",
        ['"GraphFusion"'],
    ),
    (
        "duplicate-none",
        switch(f'      "{GRAPH}": "on",\n      "ALL": "off"'),
        CTX,
        "duplicate-key",
        [],
    ),
    ("duplicate-lines", f"{GRAPH}:on\n{GRAPH}:off\n", CTX, "duplicate-key", [GRAPH]),
    ("duplicate-lines-none", f"{GRAPH}:on\nALL:off\n", CTX, "duplicate-key", []),
    ("top-level-unknown", '{"Switches": {}}', CTX, "unknown-top-level-key", ['"Switches"']),
    ("top-level-array", "[]", CTX, "unknown-top-level-key", ["[]"]),
    # CANN's check trims a top-level key in place, then finds no such key: an error
    ("top-level-spaces", '{" Switch ": {}}', CTX, "unknown-top-level-key", ['" Switch "']),
    (
        "top-level-ok",
        '{"Switch": {}, "Priority": {}, "ExceptionalPassOfO1Level": []}',
        CTX,
        "unknown-top-level-key",
        [],
    ),
    (
        "section-unknown",
        '{"Switch": {"GraphFusions": {}}}',
        CTX,
        "unknown-section",
        ['"GraphFusions"'],
    ),
    ("section-not-object", '{"Switch": {"GraphFusion": []}}', CTX, "unknown-section", ["[]"]),
    ("switch-not-object", '{"Switch": 1}', CTX, "unknown-section", ["1"]),
    ("o1-not-array", '{"ExceptionalPassOfO1Level": {}}', CTX, "unknown-section", ["{}"]),
    ("o1-item-not-string", '{"ExceptionalPassOfO1Level": ["A", 2]}', CTX, "unknown-section", ["2"]),
    ("section-ok", '{"Switch": {"GraphFusion": {}, "UBFusion": {}}}', CTX, "unknown-section", []),
    ("value-case", switch(f'      "{GRAPH}": "On"'), CTX, "invalid-switch-value", ['"On"']),
    (
        "value-types",
        '{"Switch": {"GraphFusion": {"ALL": true, "X": 1, "Y": null, "Z": {}}}}',
        CTX,
        "invalid-switch-value",
        ["true", "1", "null", "{}"],
    ),
    ("value-spaces", switch(f'      "{GRAPH}": " off"'), CTX, "invalid-switch-value", ['" off"']),
    (
        "value-many-same",
        switch(f'      "{GRAPH}": "ON",\n      "{FORBIDDEN}": "ON"'),
        CTX,
        "invalid-switch-value",
        ['"ON"', '"ON"'],
    ),
    (
        "value-ok",
        switch(f'      "{GRAPH}": "on",\n      "ALL": "off"'),
        CTX,
        "invalid-switch-value",
        [],
    ),
    ("value-lines", f"{GRAPH}:OFF\n", CTX, "invalid-switch-value", ["OFF"]),
    ("value-lines-ok", f"{GRAPH}: off \n", CTX, "invalid-switch-value", []),
    (
        "unknown-rule",
        switch('      "ConvBatchnormFusionPas": "off"'),
        CTX,
        "unknown-rule",
        ['"ConvBatchnormFusionPas"'],
    ),
    (
        "unknown-rule-known",
        switch(f'      "{GRAPH}": "off",\n      "ALL": "on"'),
        CTX,
        "unknown-rule",
        [],
    ),
    (
        "unknown-rule-lines",
        "ConvBatchnormFusionPas:off\n",
        CTX,
        "unknown-rule",
        ["ConvBatchnormFusionPas"],
    ),
    ("unknown-rule-lines-known", f"{GRAPH}:off\n{UB}:on\nALL:on\n", CTX, "unknown-rule", []),
    (
        "unknown-rule-priority",
        '{"Priority": {"GraphFusion": {"Top": {"Nope": "1"}}}}',
        CTX,
        "unknown-rule",
        ['"Nope"'],
    ),
    ("wrong-section", switch(f'      "{UB}": "off"'), CTX, "wrong-section", [f'"{UB}"']),
    (
        "wrong-section-reverse",
        switch("", f'      "{GRAPH}": "off"'),
        CTX,
        "wrong-section",
        [f'"{GRAPH}"'],
    ),
    ("wrong-section-both", switch("", f'      "{BOTH}": "off"'), CTX, "wrong-section", []),
    ("wrong-section-lines", f"{UB}:off\n", CTX, "wrong-section", []),
    (
        "cannot-switch-off",
        switch(f'      "{FORBIDDEN}": "off"'),
        CTX,
        "cannot-switch-off",
        ['"off"'],
    ),
    ("cannot-switch-off-on", switch(f'      "{FORBIDDEN}": "on"'), CTX, "cannot-switch-off", []),
    ("cannot-switch-off-lines", f"{FORBIDDEN}:off\n", CTX, "cannot-switch-off", ["off"]),
    # CANN trims values: " off " switches off (and so has no effect on a forbidden-close rule)
    (
        "cannot-switch-off-spaces",
        switch(f'      "{FORBIDDEN}": " off "'),
        CTX,
        "cannot-switch-off",
        ['" off "'],
    ),
    ("all-overridden", switch('      "ALL": "off"'), CTX, "all-overridden", ['"ALL"']),
    ("all-overridden-none", switch(f'      "{GRAPH}": "off"'), CTX, "all-overridden", []),
    ("all-overridden-lines", "ALL:on\n", CTX, "all-overridden", ["ALL"]),
    ("all-overridden-spaces", switch('      "ALL": "off "'), CTX, "all-overridden", ['"ALL"']),
    (
        "ub-target",
        switch(f'      "{GRAPH}": "off"', f'      "{UB}": "off",\n      "ALL": "on"'),
        ATLAS_350,
        "ub-unsupported-on-target",
        ['"UBFusion"', f'"{UB}"', '"ALL"'],
    ),
    (
        "ub-target-priority",
        sub('{"Priority": {"UBFusion": {"Top": {"<U>": "10"}}}}'),
        ATLAS_350,
        "ub-unsupported-on-target",
        ['"UBFusion"', f'"{UB}"'],
    ),
    ("ub-no-target", switch("", f'      "{UB}": "off"'), CTX, "ub-unsupported-on-target", []),
    ("ub-target-a2", switch("", f'      "{UB}": "off"'), A2, "ub-unsupported-on-target", []),
    (
        "ub-target-graph-only",
        switch(f'      "{GRAPH}": "off"'),
        ATLAS_350,
        "ub-unsupported-on-target",
        [],
    ),
    ("ub-target-lines", f"{UB}:off\n{GRAPH}:off\n", ATLAS_350, "ub-unsupported-on-target", [UB]),
    ("legacy", f"{GRAPH}:off\nALL:on\n", CTX, "legacy-line-format", [f"{GRAPH}:off"]),
    ("legacy-json", switch(f'      "{GRAPH}": "off"'), CTX, "legacy-line-format", []),
    # a review (forty-first round): GE's pass executor reads JSON only: such a line does nothing
    (
        "ge-pass-lines",
        f"{GRAPH}:off\n{GE_PASS}:off\n{GE_PASS_ON}:on\n",
        CTX,
        "ge-pass-in-line-format",
        [f"{GE_PASS}:off"],
    ),
    ("ge-pass-json", switch(f'      "{GE_PASS}": "off"'), CTX, "ge-pass-in-line-format", []),
    # a review: passes renamed in capitals between CANN versions; CANN matches names exactly
    (
        "twin-off",
        switch('      "BatchMatmulFusionPass": "on"', '      "TbeMatmulFixpipeFusionPass": "off"'),
        CTX,
        "spelling-twin",
        ['"TbeMatmulFixpipeFusionPass"'],
    ),
    (
        "twin-lines",
        "TbeMatmulFixpipeFusionPass:off\n",
        CTX,
        "spelling-twin",
        ["TbeMatmulFixpipeFusionPass"],
    ),
    ("twin-none", switch(f'      "{GRAPH}": "off"'), CTX, "spelling-twin", []),
    (
        "priority-bad",
        sub('{"Priority": {"GraphFusion": {"Middle": {}, "Top": {"<G>": "abc"}}}}'),
        CTX,
        "invalid-priority",
        ['"Middle"', '"abc"'],
    ),
    (
        "priority-range",
        sub('{"Priority": {"UBFusion": {"Top": {"<U>": "1000"}}}}'),
        CTX,
        "invalid-priority",
        ['"1000"'],
    ),
    (
        "priority-repeated",
        sub('{"Priority": {"GraphFusion": {"Top": {"<G>": "1"}, "Main": {"<G>": "1500"}}}}'),
        CTX,
        "invalid-priority",
        [f'"{GRAPH}"'],
    ),
    (
        "priority-ok",
        sub('{"Priority": {"GraphFusion": {"Top": {"<G>": "999"}, "Down": {"<F>": "2000"}}}}'),
        CTX,
        "invalid-priority",
        [],
    ),
]


@pytest.mark.parametrize(
    ("text", "ctx", "code", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_code(text, ctx, code, expected):
    assert [covered for _, covered in found(text, ctx, code)] == expected


def test_every_code_has_positive_and_negative_cases():
    positive = {c[3] for c in CASES if c[4]}
    negative = {c[3] for c in CASES if not c[4]}
    expected = set(CODES)
    assert positive == expected
    assert negative == expected


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_severity_is_the_documented_one(case):
    _, text, ctx, code, _ = case
    for f in analyse(text, ctx).findings:
        if f.code != code:
            continue
        if code == "duplicate-key" and f.data.get("line"):
            assert f.severity == "error"  # CANN rejects a repeated name in the line format
        elif code == "invalid-switch-value" and (f.data.get("value") or "").strip() in (
            "on",
            "off",
        ):
            assert f.severity == "warning"  # only spaces: CANN accepts (the rule is off)
        else:
            assert f.severity == CODES[code], f.message


def test_messages_say_what_cann_does():
    checks = {
        "trailing-comma": ('{"Switch": {"GraphFusion": {"ALL": "on",}}}', "rejects the whole file"),
        "unknown-rule": (switch('      "Nope": "on"'), "CANN ignores this name"),
        "cannot-switch-off": (switch(f'      "{FORBIDDEN}": "off"'), "has no effect"),
        "duplicate-key": (f"{GRAPH}:on\n{GRAPH}:off\n", "rejects the whole file"),
        "legacy-line-format": (f"{GRAPH}:on\n", "REG_FUSION_PASS"),
    }
    for code, (text, phrase) in checks.items():
        messages = [f.message for f in analyse(text).findings if f.code == code]
        assert messages and phrase in messages[0], (code, messages)


def test_unknown_rule_suggestions_and_other_section():
    text = switch("", '      "TbeEltwiseFusionPas": "off",\n      "ConvBatchnormFusionPas": "on"')
    findings = [f for f in analyse(text).findings if f.code == "unknown-rule"]
    assert findings[0].data["suggestions"][0] == UB
    assert "Did you mean TbeEltwiseFusionPass" in findings[0].message
    # a GraphFusion name misspelt under UBFusion: suggested from the other section, labelled
    assert GRAPH in findings[1].data["other_section_suggestions"]
    assert f"{GRAPH} (GraphFusion)" in findings[1].message


def test_case_difference_is_the_first_suggestion():
    finding = next(
        f
        for f in analyse(switch(f'      "{GRAPH.lower()}": "on"')).findings
        if f.code == "unknown-rule"
    )
    assert finding.data["suggestions"][0] == GRAPH


def test_wrong_section_data():
    finding = next(
        f for f in analyse(switch(f'      "{UB}": "off"')).findings if f.code == "wrong-section"
    )
    assert finding.data == {
        "name": UB,
        "section": "GraphFusion",
        "target_section": "UBFusion",
        "value": "off",
    }


def test_duplicate_related_points_at_the_kept_entry():
    text = switch(f'      "{GRAPH}": "on",\n      "{GRAPH}": "off"')
    finding = next(f for f in analyse(text).findings if f.code == "duplicate-key")
    kept = text.rindex(f'"{GRAPH}"')
    assert finding.related[0].span.start == kept
    assert finding.data["kept"] == [kept, kept + len(GRAPH) + 2]


def test_all_overridden_names_explicit_builtin_and_forbidden():
    text = switch(f'      "ALL": "off",\n      "{GRAPH}": "on"')
    finding = next(f for f in analyse(text).findings if f.code == "all-overridden")
    assert finding.data["explicit"] == [GRAPH]
    assert "LayerNormGradV3FusionPass" in finding.data["builtin_defaults"]  # built-in "on"
    assert FORBIDDEN in finding.data["forbidden_close"]
    on = switch('      "ALL": "on"')
    finding = next(f for f in analyse(on).findings if f.code == "all-overridden")
    assert "SoftmaxSmallOpFusionPass" in finding.data["builtin_defaults"]  # built-in "off"
    assert finding.data["forbidden_close"] == []


def test_all_overridden_silent_when_nothing_overrides():
    cat = Catalogue()
    cat.add(Rule(name="PlainPass", section="GraphFusion"))
    text = switch('      "ALL": "off",\n      "PlainPass": "off"')
    assert found(text, Context(catalogue=cat), "all-overridden") == []


def test_ub_finding_data_lets_a_fix_remove_the_section():
    text = switch("", f'      "{UB}": "off"')
    findings = [
        f for f in analyse(text, ATLAS_350).findings if f.code == "ub-unsupported-on-target"
    ]
    assert {tuple(f.data["path"]) for f in findings} == {("Switch", "UBFusion")}


def test_invalid_value_suggestion_only_for_case_or_spaces():
    text = switch(f'      "{GRAPH}": "OFF",\n      "{FORBIDDEN}": "yes"')
    values = {
        f.data["value"]: f.data.get("suggested")
        for f in analyse(text).findings
        if f.code == "invalid-switch-value"
    }
    assert values == {"OFF": "off", "yes": None}


def test_findings_sorted_by_position():
    text = '{"Switch": {"GraphFusion": {"B": "X", "A": "on",}}, "Bad": 1} // c'
    starts = [f.span.start for f in analyse(text).findings]
    assert starts == sorted(starts) and len(starts) >= 5


def test_non_ascii_spans_are_code_points():
    text = '{"Switch": {"GraphFusion": {"融合规则": "开", "𝔘": "on"}}} // 注释'
    got = found(text)
    assert ("unknown-rule", '"融合规则"') in got
    assert ("invalid-switch-value", '"开"') in got
    assert ("unknown-rule", '"𝔘"') in got  # astral: 2 UTF-16 units, 1 code point here
    assert ("comment", "// 注释") in got
    comment = next(f for f in analyse(text).findings if f.code == "comment")
    assert comment.span.start == text.index("//") and comment.span.end == len(text)


def test_bom_is_accepted():
    assert found("\ufeff" + switch(f'      "{GRAPH}": "off"')) == []


def test_clean_documents_have_no_findings():
    for text in (
        switch(f'      "{GRAPH}": "off"', f'      "{UB}": "on"'),
        '{"Switch": {"GraphFusion": {}, "UBFusion": {}}}',
        sub('{"Priority": {"GraphFusion": {"Top": {"<G>": "5"}}}}'),
    ):
        assert found(text) == [], text


def test_huge_names_and_values_are_cut_in_messages():
    text = switch(f'      "{"k" * 100_000}": "{"v" * 100_000}"')
    findings = analyse(text).findings
    assert [f.code for f in findings] == ["unknown-rule", "invalid-switch-value"]
    for f in findings:
        assert len(f.message) < 400 and len(str(f.data)) < 2500
        assert "…" in f.message
    long_rule = "BatchMultiClassNonMaxSuppressionRefreshSubgraphConstNodeFusionPass"
    message = analyse(switch(f'      "{long_rule}X": "on"')).findings[0].message
    assert f"{long_rule}X" in message  # real rule names are never cut


def test_a_top_level_key_with_spaces_is_an_error_and_its_content_checked():
    """CANN's check trims the key in place and then looks the trimmed key up in the file,
    which has none: the whole file is rejected (a review, from FE's parser)."""
    text = sub('{" Switch ": {"GraphFusion": {"ALL": "On", "<G>x": "on"}}, "Priority ": 1}')
    got = found(text)
    assert ("unknown-top-level-key", '" Switch "') in got
    assert ("unknown-top-level-key", '"Priority "') in got
    assert ("invalid-switch-value", '"On"') in got  # the schema check reaches inside
    assert ("unknown-rule", f'"{GRAPH}x"') in got  # and so do the semantic checks
    assert ("unknown-section", "1") in got  # Priority must be an object
    spaced = [f for f in analyse(text).findings if f.code == "unknown-top-level-key"]
    assert [f.data["suggestions"] for f in spaced] == [["Switch"], ["Priority"]]
    assert all(f.severity == "error" for f in spaced)
    assert all("rejects the whole file" in f.message for f in spaced)
    # with a key of exactly the trimmed name beside it, that one is read, this one ignored
    both = sub('{"Switch": {"GraphFusion": {"<G>": "off"}}, " Switch": {"UBFusion": {}}}')
    (spaced,) = [f for f in analyse(both).findings if f.code == "unknown-top-level-key"]
    assert spaced.severity == "warning" and "ignores this one" in spaced.message
    from fusion_switch.cfg import code_actions, parse

    # renaming it would make it the "Switch" CANN reads, dropping the other's settings
    offered = [fix.title for fix in code_actions(parse(both), [spaced], CTX)]
    assert not [title for title in offered if "Replace" in title], offered
    wrong = sub('{"Switch": {"GraphFusion": {"<G>": "On"}}, " Switch": {"UBFusion": {}}}')
    assert ("invalid-switch-value", '"On"') in found(wrong)  # the one CANN reads is checked


def test_a_padded_value_is_accepted_and_compared_as_written():
    """CANN checks a switch value trimmed, then switches the rule on only when the value is
    exactly "on" (ModifyFusionSwitchMap): " on " passes and the rule is OFF. The server said
    CANN reads "on" (a review)."""
    text = switch(f'      "ALL": "off",\n      "{GRAPH}": " on "')
    findings = analyse(text).findings
    overridden = [f for f in findings if f.code == "all-overridden"]
    assert all(GRAPH not in f.data["explicit"] for f in overridden)  # off, as ALL
    (padded,) = [f for f in findings if f.code == "invalid-switch-value"]
    assert padded.severity == "warning" and "OFF" in padded.message
    assert padded.data["suggested"] == "on"
    text = switch(f'      "ALL": " on ",\n      "{GRAPH}": "on"')
    finding = next(f for f in analyse(text).findings if f.code == "all-overridden")
    assert finding.data["value"] == "off" and finding.data["explicit"] == [GRAPH]


@pytest.mark.parametrize("space", ["\u00a0", "\u3000"])
def test_a_value_padded_with_a_space_c_does_not_trim_is_rejected(space):
    """C's isspace trims ASCII white space only; Python's strip trims these too."""
    (finding,) = [
        f
        for f in analyse(switch(f'      "{GRAPH}": "on{space}"')).findings
        if f.code == "invalid-switch-value"
    ]
    assert finding.severity == "error"


@pytest.mark.parametrize(
    "text",
    [switch('      "": "off"'), '{"Priority": {"GraphFusion": {"Top": {"": "1"}}}}'],
    ids=["switch", "priority"],
)
def test_an_empty_rule_name_is_called_empty(text):
    findings = [f for f in analyse(text).findings if f.code == "unknown-rule"]
    assert findings, analyse(text).findings
    assert "empty" in findings[0].message.lower()
    assert "Unknown rule ''" not in findings[0].message


@pytest.mark.parametrize(
    ("text", "rejected"),
    [
        # CANN skips only empty lines: a CR line end or spaces make a line it cannot read
        (f"{GRAPH}:on\r\n\r\n{UB}:off\r\n", True),
        (f"{GRAPH}:on\n   \n{UB}:off\n", True),
        (f"{GRAPH}:on\n\n{UB}:off\n", False),
        (f"{GRAPH}:on\r\n{UB}:off\r\n", False),
        # C's isspace trims ASCII only: a full-width or no-break space stays in the value
        (f"{GRAPH}:on\u3000\n", True),
        (f"{GRAPH}:\u00a0on\n", True),
        # an entry with no name is skipped (its value still read)
        (f":on\n{GRAPH}:off\n", False),
        (f":maybe\n{GRAPH}:off\n", True),
    ],
    ids=[
        "crlf-blank",
        "spaces-blank",
        "empty",
        "crlf",
        "ideographic",
        "no-break",
        "no-name",
        "no-name-bad-value",
    ],
)
def test_the_old_line_format_is_read_as_cann_reads_it(text, rejected):
    """A review transcribed FE's LoadOldFormatFusionSwitchFile: getline keeps a CR, only an
    empty line is skipped, key and value are trimmed of ASCII white space, and an empty key
    is skipped. The server skipped blank lines with spaces, trimmed Unicode spaces, and
    called an empty name an error."""
    errors = [f for f in analyse(text).findings if f.severity == "error"]
    assert bool(errors) is rejected, [(f.code, f.message) for f in errors]
