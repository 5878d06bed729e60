"""What one comparing worker is counted for under ``--memory-budget`` (issue 16).

The estimate was 96 MB plus 8x the largest group's dump bytes, whatever the dtype. Measured on
one tensor pair (the general path: values read, aligned, float32 work buffers), a worker held
14-15 bytes per int8 dump byte with the compiled kernel and 31-32 with numpy's metrics, and
16 per float16 byte with numpy's: a budget was not held for those. Each test below measures the
real peak of a fresh process and holds the estimate to it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from fusion_switch.compare.worker_memory import (
    WORKER_BASE_BYTES,
    largest_op_need,
    op_need,
    widest_bits,
    worker_bytes,
    workers_within,
)
from fusion_switch.readers.dump_write import TensorSpec, write_dump
from fusion_switch.readers.formats import FORMAT_CODES
from fusion_switch.readers.graph_model import Graph, Op, TensorDesc
from fusion_switch.readers.layout import to_device

HERE = Path(__file__).resolve().parent

# Measured in a fresh process that only reads the two dumps (large temporaries made before
# would stay in its heap and hide the growth): the calls GroupComparer makes for a file too
# large to be held whole, on the general path or the direct one; prints the peak's growth.
_PEAK_SCRIPT = """
import sys
import numpy as np
sys.path.insert(0, {here!r})
from test_measure_raw import {row_of}
from fusion_switch.readers.dump import read_dump

L, R = read_dump(sys.argv[1]), read_dump(sys.argv[2])
base = int(open("/proc/self/statm").read().split()[1]) * 4096
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # the peak (VmHWM) starts again from here
with np.errstate(all="ignore"):
    row = {row_of}(L, L.outputs[0], R, R.outputs[0])
