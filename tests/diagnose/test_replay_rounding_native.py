"""``diagnose/_rounding.c``: the replay's rounding and score extremes give the numpy path's bits.

The numpy path (``noise._numpy_round``, ``noise._round_bits``, ``noise._score_masked`` and the
finite branch of ``score`` with the loops switched off) is the oracle; every float64 bit pattern
is fair game, the AVX2 copy and the portable build are held to the same bits, and anything the
loops decline (specials) must still come out as the numpy path gives it.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from fusion_switch.diagnose import noise
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.portable_build import build_extension

DTYPES = ["DT_FLOAT", "DT_FLOAT16", "DT_BF16"]


def frexp(values: np.ndarray, dtype: str) -> np.ndarray:
    """The rounding formula to ``dtype`` (subnormal grid included), the oracle of round_to."""
    return noise._round_frexp(values, noise._MANTISSA_BITS[dtype], noise._SMALLEST_NORMAL[dtype])


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def numpy_only(fn, *args):
    """``fn(*args)`` with the compiled loops switched off (as on a machine without them)."""
    state = noise._COMPILED_STATE[:]
    noise._COMPILED_STATE[:] = [False]
    try:
        return fn(*args)
    finally:
        noise._COMPILED_STATE[:] = state


def test_the_loops_are_built_and_in_use():
    """CI builds the package with gcc: a missing extension would silently cost replay time."""
    assert noise._rounding is not None
    assert noise.compiled_in_use()


def test_the_environment_switches_the_loops_off():
    code = "from fusion_switch.diagnose import noise; print(noise.compiled_in_use())"
    env = {**os.environ, noise.NUMPY_ONLY_VARIABLE: "numpy"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.stdout.strip() == "False", done.stderr


def test_a_disagreeing_build_is_not_used(monkeypatch):
    class Wrong:
        @staticmethod
        def round_float32(values, out):
            out[...] = values  # no rounding at all
            return True

        @staticmethod
        def round_bits(values, out, bits):
            out[...] = values
            return True

        @staticmethod
        def extremes(real, replay):
            return (0.0, 1.0)

        @staticmethod
        def channel_extremes(real, replay, outer, channels, inner, spread, top):
            return False

    monkeypatch.setattr(noise, "_rounding", Wrong)
    monkeypatch.setattr(noise, "_COMPILED_STATE", [])
    assert not noise.compiled_in_use()
    x = np.array([1.0 + 2.0**-20])
    assert noise.round_to(x, "DT_FLOAT16")[0] == 1.0  # rounded by the numpy path


def test_a_build_with_wrong_channel_extremes_is_not_used(monkeypatch):
    built = noise._rounding

    class WrongChannels:
        round_float32 = staticmethod(built.round_float32)
        round_bits = staticmethod(built.round_bits)
        extremes = staticmethod(built.extremes)

        @staticmethod
        def channel_extremes(real, replay, outer, channels, inner, spread, top):
            done = built.channel_extremes(real, replay, outer, channels, inner, spread, top)
            top[...] *= 2.0  # every channel's largest value doubled
            return done

    monkeypatch.setattr(noise, "_rounding", WrongChannels)
    monkeypatch.setattr(noise, "_COMPILED_STATE", [])
    assert not noise.compiled_in_use()


patterns = st.integers(0, 2**64 - 1).map(lambda k: np.array([k], np.uint64).view(np.float64)[0])
ordinary = st.floats(-1e6, 1e6) | st.floats(-1e-6, 1e-6) | st.floats(-1e40, 1e40)
values_strategy = st.lists(patterns | ordinary, min_size=0, max_size=40)


@settings(max_examples=400, deadline=None)
@given(values=values_strategy, dtype=st.sampled_from(DTYPES))
def test_round_to_gives_the_numpy_bits_on_any_pattern(values, dtype):
    x = np.array(values, dtype=np.float64)
    assert same_bits(noise.round_to(x, dtype), numpy_only(noise.round_to, x, dtype))


@settings(max_examples=200, deadline=None)
@given(values=st.lists(ordinary, min_size=1, max_size=40), dtype=st.sampled_from(DTYPES))
def test_round_to_gives_the_frexp_formula_on_finite_values(values, dtype):
    x = np.array(values, dtype=np.float64)
    assert same_bits(noise.round_to(x, dtype), frexp(x, dtype))


def test_round_to_leaves_its_input_alone_and_keeps_the_shape():
    x = np.linspace(-5, 5, 24).reshape(2, 3, 4) ** 3
    before = x.copy()
    for dtype in DTYPES:
        rounded = noise.round_to(x, dtype)
        assert rounded.shape == x.shape and rounded is not x
        assert not np.shares_memory(rounded, x)
    assert same_bits(x, before)


def test_round_to_takes_views_that_are_not_contiguous():
    x = (np.linspace(-5, 5, 60).reshape(6, 10) ** 3).T[::2]
    for dtype in DTYPES:
        assert same_bits(noise.round_to(x, dtype), numpy_only(noise.round_to, x, dtype))


@settings(max_examples=400, deadline=None)
@given(
    pairs=st.lists(st.tuples(patterns | ordinary, patterns | ordinary), min_size=0, max_size=30),
    dtype=st.sampled_from(DTYPES),
)
def test_score_gives_the_numpy_number_on_any_pattern(pairs, dtype):
    real = np.array([a for a, _ in pairs], dtype=np.float64)
    replay = np.array([b for _, b in pairs], dtype=np.float64)
    got = noise.score(real, replay, dtype)
    expected = numpy_only(noise.score, real, replay, dtype)
    assert got == expected or (math.isnan(got) and math.isnan(expected))


def test_score_of_signed_zeros_and_equal_tensors():
    zeros = np.array([0.0, -0.0, 0.0])
    assert noise.score(zeros, -zeros, "DT_FLOAT") == 0.0
    x = np.array([1.5, -2.5, 3.0])
    assert noise.score(x, x, "DT_FLOAT16") == 0.0
    replay = np.array([1.0, 2.0 + 2.0**-10])
    assert noise.score(np.array([1.0, 2.0]), replay, "DT_FLOAT16") == (
        2.0**-10 / (2.0 + 2.0**-10) / 2.0**-10
    )


def test_the_loops_refuse_what_they_cannot_read():
    r = noise._rounding
    with pytest.raises(TypeError, match="float64"):
        r.round_bits(np.ones(3, np.float32), np.empty(3), 11, 2.0**-14)
    with pytest.raises(ValueError, match="differ in size"):
        r.round_float32(np.ones(3), np.empty(4))
    with pytest.raises(ValueError, match="bits"):
        r.round_bits(np.ones(3), np.empty(3), 60, 2.0**-14)
    with pytest.raises(ValueError, match="power of two"):
        r.round_bits(np.ones(3), np.empty(3), 11, 3.0**-14)
    with pytest.raises(ValueError, match="empty"):
        r.extremes(np.empty(0), np.empty(0))
    with pytest.raises((BufferError, ValueError), match="contiguous"):
        r.round_bits(np.ones(6)[::2], np.empty(3), 11, 2.0**-14)
    with pytest.raises(TypeError, match="takes 2 arguments"):
        r.extremes(np.ones(2))
    spread, top = np.empty(3), np.empty(3)
    with pytest.raises(ValueError, match="extents"):
        r.channel_extremes(np.ones(12), np.ones(12), 2, 3, 3, spread, top)
    with pytest.raises(ValueError, match="extents"):
        r.channel_extremes(np.ones(12), np.ones(12), 4, 3, 1, np.empty(2), np.empty(2))
    with pytest.raises(ValueError, match="extents"):
        r.channel_extremes(np.ones(0), np.ones(0), 0, 3, 0, spread, top)
    with pytest.raises((ValueError, OverflowError)):
        r.channel_extremes(np.ones(12), np.ones(12), -4, 3, 1, spread, top)
    frozen = np.empty(3)
    frozen.flags.writeable = False
    with pytest.raises((BufferError, ValueError)):
        r.channel_extremes(np.ones(12), np.ones(12), 4, 3, 1, spread, frozen)
    with pytest.raises(TypeError, match="takes 7 arguments"):
        r.channel_extremes(np.ones(2), np.ones(2))


@pytest.fixture(scope="module")
def portable(tmp_path_factory):
    """The loops compiled again without their AVX2 copy: what aarch64 and older x86-64 run."""
    return build_extension(
        Path(noise.__file__).with_name("_rounding.c"),
        "_rounding",
        [
            *("-O3", "-ffp-contract=off", "-fno-trapping-math", "-fno-strict-aliasing"),
            "-DROUNDING_NO_CLONES",
        ],
        tmp_path_factory.mktemp("portable"),
    )


@pytest.mark.parametrize("n", [1, 3, 4, 7, 8, 129, 6400, 20011])
def test_the_portable_build_gives_the_same_bits(portable, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n) * 10.0 ** rng.integers(-45, 40, n)
    y = x + rng.standard_normal(n) * 1e-3
    built = noise._rounding
    for bits, smallest in ((8, 2.0**-126), (11, 2.0**-14), (24, 2.0**-126)):
        a, b = np.empty(n), np.empty(n)
        assert built.round_bits(x, a, bits, smallest) == portable.round_bits(x, b, bits, smallest)
        assert same_bits(a, b)
    a, b = np.empty(n), np.empty(n)
    assert built.round_float32(x, a) == portable.round_float32(x, b)
    assert same_bits(a, b)
    assert built.extremes(x, y) == portable.extremes(x, y)
    for channels in (c for c in (1, 3, 16, n) if n % c == 0):
        for inner in (1, n // channels):
            outer = n // channels // inner
            spreads, tops = (
                (np.empty(channels), np.empty(channels)),
                (
                    np.empty(channels),
                    np.empty(channels),
                ),
            )
            assert built.channel_extremes(x, y, outer, channels, inner, spreads[0], tops[0])
            assert portable.channel_extremes(x, y, outer, channels, inner, spreads[1], tops[1])
            assert same_bits(*spreads) and same_bits(*tops)
    y[n // 2] = math.nan
    assert built.extremes(x, y) is None and portable.extremes(x, y) is None
    one = (np.empty(1), np.empty(1))
    assert not built.channel_extremes(x, y, n, 1, 1, *one)
    assert not portable.channel_extremes(x, y, 1, 1, n, *one)


ZERO_D = [0.1, 2.5, -0.0, 1e-310, math.inf, -math.inf, math.nan, 1e39, 65520.0]


@pytest.mark.parametrize("dtype", [*DTYPES, "DT_INT32"])
@pytest.mark.parametrize("value", ZERO_D)
def test_round_to_keeps_a_0d_value_0d_in_both_paths(dtype, value):
    """A reduction over every axis gives a 0-d array, which the replay rounds like any output.
    The compiled path gave it back as shape (1,) (the next kernel then saw a vector, not a
    scalar), and the numpy path raised TypeError on a 0-d infinity, NaN or subnormal."""
    x = np.array(value)
    one = numpy_only(noise.round_to, x.reshape(1), dtype)
    for rounded in (noise.round_to(x, dtype), numpy_only(noise.round_to, x, dtype)):
        assert isinstance(rounded, np.ndarray) and rounded.shape == ()
        assert rounded.tobytes() == one.tobytes()
    assert noise.round_to(np.float64(value), dtype).shape == ()


def test_rounding_to_an_integer_dtype_out_of_its_range_warns_nothing():
    """numpy printed 'invalid value encountered in cast' on the user's terminal mid-compare."""
    import warnings

    x = np.array([1e39, -1e39, 3.7, math.nan])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rounded = noise.round_to(x, "DT_INT32")
    assert rounded[2] == 3.0 and rounded[3] == 0.0


