"""Property tests: on any text, every feature returns normally and every span lies inside it."""

from __future__ import annotations

from cfg_helpers import ATLAS_350, FORBIDDEN, GRAPH, UB
from fusion_switch.cfg import (
    all_off_text,
    analyse,
    code_actions,
    complete,
    folds,
    format_document,
    hover,
    parse,
    set_switches,
    symbols,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

VALID = [
    '{\n  "Switch": {\n    "GraphFusion": {\n      "ALL": "off",\n'
    f'      "{GRAPH}": "on",\n      "{FORBIDDEN}": "off"\n    }},\n'
    f'    "UBFusion": {{\n      "{UB}": "off"\n    }}\n  }},\n'
    f'  "Priority": {{"GraphFusion": {{"Top": {{"{GRAPH}": "5"}}}}}},\n'
    '  "ExceptionalPassOfO1Level": ["规则"]\n}\n',
    f"{GRAPH}:off\nALL:on\n{UB}:OFF\n",
    '{"Switch":{"GraphFusion":{"融合":"开"}}} // 注释',
]
ALPHABET = st.sampled_from([*'{}[]:,"\\/ \n\t*#aOnfN0-1.e融', "\r", "\ufeff", "\x00"])


def check_everything(text: str) -> None:
    n = len(text)

    def inside(span):
        assert 0 <= span.start <= span.end <= n, (span, n)

    for ctx in (None, ATLAS_350):
        result = analyse(text, ctx) if ctx else analyse(text)
        doc = result.document
        for f in result.findings:
            inside(f.span)
            for r in f.related:
                inside(r.span)
        for fix in code_actions(doc, result.findings, ATLAS_350):
            for e in fix.edits:
                inside(e.span)
    doc = parse(text)
    for offset in {0, n // 3, n // 2, n, max(0, n - 1)}:
        for item in complete(doc, offset, ATLAS_350, snippets=offset % 2 == 0):
            inside(item.span)
        info = hover(doc, offset, ATLAS_350)
        if info is not None:
            inside(info.span)
    formatted = format_document(doc)
    if formatted is not None:
        assert format_document(parse(formatted)) == formatted
    stack = list(symbols(doc))
    while stack:
        s = stack.pop()
        inside(s.span)
        inside(s.selection)
        stack.extend(s.children)
    for fold in folds(doc):
        assert 0 <= fold.start_offset <= fold.end_offset <= n
    for e in set_switches(doc, [("GraphFusion", GRAPH, "off"), ("UBFusion", "新", "on")]):
        inside(e.span)
    assert all_off_text(doc).startswith("{")


@SETTINGS
@given(st.text(max_size=300))
def test_random_text(text):
    check_everything(text)


@SETTINGS
@given(st.text(alphabet=ALPHABET, max_size=200))
def test_json_like_text(text):
    check_everything(text)


@SETTINGS
@given(st.binary(max_size=300))
def test_random_binary_decoded(data):
    check_everything(data.decode("utf-8", errors="replace"))


@st.composite
def mutated(draw):
    text = draw(st.sampled_from(VALID))
    for _ in range(draw(st.integers(1, 6))):
        if not text:
            break
        i = draw(st.integers(0, len(text) - 1))
        op = draw(st.sampled_from(["delete", "insert", "duplicate"]))
        if op == "delete":
            j = min(len(text), i + draw(st.integers(1, 5)))
            text = text[:i] + text[j:]
        elif op == "insert":
            text = text[:i] + draw(ALPHABET) + text[i:]
        else:
            j = min(len(text), i + draw(st.integers(1, 12)))
            text = text[:j] + text[i:j] + text[j:]
    return text


@SETTINGS
@given(mutated())
def test_mutated_valid_files(text):
    check_everything(text)


def test_deep_nesting_does_not_hit_the_recursion_limit():
    for opener, closer in (("[", "]"), ('{"a":', "}")):
        text = opener * 50_000 + closer * 50_000
        result = analyse(text)
        assert any("levels deep" in f.message for f in result.findings)
        check_everything(opener * 5000)


def test_large_garbage_stops_after_a_bounded_number_of_errors():
    text = "{" + ":#," * 300_000  # ~1 MB of misplaced punctuation
    result = analyse(text)
    assert len(result.document.syntax_findings) <= 101
    assert result.document.syntax_findings[-1].message.startswith("More than")


def test_ten_megabyte_document():
    entry = '"SyntheticRule%d": "on",\n'
    body = "".join(entry % i for i in range(200_000))  # ~5.6 MB
    text = '{"Switch": {"GraphFusion": {' + body + '"ALL": "off"}}}' + " " * 4_500_000
    result = analyse(text)
    assert len(result.document.root.members[0].value.members[0].value.members) == 200_001
    unknown = [f for f in result.findings if f.code == "unknown-rule"]
    assert len(unknown) == 10_001  # capped per code, then one summary
    assert unknown[-1].severity == "information" and unknown[-1].data == {"omitted": 190_000}
    assert "No suggestions" in unknown[-2].message  # bounded "did you mean" work