assert row is not None, "the direct path did not take the pair"
assert row.metrics["CosineSimilarity"] is not None, row.fail_reason
peak = [int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmHWM")][0]
print(peak - base, L.file_size)
"""


def write_pair(folder: Path, left_type: str, right_type: str, layout: str) -> tuple[Path, Path]:
    """A fused op's dump with one large output (1, 64, 128, 128) in ``layout``, and its
    fusion-off dump in NCHW."""
    shape = (1, 64, 128, 128)
    rng = np.random.default_rng(0)
    if left_type[-2] in "iu":
        values = rng.integers(-100, 100, shape).astype(left_type)
    else:
        values = rng.standard_normal(shape).astype(left_type)
    device = to_device(values, layout)
    left = write_dump(
        folder / "left",
        "Left",
        outputs=[
            TensorSpec(
                device, format=FORMAT_CODES[layout], shape=device.shape, original_shape=shape
            )
        ],
    )
    other = (values.astype(np.float64) * 1.001).astype(right_type)
    right = write_dump(
        folder / "right", "Right", outputs=[TensorSpec(other, format=FORMAT_CODES["NCHW"])]
    )
    return left, right


NAMES = {"i1": "DT_INT8", "<f2": "DT_FLOAT16", "<f4": "DT_FLOAT", "<f8": "DT_DOUBLE"}
NAMES.update({"<i4": "DT_INT32", "<i8": "DT_INT64"})


def measured_growth(
    paths: tuple[Path, Path], kernel: bool, row_of: str = "general_row"
) -> tuple[int, int]:
    """The peak's growth while the pair is compared (``row_of``: ``general_row`` or
    ``direct_row`` of ``test_measure_raw``), and the fusion-on file's size."""
    env = dict(os.environ)
    env.pop("FUSION_SWITCH_METRICS", None)
    if not kernel:
        env["FUSION_SWITCH_METRICS"] = "numpy"
    script = _PEAK_SCRIPT.format(here=str(HERE), row_of=row_of)
    result = subprocess.run(
        [sys.executable, "-c", script, *map(str, paths)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    growth, file_size = (int(word) for word in result.stdout.split())
    return growth, file_size


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux's VmHWM")
@pytest.mark.parametrize("kernel", [True, False], ids=["kernel", "numpy"])
@pytest.mark.parametrize(
    ("left", "right", "layout"),
    [
        ("i1", "i1", "NCHW"),
        ("i1", "<f4", "NC1HWC0"),
        ("<f2", "<f2", "NC1HWC0"),
        ("<f2", "<f4", "NCHW"),
        ("<f4", "<f4", "NCHW"),
        ("<f2", "<f8", "NCHW"),
        ("<f2", "<f8", "NC1HWC0"),
        ("<f8", "<f8", "NCHW"),
        ("<i4", "<i4", "NCHW"),
        ("<i8", "<f2", "NCHW"),
    ],
)
def test_a_workers_estimate_holds_what_it_measures(left, right, layout, kernel, tmp_path):
    """The estimate for the fusion-on dump (its size and dtype, as the graph names it, against
    the fusion-off graph's widest dtype) is at least what comparing its tensor really takes,
    in either metrics path. A float64 fusion-off tensor against a float16 one took 24.4 MB
    with the kernel where 21.0 MB was counted, when the fusion-off side was not looked at."""
    from fusion_switch.compare import metrics

    if kernel and not metrics.kernel_in_use():
        pytest.skip("the compiled kernel is not built here")
    growth, file_size = measured_growth(write_pair(tmp_path, left, right, layout), kernel)
    assert growth > file_size  # the measure is real: the values and their work buffers
    assert op_need(file_size, [NAMES[left]], kernel, widest_bits([NAMES[right]])) >= growth


def test_a_narrower_dtype_needs_more_per_dumped_byte():
    megabyte = 1 << 20
    int8, half, single = (
        op_need(megabyte, [t], True) for t in ("DT_INT8", "DT_FLOAT16", "DT_FLOAT")
    )
    assert int8 > half > single
    assert op_need(megabyte, ["DT_FLOAT16"], False) > half  # numpy's metrics hold more
    # an op's narrowest dtype decides; a dtype the graph does not name counts as one byte
    assert op_need(megabyte, ["DT_FLOAT", "DT_INT8"], True) == int8
    assert op_need(megabyte, ["", "DT_NOT_A_TYPE"], True) == int8
    assert op_need(0, ["DT_INT8"], True) == 0


class _Folder:
    """A dump folder's index with given sizes (``DumpDir.latest_bytes``)."""

    def __init__(self, sizes: dict[str, int]) -> None:
        self.sizes = sizes

    def latest_bytes(self, name: str) -> int:
        return self.sizes.get(name, 0)


def test_a_group_of_ops_is_counted_by_its_largest_op_not_their_sum():
    """A worker holds one tensor pair at a time: a group of several ops (one Index, L1 fusion)
    needs its largest op's share, as the replay's fit counts it (they disagreed before)."""
    ops = [Op(name, "Conv2D", output_descs=[TensorDesc(dtype="DT_FLOAT16")]) for name in "abc"]
    graph = Graph(name="g", ops=ops)
    folder = _Folder({"a": 10 << 20, "b": 30 << 20, "c": 20 << 20})
    most = largest_op_need(graph, folder, kernel=True)
    assert most == op_need(30 << 20, ["DT_FLOAT16"], True)
    assert worker_bytes(most) == WORKER_BASE_BYTES + most
    assert largest_op_need(Graph(name="empty"), folder, kernel=True) == 0


def test_an_ops_int8_input_counts_with_its_float16_outputs():
    """A quantised op reads int8 and writes float16; its dump holds both (the fusion-on graph
    is read without input descs: the producer's output desc names the input's dtype)."""
    producer = Op("quant", "AscendQuant", output_descs=[TensorDesc(dtype="DT_INT8")])
    conv = Op(
        "conv",
        "Conv2D",
        inputs=["quant:0", "ctrl:-1"],
        output_descs=[TensorDesc(dtype="DT_FLOAT16")],
    )
    graph = Graph(name="g", ops=[producer, conv])
    folder = _Folder({"conv": 1 << 20})
    assert largest_op_need(graph, folder, True) == op_need(1 << 20, ["DT_INT8"], True)


def test_workers_within_a_budget():
    assert workers_within(10 << 30, 1 << 20) > 8
    assert workers_within(100 << 20, 1 << 20) == 1  # below one worker's need: still one
    assert workers_within(1 << 30, 0) == (1 << 30) // WORKER_BASE_BYTES


def test_the_fusion_off_graphs_widest_dtype_is_read_with_its_digest():
    """``engine.pair`` and the replay's fit count the fusion-off side by the widest dtype its
    graph names, which the helper finds while it digests the graph."""
    from fusion_switch.compare.pairing import graph_digest

    def graph(*dtypes: str) -> Graph:
        ops = [
            Op(f"op{i}", "Add", output_descs=[TensorDesc(dtype=t)]) for i, t in enumerate(dtypes)
        ]
        return Graph(name="g", ops=ops)

    digest = graph_digest(graph("DT_FLOAT16", "DT_DOUBLE", "DT_INT8", "DT_FLOAT16"))
    assert digest.output_dtypes == {"DT_FLOAT16", "DT_DOUBLE", "DT_INT8"}
    assert widest_bits(digest.output_dtypes) == 64
    assert widest_bits(graph_digest(graph("DT_FLOAT16", "DT_NOT_A_TYPE", "")).output_dtypes) == 16
    assert widest_bits(graph_digest(graph()).output_dtypes) == 0
    megabyte = 1 << 20
    half = op_need(megabyte, ["DT_FLOAT16"], True)
    assert op_need(megabyte, ["DT_FLOAT16"], True, 64) == half + (megabyte // 2) * 4
    # a narrower fusion-off side still counts as float32 (the metrics' precision)
    assert op_need(megabyte, ["DT_FLOAT16"], True, 8) == half
    assert largest_op_need(graph("DT_FLOAT16"), _Folder({"op0": megabyte}), True, 64) == op_need(
        megabyte, ["DT_FLOAT16"], True, 64
    )


def test_discover_hands_the_fusion_off_widest_dtype_to_the_plan(tmp_path):
    """Through the real stages: the generated case's fusion-off graph writes float32 at most,
    and a budget's worker count is taken with it."""
    from fusion_switch.compare.engine import CompareRequest, discover
    from fusion_switch.synth.generator import generate_case

    case = generate_case(tmp_path / "case", n_ops=12, seed=5, faults=[], graph_text=False)
    request = CompareRequest(
        case.on_dump, case.off_dump, case.on_graph, case.off_graph, tmp_path / "out", workers=1
    )
    assert widest_bits(discover(request).off_dtypes) == 32