channel_layouts = st.sampled_from(["NCHW", "NHWC", "ND", "NCDHW", "NDHWC"])


@settings(max_examples=300, deadline=None)
@given(
    data=st.data(),
    fmt=channel_layouts,
    dtype=st.sampled_from(DTYPES),
)
def test_channel_scores_give_the_numpy_numbers_on_any_pattern(data, fmt, dtype):
    """The per-channel extremes in one pass of ``_rounding.c`` (channels first, in the middle
    and last) against numpy's reductions over the other axes, on any float64 patterns: the
    scores' bytes are equal, and None (a value not finite on one side only) in both."""
    ndim = {"NCHW": 4, "NHWC": 4, "NCDHW": 5, "NDHWC": 5}.get(fmt) or data.draw(st.integers(2, 4))
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    size = math.prod(shape)
    elements = patterns | ordinary
    real = np.array(data.draw(st.lists(elements, min_size=size, max_size=size)), np.float64)
    replay = np.array(data.draw(st.lists(elements, min_size=size, max_size=size)), np.float64)
    if data.draw(st.booleans()):  # mostly close values: the common case
        replay = real + replay * 1e-3
    real, replay = real.reshape(shape), replay.reshape(shape)
    axis = noise.channel_axis(fmt, ndim)
    with np.errstate(all="ignore"):
        got = noise.channel_scores(real, replay, dtype, axis)
        expected = numpy_only(noise.channel_scores, real, replay, dtype, axis)
    assert (got is None) == (expected is None)
    if got is not None:
        assert same_bits(got, expected)


