"""SoftmaxV2 / LogSoftmaxV2 and the reductions: hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
from kernel_check import check, refuses, run

LN3 = math.log(3.0)


def test_softmax_default_axes_is_last():
    check("SoftmaxV2", [[[0.0, LN3], [0.0, 0.0]]], {}, [[0.25, 0.75], [0.5, 0.5]])


def test_softmax_axes_and_generator_axis():
    x = [[0.0, 0.0], [LN3, 0.0]]
    check("SoftmaxV2", [x], {"axes": [0]}, [[0.25, 0.5], [0.75, 0.5]])
    check("SoftmaxV2", [x], {"axis": 0}, [[0.25, 0.5], [0.75, 0.5]])  # generator spelling
    # both axes together: e^0 three times and e^ln3 once -> sum 6
    check("SoftmaxV2", [x], {"axes": [0, 1]}, [[1 / 6, 1 / 6], [0.5, 1 / 6]])


def test_softmax_large_inputs_do_not_overflow():
    check("SoftmaxV2", [[1000.0, 1000.0 + LN3]], {}, [0.25, 0.75])


def test_log_softmax():
    check("LogSoftmaxV2", [[0.0, LN3]], {}, [math.log(0.25), math.log(0.75)])
    refuses("LogSoftmaxV2", [[0.0, 1.0]], {"axes": [2]}, "axes")


A = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])


def test_reduce_d_axes_and_keep_dims():
    check("ReduceMeanD", [A], {"axes": [1]}, [2.0, 5.0])  # GE default keep_dims false
    check("ReduceMeanD", [A], {"axes": [-1], "keep_dims": True}, [[2.0], [5.0]])
    check("ReduceSumD", [A], {"axes": [0]}, [5.0, 7.0, 9.0])
    check("ReduceMaxD", [A], {"axes": []}, 6.0)  # empty axes: every axis
    check("ReduceMinD", [A], {"axes": [0, 1], "keep_dims": True}, [[1.0]])
    check("ReduceProdD", [A], {"axes": [1]}, [6.0, 120.0])


def test_reduce_axes_as_input():
    check("ReduceMean", [A, [0]], {}, [2.5, 3.5, 4.5])
    check("ReduceSum", [A, None], {}, A)  # no axes and noop_with_empty_axes (default true)
    check("ReduceSum", [A, None], {"noop_with_empty_axes": False}, 21.0)


def test_reduce_errors():
    refuses("ReduceMeanD", [A], {}, "axes")  # required; [] (present) means every axis
    refuses("ReduceMeanD", [A], {"axes": [2]}, "axes")
    refuses("ReduceMeanD", [A], {"axes": [0], "keep_dims": "maybe"}, "keep_dims")


def test_reduce_generator_shape_differs_only_by_kept_axes():
    out = run("ReduceMeanD", [np.ones((1, 4, 3))], {"axes": [-1]})[0]
    assert out.shape == (1, 4)  # GE default; the generator's desc says [1, 4, 1]: same values
