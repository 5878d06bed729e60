"""Where lines start, as the LSP specification counts them (`cfg.lines`): the editor's
positions and `check`'s line:column both use it."""

from __future__ import annotations

from fusion_switch.cfg.lines import line_starts
from hypothesis import given
from hypothesis import strategies as st


@given(
    text=st.text(
        alphabet=st.sampled_from(list("ab中\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")),
        max_size=60,
    )
)
def test_line_starts_are_where_lsp_lines_start(text: str) -> None:
    """The fast path (`str.splitlines` where `\\n` is the only break) and the general one give
    the lines of the LSP specification: after each `\\n`, `\\r\\n` or `\\r`, nowhere else."""
    expected = [0]
    for offset, char in enumerate(text):
        if char == "\n" or (char == "\r" and text[offset + 1 : offset + 2] != "\n"):
            expected.append(offset + 1)
    assert line_starts(text) == expected
    assert line_starts(text.replace("\r", "")) == line_starts(text.replace("\r", ""), False)
