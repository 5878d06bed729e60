"""An FFTS+ op's files merged into one dump (readers/ffts_merge.py), and where they are not.

The CSV is held to msaccucmp's by tests/compare/test_ffts_slices_oracle.py; these check the
merged dump itself and the files msaccucmp stops on, named in a SliceError, never merged by a
guess."""

import json

import numpy as np
import pytest
from fusion_switch.readers.dump_write import TensorSpec, write_dump
from fusion_switch.readers.dumpdir import scan_dump_dir
from fusion_switch.readers.ffts_merge import SliceError, read_op_dump

STAMP = 1700000000000000
FULL = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def _threads(folder, parts, *, cut=((1, 2, 1),), ranges=None, attrs=None, sub_format=0):
    """Two auto-mode thread files of op ``r``, thread k holding ``parts[k]`` (one output)."""
    for k, part in enumerate(parts):
        slicing = {
            "threadMode": 1,
            "slice_instance_num": 2,
            "outputCutList": [list(c) for c in cut],
        }
        slicing["output_tensor_slice"] = ranges or [
            [[{"lower": 0, "higher": d} for d in p.shape]] for p in parts
        ]
        write_dump(
            folder / f"Relu.r.3.1.{STAMP + k}.4.7.{k}.0",
            "r",
            [TensorSpec(np.full(3, k, np.float32), address=100 + k)],
            [
                part
                if isinstance(part, TensorSpec)
                else TensorSpec(part, address=0x2000 + k, sub_format=sub_format, format=0)
            ],
            attrs=[("ffts", json.dumps(slicing))] if attrs is None else attrs,
        )
    return scan_dump_dir(folder)


def test_the_merged_dump_joins_the_outputs_and_keeps_the_first_file_s_rest(tmp_path):
    folder = _threads(tmp_path, [FULL[:, :2], FULL[:, 2:]], sub_format=3)
    dump = read_op_dump(folder, "r")
    (output,) = dump.outputs
    assert np.array_equal(dump.array(output), FULL)  # joined along axis 1
    assert (output.address, output.format, output.sub_format) == (0x2000, 0, 0)
    assert np.array_equal(dump.array(dump.inputs[0]), np.zeros(3, np.float32))  # thread 0's
    assert str(dump.path).endswith("/Relu.r.3.1.*")


def test_a_cut_axis_past_the_dims_is_refused_not_joined_along_the_bytes(tmp_path):
    """An axis one past a 3-D part's dims joined the parts' element bytes side by side."""
    folder = _threads(tmp_path, [FULL[:1], FULL[1:]], cut=((1, 1, 1, 2),))
    with pytest.raises(SliceError, match="do not join along axis 3"):
        read_op_dump(folder, "r")


def test_parts_of_two_types_are_refused(tmp_path):
    folder = _threads(tmp_path, [FULL[:, :2], FULL[:, 2:].astype(np.float16)])
    with pytest.raises(SliceError, match="differ in type"):
        read_op_dump(folder, "r")


def test_more_cut_entries_than_outputs_are_refused(tmp_path):
    folder = _threads(tmp_path, [FULL[:, :2], FULL[:, 2:]], cut=((1, 2, 1), (2,)))
    with pytest.raises(SliceError, match="2 entries for 1 output"):
        read_op_dump(folder, "r")


def test_a_thread_without_its_ranges_is_named(tmp_path):
    ranges = [[[{"lower": 0, "higher": 2}, {"lower": 0, "higher": 2}, {"lower": 0, "higher": 4}]]]
    folder = _threads(tmp_path, [FULL[:, :2], FULL[:, 2:]], ranges=ranges)
    with pytest.raises(SliceError, match="ranges of thread 1") as caught:
        read_op_dump(folder, "r")
    assert caught.value.path.endswith(".4.7.1.0") and not caught.value.rows


def test_a_part_its_ranges_do_not_fit_gives_msaccucmp_s_rows(tmp_path):
    ranges = [[[{"lower": 0, "higher": 2}, {"lower": 0, "higher": 2}, {"lower": 0, "higher": 3}]]]
    ranges.append(ranges[0])
    folder = _threads(tmp_path, [FULL[:, :2], FULL[:, 2:]], ranges=ranges)
    with pytest.raises(SliceError, match="holds 16 element") as caught:
        read_op_dump(folder, "r")
    assert caught.value.rows  # msaccucmp's own error: its rows stand, without numbers


def test_a_slicing_attribute_that_is_no_json_is_refused(tmp_path):
    folder = _threads(tmp_path, [FULL[:, :2], FULL[:, 2:]], attrs=[("ffts", "threadMode=1")])
    with pytest.raises(SliceError, match="not the JSON of threadMode"):
        read_op_dump(folder, "r")


def test_a_later_file_whose_attribute_has_no_thread_mode_is_named(tmp_path):
    """msaccucmp reads every file's attribute and stops on one without threadMode."""
    folder = _threads(tmp_path, [FULL[:, :2], FULL[:, 2:]])
    second = folder.entries("r")[1].path
    write_dump(second, "r", outputs=[TensorSpec(FULL[:, 2:])], attrs=[("ffts", "{}")])
    with pytest.raises(SliceError, match="not the JSON of threadMode") as caught:
        read_op_dump(scan_dump_dir(tmp_path), "r")
    assert caught.value.path == str(second)
