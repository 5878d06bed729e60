"""The compiled metrics kernel (``compare/_kernel.c``) gives numpy's cells, bit for bit.

``compute_metrics`` takes its sums from the kernel when it is built and agreed with numpy on first
use; these tests hold the kernel to the numpy path (itself held to msaccucmp by the oracle tests in
``test_metrics.py``, which now run through the kernel too) on the sizes where numpy's pairwise
summation changes shape, on awkward values, and through the command line with the kernel off.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from fusion_switch.compare import metrics
from fusion_switch.compare.metrics import ALGORITHMS, fused, native, reference
from fusion_switch.synth.generator import generate_case
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.compare.output_files import outputs
from tests.compare_cli import compare_command
from tests.portable_build import build_extension

NAMES = list(ALGORITHMS)


def both_paths(x: np.ndarray, y: np.ndarray, scalar: bool = False) -> tuple[str, str]:
    """The kernel's and numpy's results for one pair, as repr (NaN equal, -0.0 distinct)."""
    compiled = native.kernel_metrics(NAMES, x, y, scalar, "L", "R")
    numpy_path = fused.fused_metrics(NAMES, x, y, scalar, "L", "R")
    return repr([compiled[n] for n in NAMES]), repr([numpy_path[n] for n in NAMES])


def test_the_kernel_is_built_and_in_use():
    # CI installs with a C compiler: a failed build would otherwise go unnoticed (the numpy
    # path gives the same cells, only slower).
    assert native._kernel is not None
    assert metrics.kernel_in_use()


@pytest.mark.parametrize("n", [*range(1, 300), 511, 512, 513, 1000, 1031, 8192, 8193, 16385])
def test_every_pairwise_leaf_and_split_size(n):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-5, 5, n)).astype(np.float32)
    y = (x * (1 + rng.standard_normal(n) * 1e-3)).astype(np.float32)
    native, numpy_path = both_paths(x, y)
    assert native == numpy_path


@pytest.mark.parametrize("n", [8191, 8193, 3 * 8192 + 5, 70001])
def test_float64_mean_and_std_over_several_cast_chunks(n):
    # numpy sums a float32 vector into float64 chunk by chunk of its buffer size
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-6, 6, n)).astype(np.float32)
    assert native._kernel.mean_std(x, np.getbufsize()) == reference.mean_std64(x)


AWKWARD = st.floats(width=32) | st.sampled_from([0.0, -0.0, 1e-45, -1e-45, 2.0**-52, 3.4e38])


@settings(max_examples=300, deadline=None)
@given(x=hnp.arrays(np.float32, st.integers(1, 400), elements=AWKWARD), data=st.data())
def test_nan_inf_zeros_and_subnormals(x, data):
    y = data.draw(hnp.arrays(np.float32, x.shape, elements=AWKWARD))
    native, numpy_path = both_paths(x, y)
    assert native == numpy_path


@settings(max_examples=100, deadline=None)
@given(
    n=st.integers(129, 20000),
    decades=st.integers(0, 30),
    seed=st.integers(0, 2**32 - 1),
    scalar=st.booleans(),
)
def test_large_vectors_of_any_magnitude(n, decades, seed, scalar):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-decades, decades + 1, n)).astype(np.float32)
    y = (x + rng.standard_normal(n) * 10.0 ** rng.integers(-decades, decades + 1, n)).astype(
        np.float32
    )
    native, numpy_path = both_paths(x, y, scalar)
    assert native == numpy_path


@pytest.mark.parametrize(
    ("x", "y"),
    [
        (np.zeros(50), np.zeros(50)),  # cosine 1.0, KL floors
        (np.zeros(50), np.ones(50)),
        (np.ones(50), np.zeros(50)),
        (np.full(50, 1e-30), np.full(50, 1e-30)),  # norms below eps
        (np.full(9, 7.0), np.full(9, 7.0)),  # max == min: no scaling before the KL floor
    ],
)
def test_early_exits(x, y):
    native, numpy_path = both_paths(x.astype(np.float32), y.astype(np.float32))
    assert native == numpy_path


def test_a_kernel_that_disagrees_with_numpy_is_not_used(monkeypatch):
    class OffByOneUlp:
        """The real kernel, except that one maximum is one float32 step too large."""

        def __getattr__(self, name):
            return getattr(native._kernel, name)

        def metrics(self, *args):
            values, *rest = native._kernel.metrics(*args)
            values = list(values)
            values[1] = float(np.nextafter(np.float32(values[1]), np.float32(np.inf)))
            return (tuple(values), *rest)

    monkeypatch.setattr(native, "_kernel", OffByOneUlp())
    monkeypatch.setattr(native, "_KERNEL_STATE", [])
    assert not metrics.kernel_in_use()


def test_the_first_use_probe_makes_its_vectors_once_and_leaves_them_as_made(monkeypatch):
    """Both checks of the probe (cells, then cells from bytes) run on one set of vectors (made
    twice before: ~4 ms on the way to the first comparison); neither check changes them."""
    made = []

    def vectors():
        pairs = native_probe_vectors()
        made.append([(x.copy(), y.copy()) for x, y in pairs])
        made.append(pairs)
        return pairs

    native_probe_vectors = native.kernel_probe_vectors
    monkeypatch.setattr(native, "kernel_probe_vectors", vectors)
    monkeypatch.setattr(native, "_KERNEL_STATE", [])
    assert metrics.kernel_in_use()
    assert len(made) == 2  # one call: its copy and the pairs the probe used
    for (x0, y0), (x1, y1) in zip(made[0], made[1], strict=True):
        assert x0.tobytes() == x1.tobytes() and y0.tobytes() == y1.tobytes()


def test_the_environment_variable_or_a_missing_build_switches_the_kernel_off():
    probe = "from fusion_switch.compare import metrics; print(metrics.kernel_in_use())"
    unbuilt = "import sys; sys.modules['fusion_switch.compare._kernel'] = None; "  # ImportError
    x = "import numpy as n; x = n.arange(1, 40, dtype=n.float32); "
    cells = "print([r.text for r in metrics.compute_metrics(x, x[::-1].copy())])"
    answers = [
        subprocess.run(
            [sys.executable, "-c", prefix + probe + "; " + x + cells],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
        for prefix, env in (("", {}), ("", {metrics.NUMPY_ONLY_VARIABLE: "numpy"}), (unbuilt, {}))
    ]
    assert [answer[0] for answer in answers] == ["True", "False", "False"]
    assert answers[0][1] == answers[1][1] == answers[2][1]


def test_a_vector_the_kernel_refuses_is_measured_by_numpy(monkeypatch):
    x = np.arange(1, 50, dtype=np.float32)
    y = x[::-1].copy()
    expected = repr(metrics.compute_metrics(x, y))

    class Refusing:
        def __getattr__(self, name):
            return getattr(native._kernel, name)

        def metrics(self, *args):
            raise BufferError("cannot read this buffer")

    monkeypatch.setattr(native, "_kernel", Refusing())
    assert metrics.kernel_in_use()
    assert repr(metrics.compute_metrics(x, y)) == expected


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((np.ones(3, np.float64), np.ones(3, np.float32)), "float32"),
        ((np.ones(3, np.float32), np.ones(4, np.float32)), "differ in length"),
        ((np.ones(6, np.float32)[::2], np.ones(3, np.float32)), "contiguous"),
        ((np.ones(0, np.float32), np.ones(0, np.float32)), "empty"),
    ],
)
def test_the_kernel_refuses_what_it_cannot_read(args, message):
    with pytest.raises((TypeError, ValueError, BufferError), match=message):
        native._kernel.pass1(*args)


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    return generate_case(tmp_path_factory.mktemp("case"), n_ops=120, seed=11, graph_text=False)


def test_the_command_line_writes_the_same_files_with_and_without_the_kernel(case, tmp_path):
    written = []
    for label, env in (("kernel", {}), ("numpy", {metrics.NUMPY_ONLY_VARIABLE: "numpy"})):
        out = tmp_path / label
        done = subprocess.run(
            compare_command(case, out, "--no-replay"),
            env={**os.environ, **env},
            capture_output=True,
            text=True,
        )
        assert done.returncode in (0, 1), done.stderr
        written.append(outputs(out))
    assert written[0] == written[1]
    assert written[0]["csv"].count(b"\n") > 100  # a real comparison, not two empty folders


@pytest.fixture(scope="module")
def portable_kernel(tmp_path_factory):
    """The kernel compiled again without its AVX2 copy: the code every other CPU runs (aarch64,
    x86-64 without AVX2) must give the same bits as the copy this machine runs."""
    return build_extension(
        Path(native.__file__).parents[1] / "_kernel.c",
        "_kernel",
        ["-O3", "-ffp-contract=off", "-fno-trapping-math", "-DKERNEL_NO_CLONES"],
        tmp_path_factory.mktemp("portable"),
    )


@pytest.fixture(scope="module")
def clang_kernel(tmp_path_factory):
    """The kernel as clang builds it, AVX2 copy included: the vector code must compile there
    too (clang rejects some of what GCC accepts, and a failed build would leave a user on the
    numpy path without a word), and give the same bits."""
    return build_extension(
        Path(native.__file__).parents[1] / "_kernel.c",
        "_kernel",
        ["-O3", "-ffp-contract=off", "-fno-trapping-math"],
        tmp_path_factory.mktemp("clang"),
        compiler="clang",
    )


@pytest.mark.parametrize("n", [1, 7, 8, 9, 129, 4099, 20011])
def test_the_clang_build_gives_the_same_bits(clang_kernel, monkeypatch, n):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, n)).astype(np.float32)
    y = (x + rng.standard_normal(n).astype(np.float32)).astype(np.float32)
    built = repr(native.kernel_metrics(NAMES, x, y, False, "L", "R"))
    monkeypatch.setattr(native, "_kernel", clang_kernel)
    monkeypatch.setattr(native, "_KERNEL_STATE", [])
    assert native.kernel_in_use()  # its first-use probe against numpy passes
    assert repr(native.kernel_metrics(NAMES, x, y, False, "L", "R")) == built


@pytest.mark.parametrize("n", [1, 7, 8, 129, 1000, 4099, 20011])
def test_the_portable_build_gives_the_same_bits(portable_kernel, monkeypatch, n):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, n)).astype(np.float32)
    y = (x + rng.standard_normal(n).astype(np.float32)).astype(np.float32)
    y[:: max(1, n // 5)] = 0
    built = repr(native.kernel_metrics(NAMES, x, y, False, "L", "R"))
    monkeypatch.setattr(native, "_kernel", portable_kernel)
    assert repr(native.kernel_metrics(NAMES, x, y, False, "L", "R")) == built


def test_float16_is_widened_exactly_as_numpy_casts_it():
    every_half = np.arange(2**16, dtype=np.uint16).view(np.float16)  # NaN payloads included
    out = np.empty(every_half.size, np.float32)
    native._kernel.widen_half(every_half, out)
    assert np.array_equal(out.view(np.uint32), every_half.astype(np.float32).view(np.uint32))


def test_widen_half_refuses_what_it_cannot_read():
    with pytest.raises(TypeError, match="float16"):
        native._kernel.widen_half(np.ones(4, np.float32), np.empty(4, np.float32))
    with pytest.raises(ValueError, match="differ in length"):
        native._kernel.widen_half(np.ones(4, np.float16), np.empty(5, np.float32))


@pytest.mark.parametrize("dtype", ["<f4", "<f2", "i1", "u1"])
@pytest.mark.parametrize("n", [1, 129, 4099, 20011])
def test_the_portable_build_reads_file_bytes_the_same(portable_kernel, dtype, n):
    rng = np.random.default_rng(n)
    with np.errstate(all="ignore"):
        x = (rng.standard_normal(n) * 60).astype(dtype)
        y = (rng.standard_normal(n) * 60).astype(dtype)
    data = b"\x00" + x.tobytes() + y.tobytes()  # offset 1: the unaligned case
    char = x.dtype.char

    def cells(kernel):
        with np.errstate(all="ignore"):
            return repr(
                kernel.metrics_raw(
                    data, 1, char, data, 1 + x.nbytes, char, n,
                    np.empty(native.scratch_length(n), np.float32), False, np.getbufsize(),
                    np.log,
                )
            )  # fmt: skip

    assert cells(portable_kernel) == cells(native._kernel)


@pytest.mark.parametrize("dtype", ["<f4", "<f2", "i1"])
@pytest.mark.parametrize(
    "blocks", [(1, 1, 1, 1, 16, 3), (2, 3, 7, 5, 16, 41), (1, 2, 9, 11, 32, 50)]
)
def test_the_portable_build_converts_nc1hwc0_blocks_the_same(portable_kernel, dtype, blocks):
    n, c1, h, w, c0, c = blocks
    rng = np.random.default_rng(c)
    with np.errstate(all="ignore"):
        x = (rng.standard_normal(n * c1 * h * w * c0) * 60).astype(dtype)
        y = (rng.standard_normal(n * c * h * w) * 60).astype(dtype)
    data = b"\x00" + x.tobytes() + y.tobytes()  # offset 1: the unaligned case
    size = y.size

    def cells(kernel):
        with np.errstate(all="ignore"):
            return repr(
                kernel.metrics_raw(
                    data, 1, x.dtype.char, data, 1 + x.nbytes, y.dtype.char, size,
                    np.empty(native.scratch_length(size), np.float32), False,
                    np.getbufsize(), np.log, blocks,
                )
            )  # fmt: skip

    assert cells(portable_kernel) == cells(native._kernel)