def test_channel_scores_of_views_and_other_dtypes():
    """A view (the dump's NC1HWC0 read as NCHW) is measured by the loops as its copy; float32
    takes the numpy path. Both give the numpy path's bytes."""
    x = np.linspace(-3, 3, 2 * 3 * 4 * 5).reshape(2, 3, 4, 5) ** 3
    y = x * (1 + 1e-4)
    view = x.transpose(0, 2, 3, 1)  # not contiguous
    assert noise._compiled_channel_extremes(view, y.transpose(0, 2, 3, 1), 3) is not None
    assert noise._compiled_channel_extremes(x.astype(np.float32), y, 1) is None
    for real, replay, axis in ((view, y.transpose(0, 2, 3, 1), 3), (x.astype(np.float32), y, 1)):
        got = noise.channel_scores(real, replay, "DT_FLOAT16", axis)
        assert same_bits(got, numpy_only(noise.channel_scores, real, replay, "DT_FLOAT16", axis))


def test_rounding_to_bool_is_what_a_cast_to_bool_gives():
    """A review (fortieth round): a value rounded to DT_BOOL was truncated first, so 0.5 and
    -0.2 became False where a cast to bool (the device's, numpy's) gives True; so did NaN."""
    from fusion_switch.diagnose.noise import round_to

    values = np.array([0.5, -0.2, 0.0, -0.0, 2.0, np.nan, np.inf, -np.inf])
    expected = values.astype(np.bool_).astype(np.float64)
    assert round_to(values, "DT_BOOL").tolist() == expected.tolist() == [1, 1, 0, 0, 1, 1, 1, 1]
