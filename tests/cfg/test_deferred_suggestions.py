"""`analyse(..., defer_suggestions=True)` + `fill_suggestions` give exactly the findings of a
plain `analyse`; before the fill only the unknown-rule hints ("did you mean") are missing.

Each analysis gets a catalogue of its own (a copy of the built-in one), so no suggestion is
cached from an earlier analysis: the deferred path really runs.
"""

from __future__ import annotations

import json

import pytest
from fusion_switch.catalogue import Catalogue, builtin_catalogue
from fusion_switch.cfg import Context, analyse, fill_suggestions
from fusion_switch.cfg.analysis import DEFER_ABOVE, SUGGEST_LIMIT


def _fresh() -> Context:
    return Context(catalogue=builtin_catalogue().merged(Catalogue()))


def _typos(section: str, count: int) -> list[str]:
    """Catalogue names with their third-last letter dropped: each has a close real name."""
    names = builtin_catalogue().names(section)
    return [n[:-3] + n[-2:] for n in names[:count]]


def _json_document(n_typos: int, n_synthetic: int = 0) -> str:
    graph = _typos("GraphFusion", n_typos)
    graph += [f"SyntheticName{i:05d}Fusion" for i in range(n_synthetic)]
    graph += _typos("UBFusion", 3)  # close names only in the other section
    body = {
        "Switch": {"GraphFusion": {n: "on" for n in graph}, "UBFusion": {"": "off"}},
        "Priority": {"GraphFusion": {"Top": {n: "1" for n in _typos("GraphFusion", 5)}}},
    }
    return json.dumps(body, indent=2)


def _line_document(n_typos: int) -> str:
    return "".join(f"{n}:on\n" for n in _typos("GraphFusion", n_typos))


def _keys(findings) -> list[tuple]:
    return [(f.code, f.severity, f.span, f.related) for f in findings]


CASES = {
    "json, many typos": _json_document(60),
    "json, over the suggestion limit": _json_document(40, SUGGEST_LIMIT + 50),
    "line format, many typos": _line_document(60),
}


@pytest.mark.parametrize("name", list(CASES))
def test_deferred_then_filled_equals_the_plain_analysis(name):
    text = CASES[name]
    plain = analyse(text, _fresh())
    quick = analyse(text, _fresh(), defer_suggestions=True)

    assert len(quick.deferred) > DEFER_ABOVE
    # the same findings at the same places; only the deferred messages and data differ
    assert _keys(quick.findings) == _keys(plain.findings)
    deferred = {id(f) for f, _ in quick.deferred}
    hinted = 0
    for q, p in zip(quick.findings, plain.findings, strict=True):
        if id(q) in deferred:
            assert q.code == "unknown-rule"
            assert "Did you mean" not in q.message and "No suggestions" not in q.message
            assert q.data["suggestions"] == [] and q.data["name"] == p.data["name"]
            hinted += "Did you mean" in p.message
        else:
            assert (q.message, q.data) == (p.message, p.data)
    assert hinted > DEFER_ABOVE  # the plain analysis did find close names for them

    fill_suggestions(quick)
    assert quick.deferred == []
    assert quick.findings == plain.findings
    fill_suggestions(quick)  # idempotent
    assert quick.findings == plain.findings


def test_other_section_and_priority_suggestions_survive_the_deferral():
    text = _json_document(30)
    quick = analyse(text, _fresh(), defer_suggestions=True)
    fill_suggestions(quick)
    unknown = [f for f in quick.findings if f.code == "unknown-rule"]
    assert any(f.data["other_section_suggestions"] for f in unknown)
    assert any("its priority" in f.message and "Did you mean" in f.message for f in unknown)
    assert any(f.data["name"] == "" for f in unknown)  # the empty name: no search, no deferral


def test_a_few_unknown_names_get_their_suggestions_at_once():
    text = _json_document(DEFER_ABOVE - 10)  # + 3 UB typos + 5 priorities <= DEFER_ABOVE
    quick = analyse(text, _fresh(), defer_suggestions=True)
    assert quick.deferred == []
    assert quick.findings == analyse(text, _fresh()).findings
    assert sum("Did you mean" in f.message for f in quick.findings) > 5


def test_names_searched_before_in_the_same_catalogue_are_not_deferred():
    text = _json_document(60)
    ctx = _fresh()
    first = analyse(text, ctx, defer_suggestions=True)
    assert len(first.deferred) > DEFER_ABOVE
    fill_suggestions(first)
    again = analyse(text, ctx, defer_suggestions=True)
    assert again.deferred == []
    assert again.findings == first.findings
