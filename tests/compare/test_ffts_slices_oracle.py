"""FFTS+ dumps (auto-mode threads, manual-mode ``_lxslice`` files) against the real msaccucmp.

msaccucmp files an FFTS+ op's thread or slice files under one op and merges their outputs
along the cut axis its slicing attribute gives; we set them aside ("slices are not merged")
or compared one thread's part with the whole tensor. Each case of :mod:`ffts_cases` must give
a byte-identical CSV; where msaccucmp stops, we compare the rest and say why in the op's row.
"""

from __future__ import annotations

import pytest
from ffts_cases import CASES
from fusion_switch.compare.engine import CompareRequest, run_compare
from fusion_switch.compare.result_csv import read_result_csv
from fusion_switch.diagnose.evidence import EvidenceStore, MissingEvidence
from fusion_switch.readers.dumpdir import scan_dump_dir
from oracle import OracleUnavailable, run_msaccucmp

pytestmark = pytest.mark.oracle

# msaccucmp stops on these (no CSV, or its header alone): ours is checked below instead
STOPS = {
    "auto_no_device_field",
    "auto_no_attr",
    "auto_no_attr_fusion_off",
    "six_field_name_stream7",
}


def _both(root, name):
    return run_both(root, CASES[name](root / "case"))


def run_both(root, case):
    """msaccucmp's CSV (or why it wrote none) and our outcome on ``case``."""
    try:
        theirs = run_msaccucmp(*case, root / "msaccucmp")
    except OracleUnavailable as stopped:
        theirs = stopped
    outcome = run_compare(CompareRequest(*case, root / "ours", workers=1))
    return theirs, outcome


@pytest.mark.parametrize("name", sorted(set(CASES) - STOPS))
def test_the_csv_is_msaccucmp_s_byte_for_byte(tmp_path, name):
    theirs, outcome = _both(tmp_path, name)
    assert outcome.csv_path.read_text() == theirs.read_text()


def _rows(outcome):
    return {row.tensor_index or row.npu_dump: row for row in outcome.rows}


def test_merged_threads_are_compared_whole(tmp_path):
    _, outcome = _both(tmp_path, "auto_two_threads")
    row = _rows(outcome)["f:output:0"]
    assert row.compared and row.shape == (8,)
    assert row.left_path.endswith("/Relu.f.3.1.*")  # msaccucmp's name of a merged tensor


def test_without_the_slicing_attribute_the_op_says_why_and_the_rest_is_compared(tmp_path):
    theirs, outcome = _both(tmp_path, "auto_no_attr")
    assert read_result_csv(theirs)[1] == []  # msaccucmp stopped: its header alone
    rows = _rows(outcome)
    assert "no slicing attribute" in rows["f"].fail_reason[0]
    assert "Relu.f.3.1.1700000000000000.4.7.0.0" in rows["f"].fail_reason[0]
    assert rows["n:output:0"].compared


def test_fusion_off_files_without_the_slicing_attribute_are_named_in_the_rows(tmp_path):
    theirs, outcome = _both(tmp_path, "auto_no_attr_fusion_off")
    assert isinstance(theirs, OracleUnavailable) or read_result_csv(theirs)[1] == []
    reason = _rows(outcome)["f:output:0"].fail_reason[0]
    assert "no slicing attribute" in reason and "/off/Relu.b.3.1.1700000000000000" in reason
    assert _rows(outcome)["n:output:0"].compared


def test_a_name_whose_task_type_field_is_no_task_type_is_named(tmp_path):
    theirs, outcome = _both(tmp_path, "auto_no_device_field")
    assert isinstance(theirs, OracleUnavailable) and "exit status 37" in str(theirs)
    rows = _rows(outcome)
    reason = rows["f"].fail_reason[0]
    assert "task type" in reason and "Relu.f.3.1.170000000000000" in reason
    print(reason)
    assert rows["n:output:0"].compared


def test_a_single_six_field_dump_is_compared_where_msaccucmp_stops(tmp_path):
    theirs, outcome = _both(tmp_path, "six_field_name_stream7")
    assert isinstance(theirs, OracleUnavailable) and "exit status 37" in str(theirs)
    assert _rows(outcome)["f:output:0"].compared  # one normal file: nothing to merge


def test_parts_that_do_not_fit_give_msaccucmp_s_rows_and_say_why(tmp_path):
    _, outcome = _both(tmp_path, "manual_parts_do_not_fit")
    assert any("holds 4 element(s)" in error for error in outcome.errors)


def test_the_replay_reads_the_merged_tensor_or_says_why_not(tmp_path):
    """The replay's evidence read the newest thread's file as the whole tensor (a review)."""
    on_dump, off_dump, *_ = CASES["auto_two_threads"](tmp_path / "merged")
    store = EvidenceStore(scan_dump_dir(on_dump), scan_dump_dir(off_dump))
    assert store.tensor("on", "f", "output", 0).shape == (4, 2)
    with pytest.raises(MissingEvidence, match="first file's part only"):
        store.tensor("on", "f", "input", 0)  # thread 0's rows of the input, not the input
    on_dump, off_dump, *_ = CASES["auto_no_attr"](tmp_path / "unmerged")
    store = EvidenceStore(scan_dump_dir(on_dump), scan_dump_dir(off_dump))
    with pytest.raises(MissingEvidence, match="no slicing attribute"):
        store.tensor("on", "f", "output", 0)
