"""Memory bounded by what the input needs, not by what it declares or repeats (issue 12).

Each reproduction from the issue runs in-process under `tracemalloc`; the peak of Python
allocations must stay under a cap far below what the old code took (1.7-1.8 GB), with room for
the input itself. Times are printed by `tests/benchmarks/bench_bad_input.py`, not asserted.
"""

from __future__ import annotations

import tracemalloc

import pytest
from fusion_switch.cfg import parse
from fusion_switch.readers.dump import DumpError, read_dump
from fusion_switch.readers.graph_file import GraphError
from fusion_switch.readers.graph_text import parse_graph_text, unescape

MB = 1 << 20


def peak_of(fn) -> tuple[object, int]:
    """(result or raised exception, peak traced bytes) of `fn()`."""
    tracemalloc.start()
    try:
        try:
            result = fn()
        except Exception as error:
            result = error
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def text_graph(value: str) -> list[str]:
    return ["graph {\n", '  name: "g"\n', "  op {\n", f"    name: {value}\n", "  }\n", "}\n"]


def test_unterminated_10mb_string_in_a_text_graph():
    lines = text_graph('"' + "a" * (10 * MB))
    result, peak = peak_of(lambda: parse_graph_text(lines, "big.txt"))
    assert isinstance(result, GraphError) and "never closed" in str(result)
    assert "big.txt:4:" in str(result)
    assert peak < 100 * MB, peak / MB


def test_10mb_of_escaped_quotes_in_a_text_graph():
    lines = text_graph('"' + '\\"' * (5 * MB) + '"')
    result, peak = peak_of(lambda: parse_graph_text(lines, "quotes.txt"))
    assert not isinstance(result, Exception), result
    assert result["graph"][0]["op"][0]["name"] == '"' * (5 * MB)
    assert peak < 200 * MB, peak / MB


def test_octal_escapes_decode_to_the_right_bytes():
    """Half a megabyte of octal escapes (each escape copied the rest of the string before:
    quadratic); bench_bad_input.py times 2 and 10 MB."""
    literal = '"' + "\\101\\7\\0123" * (MB // 20) + '"'
    result, peak = peak_of(lambda: unescape(literal))
    assert result == b"A\x07\n3" * (MB // 20)
    assert peak < 100 * MB, peak / MB


@pytest.mark.parametrize("entries", [1_000_000])
def test_dump_header_declaring_a_million_empty_outputs(tmp_path, entries):
    header = b"\x32\x03Add" + b"\x1a\x00" * entries  # op_name, then `entries` empty outputs
    path = tmp_path / "Add.many.1.0.123"
    path.write_bytes(len(header).to_bytes(8, "little") + header)
    result, peak = peak_of(lambda: read_dump(path))
    assert isinstance(result, DumpError), result
    assert str(path) in str(result) and "more than" in str(result)
    assert peak < 100 * MB, peak / MB


def test_10mb_of_escaped_quotes_in_a_configuration():
    """The cfg parser had the same backtracking string pattern: 1 GB for this paste."""
    text = '{"Switch": {"GraphFusion": {"' + '\\"' * (5 * MB) + '": "on"}}}'
    document, peak = peak_of(lambda: parse(text))
    assert not isinstance(document, Exception), document
    assert not document.syntax_findings
    assert peak < 200 * MB, peak / MB
