"""A replay proves a fused op wrong only with kernels this run's fusion-off ops checked.

The noise floor replays fusion-off ops of each original type against their own dumps: what a
kernel's float64 arithmetic differs by from the device's (an approximated exp, a float16
intermediate) sets the tolerance. A type with no such sample kept the least tolerance, 1, and
trusted the kernel fully: where the fused op's fusion-off output was not dumped either, a right
fused op whose device arithmetic differs from the kernel's was "proven" to introduce error (a
review of the kernels, thirty-eighth round of issue 16)."""

from __future__ import annotations

import numpy as np
from fusion_switch.diagnose.replay import replay_run
from replay_support import MemoryStore, float_desc, fused_op, one_graph

SHAPE = (2, 64)


def _device_sigmoid(x: np.ndarray) -> np.ndarray:
    """Sigmoid as a device approximates it: a relative error of ~1e-4, float32 out."""
    exact = 1.0 / (1.0 + np.exp(-x))
    ripple = 1.0 + 1e-4 * np.sin(37.0 * x)
    return (exact * ripple).astype(np.float32).astype(np.float64)


def _graphs():
    x = {"name": "x", "type": "Data", "output_desc": [float_desc(SHAPE)]}
    out = [float_desc(SHAPE)]
    relu = {"name": "relu", "type": "Relu", "input": ["x:0"], "output_desc": out}
    sig = {"name": "sig", "type": "Sigmoid", "input": ["relu:0"], "output_desc": out}
    fused = fused_op(["x:0"], ["relu", "sig"], [float_desc(SHAPE, "sig")])
    return one_graph([x, fused]), one_graph([x, relu, sig])


def _run(fused_out: np.ndarray, off_dumps: bool):
    rng = np.random.default_rng(3)
    x = rng.normal(0.0, 2.0, SHAPE).astype(np.float32).astype(np.float64)
    tensors = {("on", "fused", "input", 0): x, ("on", "fused", "output", 0): fused_out(x)}
    if off_dumps:
        r = np.maximum(x, 0.0)
        tensors |= {
            ("off", "relu", "input", 0): x,
            ("off", "relu", "output", 0): r,
            ("off", "sig", "input", 0): r,
            ("off", "sig", "output", 0): _device_sigmoid(r),
        }
    on, off = _graphs()
    report = replay_run(on, off, MemoryStore(tensors), workers=1)
    (result,) = report.results
    return result


def right(x):
    return _device_sigmoid(np.maximum(x, 0.0))


def wrong(x):
    return _device_sigmoid(np.maximum(x, 0.0)) * 1.01


def test_a_right_op_whose_kernels_no_fusion_off_op_checked_is_not_proven():
    result = _run(right, off_dumps=False)
    assert result.verdict == "unverified", (result.verdict, result.reason)
    assert "Sigmoid" in result.reason and "fusion-off" in result.reason, result.reason


def test_a_wrong_op_without_checked_kernels_is_not_proven_either():
    result = _run(wrong, off_dumps=False)
    assert result.verdict == "unverified", (result.verdict, result.reason)


def test_with_the_kernels_checked_the_right_op_is_clean_and_the_wrong_one_proven():
    assert _run(right, off_dumps=True).verdict == "clean"
    result = _run(wrong, off_dumps=True)
    assert result.verdict == "introduces", (result.verdict, result.reason)
