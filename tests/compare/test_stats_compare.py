"""compare.stats_compare on statistics CSVs: MindSpore's columns and CANN's stats headers."""

from __future__ import annotations

import math

import pytest
from fusion_switch.compare.stats_compare import compare_stats, rendered_outputs
from fusion_switch.readers.stats import StatsError, read_stats_csv

CANN_HEADER = (
    "Op Type,Op Name,Task ID,Stream ID,Timestamp,Input/Output,Index,Data Size,Data Type,"
    "Format,Shape,Max Value,Min Value,Avg Value,Count,Nan Count,Negative Inf Count,"
    "Positive Inf Count\n"
)


def cann_csv(path, rows):
    path.write_text(CANN_HEADER + "".join(",".join(map(str, r)) + "\n" for r in rows))
    return read_stats_csv(path)


def row(name, io, slot, mx, mn, avg, nan=0, dtype="DT_FLOAT16", shape='"[2,3]"'):
    return ["Conv2D", name, 1, 0, 17, io, slot, 12, dtype, "NCHW", shape, mx, mn, avg, 6, nan, 0, 0]


def test_cann_stats_headers_are_read_by_name(tmp_path):
    stats = cann_csv(tmp_path / "a.csv", [row("conv1", "Input", 0, 1.5, -1, 0.25)])
    (r,) = stats.rows
    assert (r.op_name, r.io, r.slot, r.dtype) == ("conv1", "input", 0, "DT_FLOAT16")
    assert r.shape == (2, 3)
    assert r.stats == {
        "max": 1.5, "min": -1.0, "mean": 0.25, "count": 6.0, "nan": 0.0, "neg_inf": 0.0,
        "pos_inf": 0.0,
    }  # fmt: skip
    assert stats.statistics == ["max", "min", "mean", "count", "nan", "neg_inf", "pos_inf"]


def test_drift_nan_dtype_and_missing_tensors_in_execution_order(tmp_path):
    on = cann_csv(
        tmp_path / "on.csv",
        [
            row("a", "Output", 0, 1.0, 0.0, 0.5),
            row("b", "Output", 0, 1.3, 0.0, 0.5),  # max drifts by 30 %
            row("c", "Output", 0, "nan", 0.0, 0.5, nan=2),
            row("d", "Output", 0, 1.0, 0.0, 0.5, dtype="DT_FLOAT"),
            row("e", "Output", 0, 1.0, 0.0, 0.5),
        ],
    )
    off = cann_csv(
        tmp_path / "off.csv",
        [
            row("a", "Output", 0, 1.0, 0.0, 0.5),
            row("b", "Output", 0, 1.0, 0.0, 0.5),
            row("c", "Output", 0, 1.0, 0.0, 0.5),
            row("d", "Output", 0, 1.0, 0.0, 0.5),
            row("f", "Output", 0, 1.0, 0.0, 0.5),
        ],
    )
    result = compare_stats([("g0", on, off)], threshold=0.01)
    assert [(t.op_name, t.status) for t in result.tensors] == [
        ("a", "match"),
        ("b", "drift"),
        ("c", "nan_inf"),
        ("d", "dtype"),
        ("e", "only_on"),
        ("f", "only_off"),
    ]
    assert result.tensors[1].rel["max"] == pytest.approx(0.3)
    assert math.isinf(result.tensors[2].rel["max"])
    assert result.first_divergence().op_name == "b"
    counts = result.counts()
    assert (counts["compared"], counts["ops"], counts["drift"]) == (4, 6, 1)
    (csv_path, csv_text), (summary_path, summary_text) = rendered_outputs(result, tmp_path)
    assert (csv_path.name, summary_path.name) == ("stats_compare.csv", "stats_summary.json")
    assert csv_text.count("\n") == 7
    assert "need tensor dumps" in summary_text


def test_a_bad_statistics_csv_names_file_and_line(tmp_path):
    path = tmp_path / "statistic.csv"
    path.write_text("Op Type,Op Name,IO,Slot,Max Value\nAdd,a,output,0,abc\n")
    with pytest.raises(StatsError, match=r"statistic\.csv: line 2: max 'abc' is not a number"):
        read_stats_csv(path)
    path.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(StatsError, match="not a statistics dump CSV"):
        read_stats_csv(path)
