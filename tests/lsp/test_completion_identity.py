"""Completion answers are exactly what clients got before completion was made fast (issue 16).

`data/completion_golden.json` was recorded from the code that converted every item to
lsprotocol objects and let cattrs serialise them; the server now writes the JSON text itself
from choice lists shared across answers. Every case, client variant and position encoding
must give the same JSON, key order included; so must answers given in any order (the shared
lists and the per-client text caches must not leak one cursor's items into another's).
"""

from __future__ import annotations

import json
import random

import pytest
from completion_cases import CASES, CONTEXT, GOLDEN, client_result, key, variants
from fusion_switch import cfg
from fusion_switch.catalogue import Catalogue, Rule
from fusion_switch.cfg.model import Context
from fusion_switch.lsp.capabilities import ClientFeatures
from fusion_switch.lsp.convert import Converter
from fusion_switch.lsp.features.completion import completion_json
from fusion_switch.lsp.text import LineIndex
from hypothesis import given, settings
from hypothesis import strategies as st

GOLDEN_RESULTS = json.loads(GOLDEN.read_text(encoding="utf-8"))
ALL = [(case, variant) for case in CASES for variant in variants(case)]


def test_the_golden_file_covers_every_case_and_variant() -> None:
    assert sorted(GOLDEN_RESULTS) == sorted(key(c, v) for c, v in ALL)
    kinds = {item["insertTextFormat"] for r in GOLDEN_RESULTS.values() for item in r["items"]}
    assert kinds == {1, 2}  # snippet and plain items both pinned


@pytest.mark.parametrize(("case", "variant"), ALL, ids=[key(c, v) for c, v in ALL])
def test_completion_result_is_unchanged(case: str, variant: dict) -> None:
    got = client_result(CASES[case], variant)
    # json.dumps of parsed objects: values and key order both compared
    assert json.dumps(got) == json.dumps(GOLDEN_RESULTS[key(case, variant)])


def test_answers_in_any_order_are_unchanged() -> None:
    order = ALL * 2
    random.Random(16).shuffle(order)
    for case, variant in order:
        assert json.dumps(client_result(CASES[case], variant)) == json.dumps(
            GOLDEN_RESULTS[key(case, variant)]
        ), key(case, variant)


def test_items_match_the_list_api() -> None:
    """`cfg.complete` (the list of items with spans) and the server's text agree."""
    for case, marked in CASES.items():
        text, offset = marked.replace("|", ""), marked.index("|")
        items = cfg.complete(cfg.parse(text), offset, CONTEXT, snippets=True)
        conv = Converter(LineIndex(text), "utf-16", ClientFeatures(snippets=True))
        sent = client_result(marked, {"snippets": True, "markdown": False, "encoding": "utf-16"})
        assert [i["label"] for i in sent["items"]] == [i.label for i in items], case
        assert [i["textEdit"]["range"] for i in sent["items"]] == [
            json.loads(conv.index.range_text(i.span.start, i.span.end)) for i in items
        ], case


def test_a_new_catalogue_gets_its_own_items() -> None:
    """Shared choices live with the catalogue they came from: a rule added by the settings
    (a new catalogue) appears, and the old catalogue's answers stay as they were."""
    text, offset = '{"Switch": {"GraphFusion": {""}}}', 29
    before = [c.label for c in cfg.complete(cfg.parse(text), offset, CONTEXT)]
    extra = Catalogue(origins=["test"])
    extra.add(Rule(name="AddedByTheUserFusionPass", section="GraphFusion"))
    grown = Context(catalogue=CONTEXT.catalogue.merged(extra))
    after = [c.label for c in cfg.complete(cfg.parse(text), offset, grown)]
    assert after == [*before, "AddedByTheUserFusionPass"]
    assert [c.label for c in cfg.complete(cfg.parse(text), offset, CONTEXT)] == before


GRAPH_NAMES = CONTEXT.catalogue.names("GraphFusion")


def _lsprotocol_json(text: str, offset: int, conv: Converter) -> str:
    """The answer the way the server built it before: lsprotocol objects, then pygls's
    serialisation (cattrs unstructure + json.dumps)."""
    from lsprotocol import types
    from pygls.protocol import default_converter

    items = cfg.complete(cfg.parse(text), offset, CONTEXT, snippets=conv.client.snippets)
    result = types.CompletionList(
        is_incomplete=False, items=[conv.completion_item(i) for i in items]
    )
    return json.dumps(default_converter().unstructure(result))


@settings(max_examples=150, deadline=None)
@given(
    present=st.lists(st.sampled_from([*GRAPH_NAMES, "NotARule"]), unique=True),
    where=st.integers(min_value=0),
    snippets=st.booleans(),
    markdown=st.booleans(),
    quoted=st.booleans(),
)
def test_any_set_of_present_rules_gives_the_lsprotocol_answer(
    present: list[str], where: int, snippets: bool, markdown: bool, quoted: bool
) -> None:
    """Whichever rules a section already has (none, a few, most, all), the text built from
    runs of shared items equals the item-by-item answer of the lsprotocol path."""
    members = [f'"{name}": "on"' for name in present]
    at = where % (len(members) + 1)
    before = '{"Switch": {"GraphFusion": {' + "".join(m + ", " for m in members[:at])
    new_key = '"Co"' if quoted else "Co"
    offset = len(before) + len(new_key) - (1 if quoted else 0)
    text = before + ", ".join([new_key, *members[at:]]) + "}}}"
    client = ClientFeatures(snippets=snippets, completion_markdown=markdown)
    conv = Converter(LineIndex(text), "utf-16", client)
    got = json.loads(str(completion_json(cfg.parse(text), offset, CONTEXT, conv)))
    assert json.dumps(got) == json.dumps(json.loads(_lsprotocol_json(text, offset, conv)))
    assert {i["label"] for i in got["items"]}.isdisjoint(present)
