"""The report's escaping equals ``html.escape(str(value), quote=True)`` for any value (it only
skips the replacements when there is nothing to replace)."""

from __future__ import annotations

import html

from fusion_switch.diagnose.markup import escape
from hypothesis import given
from hypothesis import strategies as st


@given(st.one_of(st.text(), st.text(alphabet="&<>\"'ab;#x"), st.integers(), st.floats(), st.none()))
def test_escape_is_html_escape(value):
    assert escape(value) == html.escape(str(value), quote=True)


def test_every_special_character_is_escaped():
    assert escape("a&b<c>d\"e'f") == "a&amp;b&lt;c&gt;d&quot;e&#x27;f"
    assert escape("conv1/relu") == "conv1/relu"
