"""``_converts_safely`` in C (readers/_attr_check.c) against its Python definition: the same
answer for any raw attribute map, well-formed or not, and ``unsafe_attr_maps`` the same items
as filtering them one by one (issue 16: ~10,000 maps are checked per 5,000-op graph)."""

from __future__ import annotations

import pytest
from fusion_switch.readers import graph_model
from fusion_switch.readers.graph_model import _converts_safely_python, unsafe_attr_maps
from hypothesis import given, settings
from hypothesis import strategies as st

_attr_check = pytest.importorskip("fusion_switch.readers._attr_check", reason="C not built")
SETS = (graph_model._SIMPLE_MEMBERS, graph_model._RISKY_LIST_MEMBERS, graph_model._RISKY_MEMBERS)
MEMBERS = st.sampled_from(
    ["s", "i", "f", "b", "bt", "dt", "td", "t", "g", "na", "func", "list", "list_list_int",
     "list_list_float", "other", ""]
)  # fmt: skip
SCALARS = st.one_of(st.none(), st.integers(-2, 2), st.text(max_size=3), st.booleans())
ITEMS = st.one_of(SCALARS, st.lists(SCALARS, max_size=3), st.dictionaries(MEMBERS, SCALARS))
ATTR_DEFS = st.one_of(
    st.none(),
    SCALARS,
    st.lists(SCALARS, max_size=2),
    st.dictionaries(MEMBERS, st.one_of(ITEMS, st.dictionaries(MEMBERS, ITEMS)), max_size=4),
)
RAW_MAPS = st.dictionaries(st.text(max_size=4), ATTR_DEFS, max_size=5)


@settings(max_examples=1500, deadline=None)
@given(RAW_MAPS)
def test_the_compiled_check_answers_as_the_definition(raw):
    assert _attr_check.converts_safely(raw, *SETS) is _converts_safely_python(raw)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(RAW_MAPS, st.none(), st.just({})), max_size=8))
def test_the_unsafe_maps_are_the_ones_filtering_finds(raws):
    class Item:
        def __init__(self, raw):
            self.raw_attrs = raw

    items = [Item(raw) for raw in raws]
    expected = [i for i in items if i.raw_attrs and not _converts_safely_python(i.raw_attrs)]
    assert unsafe_attr_maps(items) == expected


def test_wrong_arguments_are_type_errors():
    with pytest.raises(TypeError):
        _attr_check.converts_safely([], *SETS)
    with pytest.raises(TypeError):
        _attr_check.converts_safely({}, *SETS[:2])
    with pytest.raises(TypeError):
        _attr_check.unsafe_positions(({},), *SETS)
    assert _attr_check.unsafe_positions([{}, {"a": None}], *SETS) == []
