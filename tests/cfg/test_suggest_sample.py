"""The fast "did you mean" index gives Catalogue.suggest's answers; the benchmark sample."""

from __future__ import annotations

import json

import pytest
from fusion_switch.catalogue import builtin_catalogue
from fusion_switch.cfg import analyse, parse, sample_catalogue, sample_document
from fusion_switch.cfg.suggest import name_index
from hypothesis import given, settings
from hypothesis import strategies as st

NAMES = [
    "ConvBatchnormFusionPas",
    "convbatchnormfusionpass",
    "MatmulFusionPassX",
    "TbeEltwiseFusionPas",
    "SoftmaxFusion",
    "LayerNormGradV3FusionPas",
    "Foo",
    "",
    "规则FusionPass",
    "AABiasaddConvFusio",
    "SyntheticConv00001FusionPass",
]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("section", [None, "GraphFusion", "UBFusion"])
def test_same_answers_as_catalogue_suggest(name, section):
    cat = builtin_catalogue()
    assert name_index(cat).suggest(name, section) == cat.suggest(name, section)


def test_index_is_rebuilt_when_the_catalogue_changes():
    cat = sample_catalogue(10)  # a fresh catalogue object
    first = name_index(cat)
    assert name_index(cat) is first
    from fusion_switch.catalogue import Rule

    cat.add(Rule(name="BrandNewFusionPass", section="GraphFusion"))
    assert name_index(cat) is not first
    assert name_index(cat).suggest("BrandNewFusionPas", "GraphFusion") == ["BrandNewFusionPass"]


def test_sample_document():
    text = sample_document(5000)
    data = json.loads(text)
    entries = data["Switch"]["GraphFusion"]
    assert len(entries) == 5000
    assert set(entries.values()) == {"on", "off"}
    cat = builtin_catalogue()
    known = [n for n in entries if cat.get(n, "GraphFusion")]
    assert len(known) == len(cat.names("GraphFusion"))
    assert not any(entries[n] == "off" and cat.get(n).cannot_switch_off for n in known)
    # with the synthetic names in the catalogue the document is clean
    assert analyse(text, _ctx(sample_catalogue(5000))).findings == []
    assert parse(sample_document(0)).syntax_findings == []


def _ctx(catalogue):
    from fusion_switch.cfg import Context

    return Context(catalogue=catalogue)


_POOL = sorted({n for s in ("GraphFusion", "UBFusion") for n in builtin_catalogue().rules[s]})
_EDITS = st.lists(
    st.tuples(st.sampled_from("dis"), st.integers(0, 80), st.sampled_from("aXZ_1éFusionPas规")),
    max_size=8,
)


def _mutated(base: str, edits) -> str:
    chars = list(base)
    for op, at, char in edits:
        at = min(at, len(chars))
        if op == "d" and chars:
            del chars[min(at, len(chars) - 1)]
        elif op == "i":
            chars.insert(at, char)
        elif chars:
            chars[min(at, len(chars) - 1)] = char
    return "".join(chars)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(_POOL), _EDITS, st.sampled_from([None, "GraphFusion", "UBFusion"]))
def test_misspelt_names_get_difflibs_answers(base, edits, section):
    name = _mutated(base, edits)
    cat = builtin_catalogue()
    assert name_index(cat).suggest(name, section) == cat.suggest(name, section)


def test_pools_with_very_long_names_take_the_unpacked_path():
    """Names of 13,000+ characters would overflow the packed counters; the index then checks
    each candidate directly, with the same answers."""
    from fusion_switch.catalogue import Rule

    cat = sample_catalogue(10)
    long_name = "Fusion" * 2500 + "Pass"
    cat.add(Rule(name=long_name, section="GraphFusion"))
    index = name_index(cat)
    for name in ("ConvBatchnormFusionPas", long_name[:-1] + "X", "Foo", long_name[:9000]):
        assert index.suggest(name, "GraphFusion") == cat.suggest(name, "GraphFusion")
    assert not index._lanes["GraphFusion"].packed
    assert index.suggest(long_name[:-1] + "X", "GraphFusion") == [long_name]
