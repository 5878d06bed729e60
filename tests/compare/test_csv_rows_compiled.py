"""The compiled CSV renderer (``compare/_csv_rows.c``) writes exactly the lines the csv module
writes for ``result_csv.cells()``: on the rows of a real comparison, and on generated rows
whose text holds what needs quoting, neutralising or UTF-8 beyond ASCII. Rows it cannot render
(a value of another type, text that is not valid UTF-8) raise TypeError, and ``render_rows``
falls back to the csv module: the text is the same either way."""

from __future__ import annotations

import pytest
from fusion_switch.compare import result_csv
from fusion_switch.compare.metrics import ALGORITHMS
from fusion_switch.compare.result import ResultRow
from fusion_switch.compare.result_csv import CsvLayout, neutralised, render_rows, written_rows
from hypothesis import given, settings
from hypothesis import strategies as st

compiled = pytest.importorskip("fusion_switch.compare._csv_rows")

LEADS = result_csv._FORMULA_LEAD_TEXT
# text that exercises every branch: separators, quotes, line ends, formula leads and
# semicolons, non-ASCII (Latin-1, CJK, full-width leads, astral), and plain names
SPECIAL = st.sampled_from([",", '"', "\r", "\n", ";", " ", "'", *LEADS, "é", "中", "😀", "NaN"])
TEXT = st.lists(st.one_of(SPECIAL, st.text(max_size=6)), max_size=6).map("".join)
NAMES = st.lists(st.sampled_from(ALGORITHMS), unique=True).map(tuple)


def compiled_text(rows: list[ResultRow], layout: CsvLayout) -> str:
    left, right = layout.left_address, layout.right_address
    return compiled.render(rows, layout.algorithms, left, right, LEADS, neutralised)


@st.composite
def rows(draw) -> ResultRow:
    names = draw(st.lists(st.sampled_from(ALGORITHMS), unique=True))
    return ResultRow(
        index=draw(st.integers(-5, 2**70)),
        op_type=draw(TEXT),
        npu_dump=draw(TEXT),
        ground_truth=draw(TEXT),
        op_name=draw(TEXT),
        tensor_index=draw(st.none() | TEXT),
        shape=draw(st.none() | st.lists(st.integers(-(2**70), 2**70), max_size=40).map(tuple)),
        left_dtype=draw(TEXT),
        left_address=draw(TEXT),
        right_dtype=draw(TEXT),
        right_address=draw(TEXT),
        metric_text={name: draw(TEXT) for name in names},
        fail_reason=draw(st.lists(TEXT, max_size=3)),
    )


@settings(max_examples=400, deadline=None)
@given(st.lists(rows(), max_size=5), NAMES, st.booleans(), st.booleans())
def test_generated_rows_are_written_as_the_csv_module_writes_them(drawn, names, left, right):
    layout = CsvLayout(names, left, right)
    assert compiled_text(drawn, layout) == written_rows(drawn, layout)
    assert render_rows(drawn, layout).text == written_rows(drawn, layout)


def test_the_rows_of_a_real_comparison_are_written_as_the_csv_module_writes_them(tmp_path):
    from fusion_switch.compare.engine import CompareRequest, run_compare
    from fusion_switch.synth.generator import generate_case

    case = generate_case(tmp_path / "case", n_ops=60, seed=5, graph_text=False)
    request = CompareRequest(
        on_dump=str(case.on_dump),
        off_dump=str(case.off_dump),
        on_graph=str(case.on_graph),
        off_graph=str(case.off_graph),
        out_dir=str(tmp_path / "out"),
        workers=1,
    )
    found = run_compare(request).rows
    assert len(found) > 60 and any(row.compared for row in found)
    for layout in (CsvLayout(tuple(ALGORITHMS)), CsvLayout(("CosineSimilarity",), False, True)):
        assert compiled_text(found, layout) == written_rows(found, layout)


def tensor_row(**changes) -> ResultRow:
    values = dict(index=1, op_type="Conv2D", npu_dump="a", ground_truth="b", op_name="a")
    return ResultRow(**{**values, **changes})


@pytest.mark.parametrize(
    "changes",
    [
        {"op_type": None},  # the csv module writes None as an empty cell
        {"op_type": 3},
        {"shape": [1, 2]},  # a list, not a tuple
        {"metric_text": None},
        {"npu_dump": "bad\udcff"},  # a lone surrogate is not UTF-8
    ],
    ids=["none", "int", "list-shape", "no-metric-dict", "surrogate"],
)
def test_a_row_the_renderer_cannot_write_falls_back_to_the_csv_module(changes):
    layout = CsvLayout(("CosineSimilarity",))
    row = tensor_row(**changes)
    with pytest.raises(TypeError):
        compiled_text([row], layout)
    try:
        expected = written_rows([row], layout)
    except Exception as error:  # the csv module's own error stays the one raised
        with pytest.raises(type(error)):
            render_rows([row], layout)
    else:
        assert render_rows([row], layout).text == expected


def test_a_formula_cell_is_neutralised_through_the_python_function(monkeypatch):
    """The renderer hands such cells to result_csv.neutralised, the one definition."""
    seen: list[str] = []

    def spying(cell: str) -> str:
        seen.append(cell)
        return neutralised(cell)

    layout = CsvLayout(())
    row = tensor_row(op_type="=1+1", npu_dump="a;b", ground_truth="-2")
    assert compiled.render([row], (), True, True, LEADS, spying) == written_rows([row], layout)
    assert seen == ["=1+1", "a;b", "-2"]


def test_the_writer_writes_its_own_rows_through_the_renderer(tmp_path, monkeypatch):
    calls: list[int] = []
    real = compiled.render

    def counting(rows, *args):
        calls.append(len(rows))
        return real(rows, *args)

    monkeypatch.setattr(compiled, "render", counting)
    with result_csv.ResultCsvWriter(tmp_path, ["CosineSimilarity"]) as writer:
        writer.write([tensor_row(), tensor_row(index=2)])
        path = writer.commit()
    assert calls == [2]
    assert path.read_bytes().count(b"\r\n") == 3
