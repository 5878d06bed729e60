"""The merged dump of an FFTS+ op against msaccucmp's own (``DumpInfo.get_op_dump_data``,
its FFTSParser) on random thread and slice files: outputs cut along random axes into parts of
random sizes, in float32 or float16, with or without a second output (cut or not, or left out
of outputCutList), headers giving the part's shape or the whole one. Where msaccucmp merges,
every output must be its: values, type, shape, address, and the first file's inputs; where it
fails (an error or a crash), ours must refuse, never merge."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from fusion_switch.readers.dump import DumpError
from fusion_switch.readers.dump_write import TensorSpec, write_dump
from fusion_switch.readers.dumpdir import scan_dump_dir
from fusion_switch.readers.ffts_merge import read_op_dump
from hypothesis import event, given, settings
from hypothesis import strategies as st
from oracle import make_importable, patch_dump_parser

pytestmark = pytest.mark.oracle

STAMP = 1700000000000000


@st.composite
def _output(draw, files: int):
    """(parts, cut entry, dtype): one output's parts, one a file."""
    rank = draw(st.integers(1, 3))
    dims = [draw(st.integers(1, 3)) for _ in range(rank)]
    dtype = draw(st.sampled_from([np.float32, np.float16]))
    if draw(st.booleans()):  # cut along an axis into parts of their own sizes
        axis = draw(st.integers(0, rank - 1))
        sizes = [draw(st.integers(1, 3)) for _ in range(files)]
        parts = []
        for k, size in enumerate(sizes):
            shape = [*dims[:axis], size, *dims[axis + 1 :]]
            parts.append((np.arange(np.prod(shape)) + 100 * k).reshape(shape).astype(dtype))
        cut = [files if d == axis else 1 for d in range(rank)]
    else:  # not cut: every file holds a whole tensor of its own values
        parts = [
            (np.arange(np.prod(dims)) - 7 * k).reshape(dims).astype(dtype) for k in range(files)
        ]
        cut = [1] * rank
    return parts, cut


@st.composite
def _case(draw):
    files = draw(st.integers(2, 4))
    outputs = draw(st.lists(_output(files), min_size=1, max_size=2))
    auto = draw(st.booleans())
    cuts = [cut for _, cut in outputs][: draw(st.integers(1, len(outputs)))]
    if draw(st.integers(0, 9)) == 0:  # an entry for an output there is not
        cuts.append([files])
    whole_headers = draw(st.integers(0, 3)) == 0  # headers say more than the part holds
    stamps = draw(st.permutations(range(files)))
    short = draw(st.sampled_from([None] * 9 + list(range(files))))  # a thread without ranges
    modeless = draw(st.sampled_from([None] * 9 + list(range(1, files))))  # no threadMode
    return files, outputs, auto, cuts, whole_headers, stamps, short, modeless


def _write(folder: Path, case) -> None:
    files, outputs, auto, cuts, whole_headers, stamps, short, modeless = case
    ranges = [
        [[{"lower": 0, "higher": d} for d in parts[k].shape] for parts, _ in outputs]
        for k in range(files)
        if k != short
    ]
    slicing = {"threadMode": int(auto), "slice_instance_num": files, "outputCutList": cuts}
    slicing["output_tensor_slice"] = ranges
    for k in range(files):
        name = "r" if auto else f"r_lxslice{k}"
        tail = f"4.7.{k}.0" if auto else f"4.{10 + k}.0.0"
        specs = []
        for index, (parts, _) in enumerate(outputs):
            part = parts[k]
            # a header too big for its bytes is refused unmerged (README): on cut outputs only
            whole = whole_headers and index == 0 and cuts[0] == outputs[0][1] and files in cuts[0]
            shape = tuple(d + 1 for d in part.shape) if whole else None
            specs.append(TensorSpec(part, shape=shape, address=0x1000 * (k + 1) + index))
        write_dump(
            folder / f"Relu.{name}.3.1.{STAMP + stamps[k]}.{tail}",
            name,
            [TensorSpec(np.full(2, k, np.float32), address=k + 1)],
            specs,
            attrs=[("ffts", json.dumps(slicing if k != modeless else {"outputCutList": cuts}))],
        )


def _theirs(folder: Path):
    make_importable()
    patch_dump_parser()
    from dump_parse.dump import DumpInfo

    info = DumpInfo(str(folder), 2, False, "graph.json")
    info._make_op_name_to_file_map()
    try:
        return info.get_op_dump_data("r")[1]
    except Exception as error:  # its CompareError, or a crash (IndexError, ValueError...)
        return error


@settings(max_examples=100, deadline=None)
@given(_case())
def test_the_merge_is_msaccucmp_s_or_refused(case):
    with tempfile.TemporaryDirectory() as root:
        folder = Path(root)
        _write(folder, case)
        theirs = _theirs(folder)
        if isinstance(theirs, Exception):
            event(f"msaccucmp fails: {type(theirs).__name__}")
            with pytest.raises(DumpError):
                read_op_dump(scan_dump_dir(folder), "r")
            return
        event("merged")
        ours = read_op_dump(scan_dump_dir(folder), "r")
        assert len(ours.outputs) == len(theirs.output_data)
        for tensor, expected in zip(ours.outputs, theirs.output_data, strict=True):
            values = ours.array(tensor)
            assert list(tensor.shape) == list(expected.shape)
            assert values.dtype == expected.data.dtype
            assert np.array_equal(values.reshape(-1), expected.data.reshape(-1))
            assert tensor.data_type == expected.data_type
            assert str(tensor.address) == str(expected.address)  # its text: the CSV's cell
        (first,) = theirs.input_data
        assert np.array_equal(ours.array(ours.inputs[0]), first.data)
