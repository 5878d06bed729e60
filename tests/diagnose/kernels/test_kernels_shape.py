"""Transpose, Reshape, Squeeze, Cast, Concat, Split, Pad, StridedSlice, Gather: hand cases."""

from __future__ import annotations

import numpy as np
from kernel_check import check, refuses, run

A = np.arange(6.0).reshape(2, 3)  # [[0 1 2] [3 4 5]]


def test_transpose_attr_and_input():
    check("TransposeD", [A], {"perm": [1, 0]}, [[0, 3], [1, 4], [2, 5]])
    check("Transpose", [A, [1, 0]], {}, [[0, 3], [1, 4], [2, 5]])
    refuses("TransposeD", [A], {"perm": [0, 0]}, "perm")
    refuses("TransposeD", [A], {}, "perm")


def test_confusion_transpose():
    check(
        "ConfusionTransposeD",
        [A],
        {"perm": [1, 0], "shape": [6], "transpose_first": True},
        [0, 3, 1, 4, 2, 5],
    )
    check(
        "ConfusionTransposeD",
        [A],
        {"perm": [1, 0], "shape": [3, 2], "transpose_first": False},
        [[0, 2, 4], [1, 3, 5]],
    )
    refuses("ConfusionTransposeD", [A], {"perm": [1, 0]}, "shape")


def test_reshape_family():
    check("Reshape", [A, [3, -1]], {}, [[0, 1], [2, 3], [4, 5]])
    check("Reshape", [A], {"shape": [1, 6]}, [[0, 1, 2, 3, 4, 5]])  # generator attribute
    refuses("Reshape", [A, [4, -1]], {}, "input shape")
    refuses("Reshape", [A, [0, -1]], {}, "0")
    assert run("Squeeze", [np.ones((1, 3, 1))], {})[0].shape == (3,)
    assert run("Squeeze", [np.ones((1, 3, 1))], {"axis": [0]})[0].shape == (3, 1)
    refuses("Squeeze", [np.ones((1, 3, 1))], {"axis": [1]}, "axis")
    # hypothesis found it: a repeated axis made numpy raise ValueError, not a refusal
    refuses("Squeeze", [np.ones((1, 3, 1))], {"axis": [0, 0]}, "repeats")
    assert run("Unsqueeze", [A], {"axes": [0, 3]})[0].shape == (1, 2, 3, 1)
    assert run("ExpandDims", [A, [-1]], {})[0].shape == (2, 3, 1)
    assert run("Flatten", [np.ones((2, 3, 4))], {})[0].shape == (2, 12)
    assert run("FlattenV2", [np.ones((2, 3, 4, 5))], {"axis": 1, "end_axis": 2})[0].shape == (
        2,
        12,
        5,
    )


def test_transdata_between_host_layouts_transposes():
    x = np.arange(24.0).reshape(1, 2, 3, 4)  # NCHW
    out = run("TransData", [x], {"src_format": "NCHW", "dst_format": "NHWC"})[0]
    np.testing.assert_array_equal(out, x.transpose(0, 2, 3, 1))
    back = run("TransData", [out], {"src_format": "NHWC", "dst_format": "NCHW"})[0]
    np.testing.assert_array_equal(back, x)


def test_identity_and_transdata_pass_values_through():
    check("Identity", [A], {}, A)
    check("TransData", [A], {"src_format": "NCHW", "dst_format": "NC1HWC0"}, A)


def test_cast_rounds_to_float_destinations():
    check("Cast", [[1.0 + 2**-12]], {"dst_type": 1}, [1.0])  # float16: 10 mantissa bits
    check("Cast", [[70000.0]], {"dst_type": 1}, [np.inf])  # beyond float16's 65504
    check("Cast", [[1.0 + 2**-30]], {"dst_type": 0}, [1.0])  # float32
    check(
        "Cast", [[1.0 + 2**-8, 1.0 + 3 * 2**-8]], {"dst_type": 27}, [1.0, 1.0 + 2**-6]
    )  # bf16 ties to even
    check("Cast", [[0.0, -2.0]], {"dst_type": 12}, [0.0, 1.0])  # bool
    check("Cast", [[3.0, -4.0]], {"dst_type": 3}, [3.0, -4.0])  # exact int32
    check("Cast", [[1.5]], {}, [1.5])  # generator: no dst_type, the caller rounds


def test_cast_errors():
    refuses("Cast", [[1.5]], {"dst_type": 3}, "dst_type")
    refuses("Cast", [[300.0]], {"dst_type": 2}, "dst_type")  # out of int8
    refuses("Cast", [[1.0]], {"dst_type": 13}, "dst_type")  # string


def test_concat_and_split():
    check("ConcatD", [A, A], {"concat_dim": 1, "N": 2}, [[0, 1, 2, 0, 1, 2], [3, 4, 5, 3, 4, 5]])
    check("ConcatV2D", [A, A], {"concat_dim": -2}, np.vstack([A, A]))
    refuses("ConcatD", [A, A.T], {"concat_dim": 0}, "concat_dim")
    refuses("ConcatD", [A, A], {"concat_dim": 0, "N": 3}, "N")
    left, right = run("SplitD", [np.arange(4.0)], {"split_dim": 0, "num_split": 2})
    np.testing.assert_array_equal(left, [0, 1])
    np.testing.assert_array_equal(right, [2, 3])
    outs = run("SplitD", [A.T], {"axis": -1, "num_split": 2})  # generator spelling
    np.testing.assert_array_equal(outs[1], [[3], [4], [5]])
    outs = run(
        "SplitVD", [np.arange(5.0)], {"size_splits": [1, -1, 2], "split_dim": 0, "num_split": 3}
    )
    assert [list(o) for o in outs] == [[0.0], [1.0, 2.0], [3.0, 4.0]]
    refuses("SplitD", [A], {"split_dim": 1, "num_split": 2}, "num_split")
    refuses("SplitVD", [A], {"size_splits": [1, 1], "split_dim": 1}, "size_splits")


def test_pad_family():
    one = np.array([[1.0]])
    check("PadD", [one], {"paddings": [[1, 0], [0, 1]]}, [[0, 0], [1, 0]])
    check("PadV3", [one, [1, 0, 0, 1], [7.0]], {"mode": "constant"}, [[7, 7], [1, 7]])
    # the same four numbers read as [[b0, e0], [b1, e1]] or as [b0, b1, e0, e1]
    check("PadV3", [one, [1, 1, 0, 0]], {}, [[0], [1], [0]])
    check("PadV3", [one, [1, 1, 0, 0]], {"paddings_contiguous": False}, [[0, 0], [0, 1]])
    refuses("PadV3", [one, [1, 0, 0, 1]], {"mode": "wrap"}, "mode")
    refuses("PadD", [one], {"paddings": [[1, 0]]}, "paddings")


def test_strided_slice_and_gather():
    check(
        "StridedSliceD", [A], {"begin": [0, 1], "end": [2, 3], "strides": [1, 1]}, [[1, 2], [4, 5]]
    )
    check(
        "StridedSliceD",
        [A],
        {"begin": [1, 0], "end": [0, 3], "strides": [1, 2], "shrink_axis_mask": 1},
        [3, 5],
    )
    refuses(
        "StridedSliceD",
        [A],
        {"begin": [0], "end": [1], "strides": [1], "ellipsis_mask": 1},
        "ellipsis_mask",
    )
    check("GatherV2D", [A, [1, 0]], {"axis": 0}, [[3, 4, 5], [0, 1, 2]])
    check("GatherV2", [A, [2], [1]], {}, [[2], [5]])
    refuses("GatherV2D", [A, [2]], {"axis": 0}, "indices")
