"""``metric_cells`` (the measure stage's path: every cell from one kernel call, float16 widened by
the kernel) gives what ``compute_metrics`` gives, the definition held to msaccucmp by the oracle
tests: the same values, cells, messages and StandardDeviation pair (given for every selection),
for every selection, dtype, layout and edge case, with the kernel on and off."""

from __future__ import annotations

import numpy as np
import pytest
from fusion_switch.compare import metrics
from fusion_switch.compare.metrics import ALGORITHMS, compute_metrics, metric_cells, native
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp


def expected_cells(left, right, names, **options):
    results = compute_metrics(left, right, names, **options)
    # the pair comes whatever the selection: the verdict reads NaN in one run only from it
    paired = names if "StandardDeviation" in names else [*names, "StandardDeviation"]
    std = next((r.std for r in compute_metrics(left, right, paired, **options) if r.std), None)
    return (
        repr({r.name: r.value for r in results}),
        {r.name: r.text for r in results},
        [r.message for r in results if r.message],
        repr(std),
    )


def got_cells(left, right, names, **options):
    # as the measure stage calls it: inside np.errstate(all="ignore") (workers.py); without it
    # numpy warned of NaN means here whenever no earlier test (msaccucmp's import) had
    # silenced numpy for the whole process, as happens when the suite is spread over workers
    with np.errstate(all="ignore"):
        cells = metric_cells(left, right, names, **options)
    return repr(cells.values), cells.texts, cells.messages, repr(cells.std)


SELECTIONS = st.sampled_from(
    [
        list(ALGORITHMS),
        ["KullbackLeiblerDivergence", "CosineSimilarity"],
        ["StandardDeviation"],
        ["MaxRelativeError", "RootMeanSquareError", "StandardDeviation", "CosineSimilarity"],
    ]
)
AWKWARD = st.floats(width=16) | st.sampled_from([0.0, -0.0, 6e-8, 65504.0])
DTYPES = st.sampled_from([np.float16, np.float32, np.float64, np.int32, np.bool_])


@settings(max_examples=300, deadline=None)
@given(
    dtypes=st.tuples(DTYPES, DTYPES),
    size=st.integers(0, 300),
    names=SELECTIONS,
    scalar=st.booleans(),
    max_cmp_size=st.sampled_from([0, 0, 1, 17]),
    strided=st.booleans(),
    data=st.data(),
)
def test_the_same_cells_as_compute_metrics(
    dtypes, size, names, scalar, max_cmp_size, strided, data
):
    def draw(dtype):
        if dtype == np.bool_:
            return data.draw(hnp.arrays(dtype, 2 * size))
        elements = AWKWARD if dtype != np.int32 else st.integers(-1000, 1000)
        return data.draw(hnp.arrays(dtype, 2 * size, elements=elements))

    left, right = draw(dtypes[0]), draw(dtypes[1])
    # half of the elements: every other one (not contiguous) or the first half
    left = left[::2] if strided else left[:size]
    right = right[:size]
    options = dict(scalar=scalar, left_path="L", right_path="R", max_cmp_size=max_cmp_size)
    assert got_cells(left, right, names, **options) == expected_cells(left, right, names, **options)


@pytest.mark.parametrize("kernel", ["on", "off"])
def test_float16_pairs_of_every_size_shape_and_order(kernel, monkeypatch):
    if kernel == "off":
        monkeypatch.setattr(native, "_KERNEL_STATE", [False])
    rng = np.random.default_rng(5)
    for n in (1, 7, 8, 129, 1000, 8193):
        x = (rng.standard_normal(n) * 100).astype(np.float16)
        y = (x + rng.standard_normal(n)).astype(np.float16)
        y[:: max(1, n // 7)] = 0
        for left, right in ((x, y), (x.reshape(1, -1), y.astype(np.float32)), (x[::-1], y)):
            assert got_cells(left, right, list(ALGORITHMS)) == expected_cells(
                left, right, list(ALGORITHMS)
            )


def test_a_size_mismatch_is_refused_as_compute_metrics_refuses_it():
    with pytest.raises(metrics.SizeMismatchError, match=r"\(3\) in 'L'.*\(4\) in 'R'"):
        metric_cells(np.ones(3), np.ones(4), left_path="L", right_path="R")


def test_a_vector_the_kernel_refuses_is_measured_by_numpy(monkeypatch):
    x = np.arange(1, 50, dtype=np.float16)
    y = x[::-1].copy()
    expected = expected_cells(x, y, list(ALGORITHMS))
    real = native._kernel

    class Refusing:
        def __getattr__(self, name):
            return getattr(real, name)

        def metrics(self, *args):
            raise BufferError("cannot read this buffer")

    monkeypatch.setattr(native, "_kernel", Refusing())
    assert metrics.kernel_in_use()
    assert got_cells(x, y, list(ALGORITHMS)) == expected
