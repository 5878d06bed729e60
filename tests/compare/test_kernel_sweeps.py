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
SEGMENT = native.KL_SEGMENT  # KL's terms are logged and summed a node this long at most
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
        scratch = np.empty(native.scratch_length(n), np.float32)
        raw = native._kernel.metrics_raw(
            data, 2, left.dtype.char, data, 2 + left.nbytes, right.dtype.char, n,
            scratch, False, CHUNK, np.log,
        )  # fmt: skip
        wide_x, wide_y = left.astype(np.float32), right.astype(np.float32)
        cast = native._kernel.metrics(wide_x, wide_y, scratch, False, CHUNK, np.log)
    assert repr(raw) == repr(cast)
    compiled, numpy_path = both(wide_x, wide_y)
    assert compiled == numpy_path


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.one_of(
        st.integers(SEGMENT - 20, SEGMENT + 20),
        st.integers(2 * SEGMENT - 9, 2 * SEGMENT + 9),
        st.sampled_from([3 * SEGMENT + 5, 5 * SEGMENT - 3, 8 * SEGMENT + 1]),
    ),
    seed=st.integers(0, 2**32 - 1),
    specials=st.integers(0, 4),
    decades=st.integers(0, 30),
)
def test_any_size_around_the_kl_segment_with_nan_and_infinities(n, seed, specials, decades):
    # the KL terms are summed node by node of numpy's pairwise tree: the sum must stay the one
    # numpy makes over the whole vector, and p's division made once must give the same terms
    x, y = vectors(n, seed, specials, decades)
    compiled, numpy_path = both(x, y)
    assert compiled == numpy_path


@pytest.mark.parametrize("n", [1, 9, SEGMENT, SEGMENT + 1, 3 * SEGMENT + 5])
def test_the_log_sees_each_segment_once_in_a_scratch_of_two_segments(n):
    x, y = vectors(n, n, specials=0, decades=2)
    seen = []

    def log(part, out):
        assert out is part
        seen.append(part.size)
        return np.log(part, out=out)

    scratch = np.empty(native.scratch_length(n), np.float32)
    with np.errstate(all="ignore"):
        spied = native._kernel.metrics(x, y, scratch, False, CHUNK, log)
        plain = native._kernel.metrics(x, y, scratch, False, CHUNK, np.log)
    assert repr(spied) == repr(plain)
    assert sum(seen) == n
    assert max(seen) <= SEGMENT
    assert (len(seen) == 1) == (n <= SEGMENT)
    assert scratch.size == 2 * min(n, SEGMENT)


def test_a_scratch_too_short_and_a_failing_log_are_errors_not_wrong_cells():
    x, y = vectors(3 * SEGMENT, 1, specials=0, decades=2)
    with pytest.raises(ValueError, match="scratch"):
        native._kernel.metrics(x, y, np.empty(SEGMENT, np.float32), False, CHUNK, np.log)
    calls = []

    def failing(part, out):
        calls.append(part.size)
        if len(calls) == 2:
            raise FloatingPointError("log failed")
        return np.log(part, out=out)

    scratch = np.empty(native.scratch_length(x.size), np.float32)
    with pytest.raises(FloatingPointError, match="log failed"):
        native._kernel.metrics(x, y, scratch, False, CHUNK, failing)
    assert len(calls) == 2  # the sweep stops at the failure
