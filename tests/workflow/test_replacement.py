"""replacement_edit: applying it gives the new text; its ends never split a CRLF."""

from __future__ import annotations

from fusion_switch.cfg import apply_edits
from fusion_switch.workflow.replacement import replacement_edit
from hypothesis import given
from hypothesis import strategies as st

TEXTS = st.text(alphabet="ab\r\n{}", max_size=30)


@given(TEXTS, TEXTS)
def test_applying_the_edit_gives_the_new_text(old: str, new: str) -> None:
    edit = replacement_edit(old, new)
    if old == new:
        assert edit is None
        return
    assert apply_edits(old, [edit]) == new
    for offset in (edit.span.start, edit.span.end):
        assert not (0 < offset < len(old) and old[offset - 1] == "\r" and old[offset] == "\n")


def test_only_the_changed_middle_is_replaced() -> None:
    edit = replacement_edit('{"a": "on"}\n', '{"a": "off"}\n')
    assert (edit.span.start, edit.span.end, edit.new_text) == (8, 9, "ff")
