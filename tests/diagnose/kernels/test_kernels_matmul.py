"""MatMul(V2), BatchMatMul(V2), FullyConnection: hand-computed cases."""

from __future__ import annotations

import numpy as np
from kernel_check import check, refuses, run

A = np.array([[1.0, 2.0], [3.0, 4.0]])
B = np.array([[0.0, 1.0], [1.0, 0.0]])  # swaps columns


def test_matmul_transposes_and_bias():
    check("MatMulV2", [A, B], {}, [[2, 1], [4, 3]])
    check("MatMulV2", [A, B], {"transpose_x1": True}, [[3, 1], [4, 2]])
    check("MatMul", [A, np.eye(2)], {"transpose_x2": True}, A)
    check("MatMulV2", [A, B, [10.0, 20.0]], {}, [[12, 21], [14, 23]])


def test_batch_matmul_adj_and_broadcast():
    batch = np.stack([A, 2 * A])  # [2, 2, 2]
    check("BatchMatMulV2", [batch, B], {}, [[[2, 1], [4, 3]], [[4, 2], [8, 6]]])
    check("BatchMatMulV2", [batch, np.eye(2)], {"adj_x1": True}, [A.T, 2 * A.T])
    check("BatchMatMul", [A, B], {"adj_x2": True}, [[2, 1], [4, 3]])
    check("BatchMatMulV2", [A, B, [1.0, 1.0]], {"adj_x1": True, "adj_x2": False}, [[4, 2], [5, 3]])


def test_fully_connection_caffe_inner_product():
    x = np.array([1.0, 2.0, 3.0, 4.0]).reshape(1, 4, 1, 1)
    w = np.array([[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0]]).reshape(
        3, 4, 1, 1
    )
    out = run("FullyConnection", [x, w, [0.0, 0.5, 1.0], None], {"num_output": 3})[0]
    assert out.shape == (1, 3, 1, 1)  # as fc1000 in the real ResNet-50 graphs
    np.testing.assert_allclose(out.ravel(), [5.0, 10.5, 5.0])
    wt = w.reshape(3, 4).T
    check(
        "FullyConnection",
        [x.reshape(1, 4), wt],
        {"num_output": 3, "transpose": True},
        [[5.0, 10.0, 4.0]],
    )


def test_matmul_errors():
    refuses("MatMulV2", [A, np.ones((3, 2))], {}, "x1")
    refuses("MatMulV2", [A, B], {"offset_x": 3}, "offset_x")
    refuses("MatMulV2", [A, B, [1.0, 2.0, 3.0]], {}, "bias")
    refuses("FullyConnection", [A, np.ones((3, 2))], {"num_output": 4}, "num_output")
    refuses("FullyConnection", [A, np.ones((3, 5))], {"num_output": 3}, "input w")
