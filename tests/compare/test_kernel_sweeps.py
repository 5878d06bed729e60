"""The kernel (``_kernel.c`` ``cells_of``) keeps numpy's bits where its sums change shape.

Beyond the sizes ``test_metrics_kernel`` walks: both sides of numpy's cast chunk (the float64
sums of x and y are then chunked, the other sums not), NaN and infinities anywhere (the
extremes, the KL floor and the cosine's early exits all read the first pass), and the direct
path from file bytes in every stored dtype around the chunk.
"""

from __future__ import annotations

import numpy as np
import pytest
from fusion_switch.compare.metrics import ALGORITHMS, fused, native
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

NAMES = list(ALGORITHMS)
CHUNK = native.BUFFER_SIZE  # numpy's cast chunk: the float64 sums change shape beyond it
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, 3.4e38, -3.4e38]


def both(x: np.ndarray, y: np.ndarray, scalar: bool = False) -> tuple[str, str]:
    compiled = native.kernel_metrics(NAMES, x, y, scalar, "L", "R")
    numpy_path = fused.fused_metrics(NAMES, x, y, scalar, "L", "R")
    return repr([compiled[n] for n in NAMES]), repr([numpy_path[n] for n in NAMES])


def vectors(n: int, seed: int, specials: int, decades: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    scale = 10.0 ** rng.integers(-decades, decades + 1, n)
    x = (rng.standard_normal(n) * scale).astype(np.float32)
    y = (x + rng.standard_normal(n) * scale * 1e-2).astype(np.float32)
    for _ in range(specials):
        side = x if rng.integers(2) else y
        side[rng.integers(n)] = SPECIAL[rng.integers(len(SPECIAL))]
    return x, y


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.one_of(
        st.integers(1, 600),
        st.integers(CHUNK - 130, CHUNK + 130),
        st.sampled_from([2 * CHUNK, 2 * CHUNK + 1, 3 * CHUNK - 7]),
    ),
    seed=st.integers(0, 2**32 - 1),
    specials=st.integers(0, 4),
    decades=st.integers(0, 30),
    scalar=st.booleans(),
)
def test_any_size_around_the_cast_chunk_with_nan_and_infinities(n, seed, specials, decades, scalar):
    x, y = vectors(n, seed, specials, decades)
    compiled, numpy_path = both(x, y, scalar)
    assert compiled == numpy_path


@pytest.mark.parametrize("n", [CHUNK - 1, CHUNK, CHUNK + 1, 4 * CHUNK + 3])
@pytest.mark.parametrize("dtype", ["<f4", "<f2", "i1", "u1"])
def test_the_direct_path_around_the_cast_chunk_in_every_stored_dtype(n, dtype):
    # metrics_raw decodes the stored values and runs the same sweeps: the cells must be those
    # of the vectors numpy's cast gives
    x, y = vectors(n, n, specials=3, decades=3)
    with np.errstate(all="ignore"):
        left, right = x.astype(dtype), y.astype(dtype)
        data = b"??" + left.tobytes() + right.tobytes()  # off any alignment
        scratch = np.empty(n, np.float32)
        raw = native._kernel.metrics_raw(
            data, 2, left.dtype.char, data, 2 + left.nbytes, right.dtype.char, n,
            scratch, False, CHUNK, np.log,
        )  # fmt: skip
        wide_x, wide_y = left.astype(np.float32), right.astype(np.float32)
        cast = native._kernel.metrics(wide_x, wide_y, scratch, False, CHUNK, np.log)
    assert repr(raw) == repr(cast)
    compiled, numpy_path = both(wide_x, wide_y)
    assert compiled == numpy_path
