"""Result rows survive the trip from a worker process unchanged (they are pickled in bulk)."""

from __future__ import annotations

import pickle

from fusion_switch.compare.result import ResultRow


def _row(**extra) -> ResultRow:
    values = {
        "index": 3,
        "op_type": "Conv2D",
        "npu_dump": "conv1",
        "ground_truth": "conv1,bn1",
        "op_name": "conv1",
        "tensor_index": "conv1:output:0",
        "kind": "output",
        "position": 0,
        "shape": (1, 16, 8, 8),
        "left_dtype": "float16",
        "metrics": {"CosineSimilarity": 0.5, "MaxAbsoluteError": None},
        "metric_text": {"CosineSimilarity": "0.500000", "MaxAbsoluteError": "NaN"},
        "std": ((0.0, 1.0), (0.5, 2.0)),
        "fail_reason": ["a reason"],
        "right_op": "bn1",
        "right_output_index": 0,
        "left_path": "/d/Conv2D.conv1.1.2.1700000000000000",
        "messages": ["why"],
    }
    values.update(extra)
    return ResultRow(**values)


def test_a_row_round_trips_through_pickle_field_for_field():
    row = _row()
    again = pickle.loads(pickle.dumps(row, protocol=pickle.HIGHEST_PROTOCOL))
    assert again == row and again is not row
    assert list(again.metrics) == list(row.metrics)  # column order kept
    assert list(again.metric_text) == list(row.metric_text)


def test_a_row_whose_cells_are_keyed_differently_round_trips_too():
    row = _row(metric_text={"MaxAbsoluteError": "NaN", "CosineSimilarity": "0.500000"})
    again = pickle.loads(pickle.dumps(row))
    assert again == row and list(again.metric_text) == ["MaxAbsoluteError", "CosineSimilarity"]
    op_row = ResultRow(3, "Conv2D", "conv1", "*", "conv1")  # no tensor, no metrics
    assert pickle.loads(pickle.dumps(op_row)) == op_row


def test_every_field_comes_back_in_its_own_place():
    """The unpickler names each field (no slicing of one long tuple): with a distinct value in
    every field, a field swapped or shifted on the way would show."""
    from dataclasses import fields

    row = _row(
        npu_dump="conv1,relu1",
        right_output_index=1,
        left_address="0x1",
        right_dtype="float32",
        right_address="0x2",
        right_path="/d/right",
        messages=["m1", "m2"],
    )
    again = pickle.loads(pickle.dumps([row, row], protocol=pickle.HIGHEST_PROTOCOL))
    values = [getattr(row, f.name) for f in fields(ResultRow)]
    assert len({repr(value) for value in values}) == len(values)  # all distinct
    for copy in again:
        assert [getattr(copy, f.name) for f in fields(ResultRow)] == values
