"""`conforms` (the check that spares the first check jsonschema's import) answers exactly as
python-jsonschema does with the shipped schema, and findings stay the same either way."""

from __future__ import annotations

import pytest
from cfg_helpers import GRAPH, UB
from fusion_switch.cfg import analyse
from fusion_switch.cfg import structure as structure_module
from fusion_switch.cfg.conforms import conforms
from fusion_switch.cfg.schema import validator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# (instance, valid according to the schema)
CASES = [
    ({}, True),
    ({"Switch": {}}, True),
    ({"Switch": {"GraphFusion": {"ALL": "on", "\x000": "off"}}}, True),
    ({"Switch": {"GraphFusion": {GRAPH: "on"}, "UBFusion": {UB: "off"}}}, True),
    ({"Switch": {"GraphFusion": {GRAPH: "On"}}}, False),
    ({"Switch": {"GraphFusion": {GRAPH: True}}}, False),
    ({"Switch": {"GraphFusion": {GRAPH: None}}}, False),
    ({"Switch": {"GraphFusion": []}}, False),
    ({"Switch": {"Graph": {}}}, False),
    ({"Switch": []}, False),
    ({"Priority": {"GraphFusion": {"Top": {GRAPH: "999"}, "Main": {"x": "1000"}}}}, True),
    ({"Priority": {"GraphFusion": {"Top": {GRAPH: "1000"}}}}, False),
    ({"Priority": {"UBFusion": {"Down": {UB: "2999\n"}}}}, True),  # re.search and "$"
    ({"Priority": {"UBFusion": {"Down": {UB: 2500}}}}, False),
    ({"Priority": {"UBFusion": {"Late": {}}}}, False),
    ({"Priority": {"UBFusion": {"Top": []}}}, False),
    ({"ExceptionalPassOfO1Level": ["a", "规则"]}, True),
    ({"ExceptionalPassOfO1Level": ["a", None]}, False),
    ({"ExceptionalPassOfO1Level": {}}, False),
    ({"switch": {}}, False),
    ([], False),
    ("on", False),
    (None, False),
]


@pytest.mark.parametrize(("instance", "valid"), CASES)
def test_table(instance, valid):
    assert validator().is_valid(instance) is valid  # the table itself is right
    assert conforms(instance) is valid


KEYS = st.sampled_from(
    [
        "Switch",
        "Priority",
        "ExceptionalPassOfO1Level",
        "GraphFusion",
        "UBFusion",
        "Top",
        "Main",
        "Down",
        "ALL",
        "\x000",
        "\x001",
        GRAPH,
        UB,
        "switch",
        "",
    ]
)
SCALARS = st.one_of(
    st.sampled_from(["on", "off", "On", " on", "", "5", "999", "1000", "2500", "2999\n", "0"]),
    st.sampled_from([True, False, None, 0, 1, 1.5, 1000]),
    st.text(max_size=4),
)
ANY = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=12,
)
SWITCHES = st.dictionaries(KEYS, st.one_of(st.sampled_from(["on", "off"]), ANY), max_size=4)
PRIORITIES = st.dictionaries(
    st.sampled_from(["Top", "Main", "Down", "Late"]),
    st.dictionaries(KEYS, st.one_of(st.sampled_from(["0", "999", "1000", "2999"]), ANY)) | ANY,
    max_size=3,
)
SECTIONS = st.sampled_from(["GraphFusion", "UBFusion", "Graph"])
NEAR_VALID = st.fixed_dictionaries(
    {},
    optional={
        "Switch": st.dictionaries(SECTIONS, SWITCHES | ANY, max_size=2),
        "Priority": st.dictionaries(SECTIONS, PRIORITIES | ANY, max_size=2),
        "ExceptionalPassOfO1Level": st.lists(st.text(max_size=3) | ANY, max_size=3) | ANY,
        "Other": ANY,
    },
)


@SETTINGS
@given(st.one_of(NEAR_VALID, ANY))
def test_same_answer_as_jsonschema(instance):
    assert conforms(instance) == validator().is_valid(instance)


TEXTS = [
    '{"Switch": {"GraphFusion": {"ALL": "on", "X": "on"}}}',
    '{"Switch": {"GraphFusion": {"ALL": "On", "X": 1}, "Bogus": {}}, "Extra": 1}',
    '{"Priority": {"GraphFusion": {"Top": {"A": "1000"}, "Late": {}}}}',
    '{"ExceptionalPassOfO1Level": ["a", 3]}',
    '{" Switch ": {"UBFusion": {"Y": " off "}}}',
    "[1, 2]",
]


@pytest.mark.parametrize("text", TEXTS)
def test_findings_do_not_depend_on_the_shortcut(text, monkeypatch):
    fast = analyse(text).findings
    monkeypatch.setattr(structure_module, "conforms", lambda instance: False)
    assert analyse(text).findings == fast
