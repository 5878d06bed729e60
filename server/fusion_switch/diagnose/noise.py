"""The replay score, rounding to a dtype, and the noise floor that calibrates the tolerance.

Score of a replayed tensor: ``max|real - replay| / max|replay|`` divided by the floor of the
output dtype (fp16 2^-10, bf16 2^-7, fp32 1e-5). One unit is "as far apart as two correct
kernels of that dtype can be"; above the tolerance (at least 1) the fused op introduces error.
Cosine is blind to a dropped scale factor and the relative Euclidean distance is weak on a few
saturated elements; the max-based score sees both.

The noise floor: fusion-off ops replayed against their own dumps (inputs from their dump, output
compared with their dump) give the score correct kernels reach, per op type and dtype. The
tolerance for a fused op is ``max(1, NOISE_MARGIN x`` the worst floor of its member types``)``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

# np.percentile and np.median import numpy.ma on their first call (~10 ms, issue 16): the
# replay's first verdict and the summary's noise floor paid it on the run's critical path. With
# this module it is imported earlier: in the replay's helper while it waits for its request.
import numpy.ma

from .json_numbers import json_number

try:
    from . import _rounding  # built by pip install from diagnose/_rounding.c; optional
except ImportError:  # pragma: no cover - exercised on machines without a C compiler
    _rounding = None

FLOORS = {"DT_FLOAT16": 2.0**-10, "DT_BF16": 2.0**-7, "DT_FLOAT": 1e-5, "DT_DOUBLE": 1e-12}
DEFAULT_FLOOR = 1e-5
NOISE_MARGIN = 4.0
MIN_TOLERANCE = 1.0  # a score at most this is within the dtype's rounding: never flagged
CHANNEL_GAIN = 2.0**12  # a channel is judged against at least its tensor's largest / this
# a score per channel is held to this many times the whole tensor's tolerance: fp16 0.8%, bf16
# 6%, fp32 0.008% of a channel's largest value at the least tolerance of 1
CHANNEL_FACTOR = 8.0
_MANTISSA_BITS = {"DT_FLOAT16": 11, "DT_BF16": 8, "DT_FLOAT": 24}
_SMALLEST_NORMAL = {"DT_FLOAT16": 2.0**-14, "DT_BF16": 2.0**-126, "DT_FLOAT": 2.0**-126}
_INT_TYPES = {
    "DT_INT8": np.int8,
    "DT_UINT8": np.uint8,
    "DT_INT16": np.int16,
    "DT_UINT16": np.uint16,
    "DT_INT32": np.int32,
    "DT_INT64": np.int64,
}
FP16_MAX = 65504.0
# outputs counted in steps of one: a difference of one step is the device's rounding to an
# integer (half away from zero, or truncation), which the replay does not copy exactly
INTEGER_DTYPES = frozenset({*_INT_TYPES, "DT_BOOL"})


def floor_of(dtype: str) -> float:
    return FLOORS.get(dtype, DEFAULT_FLOOR)


def in_units(value: float, counted_in: str, unit: str) -> float:
    """A score counted in ``counted_in``'s floor, counted in ``unit``'s instead."""
    return value * floor_of(counted_in) / floor_of(unit)


def round_to(values: np.ndarray, dtype: str) -> np.ndarray:
    """Round float64 values to the precision of ``dtype`` without its range: a value above
    65504 stays finite (the fp16 range is a localisation variant, not part of the replay)."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 0:  # a reduction over every axis: rounded as one value, kept 0-d
        return round_to(values.reshape(1), dtype).reshape(())
    if dtype in _MANTISSA_BITS:
        return _compiled_round(values, dtype) if compiled_in_use() else _numpy_round(values, dtype)
    if dtype == "DT_BOOL":  # a cast to bool: anything but zero is true (NaN too)
        return (values != 0).astype(np.float64)
    integer = _INT_TYPES.get(dtype)
    if integer is not None:
        finite = np.where(np.isfinite(values), values, 0.0)
        with np.errstate(invalid="ignore"):  # out of the type's range: what the cast gives
            return np.trunc(finite).astype(integer).astype(np.float64)
    return values


def _compiled_round(values: np.ndarray, dtype: str) -> np.ndarray:
    """:func:`round_to` by ``_rounding.c``; a tensor its loops decline (a special value) takes
    the numpy path whole."""
    bits, smallest = _MANTISSA_BITS[dtype], _SMALLEST_NORMAL[dtype]
    values = np.ascontiguousarray(values)
    out = np.empty_like(values)
    if dtype == "DT_FLOAT" and _rounding.round_float32(values, out):
        return out
    if _rounding.round_bits(values, out, bits, smallest):
        return out
    return _round_bits(values, bits, smallest)


_F32_SMALLEST = np.float32(2.0**-126)
_F32_MAX = np.float32(np.finfo(np.float32).max)


def _float32_cast(values: np.ndarray) -> np.ndarray | None:
    """``values`` cast to float32 and back when that gives the formula's bits, else None.

    The range is checked on the cast (half the bytes of the float64 values, and the cast is
    needed anyway): a NaN, an infinity or an overflow shows as a non-finite cast; a value below
    the smallest normal casts to at most 2^-126 in magnitude, so only the (few) casts that small
    are checked against their float64 values, which must be 0. A value above the float32
    maximum that still casts to it is what the formula gives it too (it rounds down to it)."""
    if values.size == 0:
        return None
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is what is looked for
        single = values.astype(np.float32)
    magnitude = np.abs(single)
    if not magnitude.max() <= _F32_MAX:  # also False for a NaN
        return None
    if not magnitude.min() > _F32_SMALLEST and values[magnitude <= _F32_SMALLEST].any():
        return None
    return single.astype(np.float64)


_EXPONENT = np.uint64(0x7FF0_0000_0000_0000)
_MAGNITUDE = np.uint64(0x7FFF_FFFF_FFFF_FFFF)


def _round_bits(values: np.ndarray, bits: int, smallest: float) -> np.ndarray:
    """``values`` rounded to ``bits`` significant bits, ties to even, and a magnitude below
    ``smallest`` (the dtype's smallest normal) to the dtype's subnormal grid: the same bits as
    :func:`_round_frexp`, computed on the float64 bit patterns (one pass of integer operations
    instead of frexp/ldexp). Zeros, float64 subnormals, infinities and NaNs (exponent field
    all 0 or all 1) take the frexp path, which keeps NaNs as they are."""
    drop = 53 - bits  # float64 carries 53 significant bits
    pattern = values.view(np.uint64)
    low = np.uint64((1 << drop) - 1)
    rounded = pattern + np.uint64((1 << (drop - 1)) - 1)
    rounded += (pattern >> np.uint64(drop)) & np.uint64(1)  # a tie rounds to the even neighbour
    rounded &= ~low  # a carry into the exponent is the next power of two (or inf), as ldexp
    exponent = pattern & _EXPONENT
    special = (exponent == 0) | (exponent == _EXPONENT)
    if special.any():
        special &= (pattern & _MAGNITUDE) != 0  # a zero stays itself either way
        if special.any():
            rounded[special] = _round_frexp(values[special], bits, smallest).view(np.uint64)
    result = rounded.view(np.float64)
    tiny = (pattern & _MAGNITUDE) < np.float64(smallest).view(np.uint64)
    if tiny.any():
        result[tiny] = _to_grid(values[tiny], bits, smallest)
    return result


def _round_frexp(values: np.ndarray, bits: int, smallest: float) -> np.ndarray:
    """The general formula: mantissa in [0.5, 1) rounded to ``bits`` bits, exponent kept; a
    magnitude below ``smallest`` rounded to the subnormal grid (:func:`_to_grid`)."""
    with np.errstate(invalid="ignore", over="ignore"):
        mantissa, exponent = np.frexp(values)
        scale = float(2**bits)
        rounded = np.ldexp(np.rint(mantissa * scale) / scale, exponent)
    tiny = np.abs(values) < smallest
    if tiny.any():
        rounded[tiny] = _to_grid(values[tiny], bits, smallest)
    return rounded


def _to_grid(values: np.ndarray, bits: int, smallest: float) -> np.ndarray:
    """Magnitudes below ``smallest`` rounded to multiples of the dtype's smallest subnormal
    (``smallest / 2^(bits - 1)``), ties to even, the sign kept (a tiny negative value gives
    -0, as a cast does): a float16 output of 3e-6 is 50 quanta of 2^-24, not 3e-6 to 11
    significant bits (a review: a clean network's subnormal activations were "proven")."""
    quantum = smallest * 2.0 ** (1 - bits)
    return np.copysign(np.rint(np.abs(values) / quantum) * quantum, values)


def score(real: np.ndarray, replay: np.ndarray, dtype: str) -> float:
    """``max|real - replay| / max|replay| / floor(dtype)``; inf where one side is not finite
    and the other is (or differs); 0 for two empty tensors."""
    real = np.asarray(real, dtype=np.float64).reshape(-1)
    replay = np.asarray(replay, dtype=np.float64).reshape(-1)
    if real.size == 0:
        return 0.0
    if compiled_in_use() and real.size == replay.size:
        parts = _rounding.extremes(np.ascontiguousarray(real), np.ascontiguousarray(replay))
        if parts is None:  # some value is not finite (or a difference overflows)
            return _score_masked(real, replay, dtype)
        difference, ref = parts
        return difference / (ref if ref > 0 else 1.0) / floor_of(dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = real - replay
        high, low = float(diff.max()), float(diff.min())
    if math.isfinite(high) and math.isfinite(low):  # then every value of both sides is finite
        # the largest magnitude is at one end: two reductions instead of two |x| temporaries
        ref = max(abs(float(replay.max())), abs(float(replay.min())))
        return max(abs(high), abs(low)) / (ref if ref > 0 else 1.0) / floor_of(dtype)
    return _score_masked(real, replay, dtype)


# the channel axis of a host layout (an ND tensor of two or more axes: its last, a matmul's
# output features); any other layout is not split
_CHANNEL_AXES = {"NCHW": 1, "NCDHW": 1, "NHWC": -1, "NDHWC": -1, "ND": -1}
_RANKS = {"NCHW": (4,), "NCDHW": (5,), "NHWC": (4,), "NDHWC": (5,), "ND": (2, 3, 4, 5, 6, 7, 8)}


def channel_axis(fmt: str, ndim: int) -> int | None:
    """The axis of ``fmt``'s channels in an array of ``ndim`` axes; None when there is none or
    the format does not match the array."""
    if fmt not in _CHANNEL_AXES or ndim not in _RANKS[fmt]:
        return None
    return _CHANNEL_AXES[fmt] % ndim


def channel_scores(
    real: np.ndarray, replay: np.ndarray, dtype: str, axis: int
) -> np.ndarray | None:
    """Each channel's :func:`score` against that channel's own largest value, held to at least
    the dtype's smallest normal (where the stored grid stops being relative) and the tensor's
    largest over :data:`CHANNEL_GAIN` (a channel whose values cancel to almost nothing raises
    a right kernel's score at most that many times). None when the shapes differ or a value
    is not finite on one side only (the whole-tensor score is infinite there); values not
    finite alike on both sides are left out, as :func:`score` leaves them.

    :func:`score` divides by the tensor's largest value: a channel 1e5 times smaller hid a
    50% error under it (a review)."""
    if real.shape != replay.shape or real.ndim < 2 or real.size == 0:
        return None
    parts = _compiled_channel_extremes(real, replay, axis) if compiled_in_use() else None
    if parts is not None:
        spread, top = parts
    else:
        spread, top = _channel_extremes(real, replay, axis)
        if spread is None:
            return None
    largest = float(top.max())
    held = max(_SMALLEST_NORMAL.get(dtype, 2.0**-126), (largest or 1.0) / CHANNEL_GAIN)
    return spread / np.maximum(top, held) / floor_of(dtype)


def _compiled_channel_extremes(
    real: np.ndarray, replay: np.ndarray, axis: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """Each channel's largest difference and replay magnitude in one pass of ``_rounding.c``;
    None when a value is not finite (the numpy path sorts that out) or the arrays are not
    float64. A view (the dump's NC1HWC0 laid out as NCHW, three outputs in four) is copied
    first: one strided pass, where numpy's reductions make five."""
    if real.dtype != np.float64 or replay.dtype != np.float64:
        return None
    real, replay = np.ascontiguousarray(real), np.ascontiguousarray(replay)
    channels = real.shape[axis]
    inner = math.prod(real.shape[axis + 1 :])
    outer = math.prod(real.shape[:axis])
    if channels == 0 or inner == 0 or outer == 0:
        return None
    spread, top = np.empty(channels), np.empty(channels)
    if not _rounding.channel_extremes(real, replay, outer, channels, inner, spread, top):
        return None
    return spread, top


def _channel_extremes(
    real: np.ndarray, replay: np.ndarray, axis: int
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """:func:`_compiled_channel_extremes` by numpy, values not finite alike on both sides left
    out; (None, None) where one side only is not finite, or a difference overflows."""
    others = tuple(a for a in range(real.ndim) if a != axis)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.subtract(real, replay)
        np.abs(diff, out=diff)
        spread = diff.max(axis=others)
        top = np.maximum(replay.max(axis=others), -replay.min(axis=others))
    if not (np.isfinite(spread).all() and np.isfinite(top).all()):
        alike = np.isfinite(real) & np.isfinite(replay)
        if not np.array_equal(real[~alike], replay[~alike], equal_nan=True):
            return None, None
        diff[~alike] = 0.0
        spread = diff.max(axis=others)
        top = np.where(alike, np.abs(replay), 0.0).max(axis=others)
        if not (np.isfinite(spread).all() and np.isfinite(top).all()):  # an overflow
            return None, None
    return spread, top


def worst_channel(scores: Sequence[float] | np.ndarray) -> tuple[float, int]:
    """The worst of :func:`channel_scores` and its channel."""
    worst = int(np.argmax(scores))
    return float(scores[worst]), worst


def channel_score(
    real: np.ndarray, replay: np.ndarray, dtype: str, axis: int
) -> tuple[float, int] | None:
    """:func:`worst_channel` of :func:`channel_scores` (None where those are None)."""
    scores = channel_scores(real, replay, dtype, axis)
    return None if scores is None else worst_channel(scores)


def _score_masked(real: np.ndarray, replay: np.ndarray, dtype: str) -> float:
    """:func:`score` where some value is not finite (or a difference overflows)."""
    finite_r, finite_p = np.isfinite(real), np.isfinite(replay)
    both = finite_r & finite_p
    if not np.array_equal(finite_r, finite_p):
        return math.inf
    if not both.all() and not np.array_equal(real[~both], replay[~both], equal_nan=True):
        return math.inf
    if not both.any():
        return 0.0
    diff = float(np.max(np.abs(real[both] - replay[both])))
    ref = float(np.max(np.abs(replay[both])))
    return diff / (ref if ref > 0 else 1.0) / floor_of(dtype)


NUMPY_ONLY_VARIABLE = "FUSION_SWITCH_REPLAY_MATH"
"""Set to ``numpy`` to round and score with numpy alone (to rule the compiled loops out)."""
_COMPILED_STATE: list[bool] = []  # [] not yet checked, [True] agreed with numpy, [False] not


def compiled_in_use() -> bool:
    """Whether rounding and scores use ``_rounding.c``: it was built, it is not switched off by
    ``FUSION_SWITCH_REPLAY_MATH=numpy``, and on first use it gave the numpy path's bits on
    :func:`probe_values`."""
    if not _COMPILED_STATE:
        off = os.environ.get(NUMPY_ONLY_VARIABLE, "").lower() == "numpy"
        _COMPILED_STATE.append(_rounding is not None and not off and _agrees_with_numpy())
    return _COMPILED_STATE[0]


def probe_values() -> list[np.ndarray]:
    """Values where rounding and extremes show a difference: ties at each precision, the ends
    of the float32 and fp16 ranges, subnormals, zeros of both signs, infinities and NaN."""
    top = float(np.finfo(np.float32).max)
    edges = [
        1.0 + 2.0**-11,  # fp16 tie, rounds to even
        1.0 + 3 * 2.0**-11,
        1.0 + 2.0**-24,  # float32 tie
        1.0 + 3 * 2.0**-24,
        -(1.0 + 2.0**-8),  # bf16 tie
        top,
        np.nextafter(top, np.inf),
        3.4028235677973366e38,  # rounds down to the float32 maximum
        2.0**-126,
        2.0**-127,
        65504.0,
        65520.0,
        2.0**-24,
        0.1,
        -1e-300,
        0.0,
        -0.0,
        3 * 2.0**-25,  # fp16 subnormal grid: a tie, rounds to 2^-23 (even)
        2.0**-25,  # half a quantum: 0
        -(2.0**-26),  # -0
        6.0e-5,  # just below fp16's smallest normal
        3 * 2.0**-150,  # float32 grid tie
        -(5 * 2.0**-135),  # bf16 grid tie
    ]
    ramp = np.linspace(-3.0, 7.0, 301) ** 3
    return [
        np.array(edges),
        ramp,
        np.array([1.0, 5e-324, 3.0]),  # a float64 subnormal
        np.array([1.0, math.inf]),
        np.array([math.nan, 2.0]),
        np.array([1e39, -2.0]),
        np.array([]),
    ]


def _agrees_with_numpy() -> bool:
    """The compiled loops against the numpy path (:func:`_numpy_round`; the extremes against
    numpy's maxima, a non-finite difference declined)."""
    values = probe_values()
    for x in values:
        for dtype in _MANTISSA_BITS:
            try:
                compiled = _compiled_round(x, dtype)
            except (TypeError, ValueError):  # a build of another version's loops
                return False
            if compiled.tobytes() != _numpy_round(x, dtype).tobytes():
                return False
    for x in values:
        for y in values:
            if x.size != y.size or x.size == 0:
                continue
            parts = _rounding.extremes(x, y)
            with np.errstate(invalid="ignore", over="ignore"):
                finite = np.isfinite(x - y).all()
            if parts is None:
                if finite:
                    return False
                continue
            if not finite or parts != (float(np.abs(x - y).max()), float(np.abs(y).max())):
                return False
            if not _channels_agree(x, y):
                return False
    return True


def _channels_agree(x: np.ndarray, y: np.ndarray) -> bool:
    """``_rounding.channel_extremes`` against numpy on ``x`` and ``y`` laid out as one, two and
    (where the size splits) three channels, the channels first, in the middle and last."""
    n = x.size
    layouts = [((n, 1), 0), ((1, n), 1), ((n, 1, 1), 1), ((1, 1, n), 1), ((1, n, 1), 2)]
    if n % 3 == 0:
        layouts += [((n // 3, 3), 1), ((3, n // 3), 0), ((1, 3, n // 3), 1)]
    for shape, axis in layouts:
        parts = _compiled_channel_extremes(x.reshape(shape), y.reshape(shape), axis)
        spread, top = _channel_extremes(x.reshape(shape), y.reshape(shape), axis)
        if parts is None:
            if spread is not None and np.isfinite(x).all() and np.isfinite(y).all():
                return False
            continue
        if spread is None or parts[0].tobytes() != spread.tobytes():
            return False
        if not np.array_equal(parts[1], top):  # numpy's top may be -0.0 where ours is 0.0
            return False
    return True


def _numpy_round(values: np.ndarray, dtype: str) -> np.ndarray:
    """:func:`round_to` to a float dtype without the compiled loops."""
    bits, smallest = _MANTISSA_BITS[dtype], _SMALLEST_NORMAL[dtype]
    if dtype == "DT_FLOAT":
        single = _float32_cast(values)
        return single if single is not None else _round_bits(values, bits, smallest)
    # fp16 and bf16: the bit operations, with no cast. A fp16 cast gave the same bits in the
    # normal range only, and checking that range then casting in software cost ~1.7x the bit
    # operations (0.034 s against 0.020 s for the 1,083 fp16 roundings of a 5,000-op run; half
    # of them had fp16 subnormals and took the bit operations anyway)
    return _round_bits(values, bits, smallest)


def coarser(first: str, second: str) -> str:
    """The dtype with the larger floor (a fp16 output compared with a fp32 original)."""
    return first if floor_of(first) >= floor_of(second) else second


@dataclass
class NoiseFloor:
    """Scores of correct kernels per (op type, dtype): the calibration of the tolerance."""

    samples: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    _levels: dict[tuple[str, str], float | None] = field(default_factory=dict, repr=False)
    # the same ops' :func:`channel_score`: the calibration of the check per channel
    channel_samples: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    # (type, dtype) -> a fusion-off op whose replay disagreed with its own dump on values that
    # are not finite: that kernel does not handle them as the device does, so it proves nothing
    disagreeing: dict[tuple[str, str], str] = field(default_factory=dict)

    def add(self, op_type: str, dtype: str, value: float, channel: float | None = None) -> None:
        if math.isfinite(value):
            self.samples.setdefault((op_type, dtype), []).append(value)
            self._levels.pop((op_type, dtype), None)
        if channel is not None and math.isfinite(channel):
            self.channel_samples.setdefault((op_type, dtype), []).append(channel)

    def channel_tolerance(self, members: Iterable[tuple[str, str]]) -> float:
        """The tolerance of a score per channel: :data:`CHANNEL_FACTOR` times
        :meth:`tolerance`, or more where the same correct kernels' channel scores (their
        largest: a few samples per type) call for it. A channel has fewer values than its
        tensor to even out a kernel's roundings."""
        members = list(members)
        levels = [max(v) for key in members if (v := self.channel_samples.get(key))]
        return max(
            CHANNEL_FACTOR * self.tolerance(members), NOISE_MARGIN * max(levels, default=0.0)
        )

    def level(self, op_type: str, dtype: str) -> float | None:
        """The 99th percentile of the floor of this type and dtype (None: never measured)."""
        key = (op_type, dtype)
        if key not in self._levels:
            values = self.samples.get(key)
            self._levels[key] = float(np.percentile(values, 99)) if values else None
        return self._levels[key]

    def disagree(self, op_type: str, dtype: str, op_name: str) -> None:
        """Op ``op_name``'s replay disagreed with its own dump on values that are not finite
        (its score is infinite or NaN: no level to keep)."""
        self.disagreeing.setdefault((op_type, dtype), op_name)

    def tolerance(self, members: Iterable[tuple[str, str]], unit: str | None = None) -> float:
        """``NOISE_MARGIN`` times the worst level of ``members``' (type, dtype), at least
        :data:`MIN_TOLERANCE`. ``unit``: the dtype the score is counted in; each level, counted
        in its own dtype's floor, is converted to it (a float16 member's rounding is ~100
        units of float32; a float32 member's is a hundredth of one of float16)."""
        levels = []
        for op_type, dtype in members:
            level = self.level(op_type, dtype)
            if level is not None:
                levels.append(level if unit is None else in_units(level, dtype, unit))
        return max(MIN_TOLERANCE, NOISE_MARGIN * max(levels, default=0.0))

    def to_json(self) -> list[dict]:
        rows = []
        for (op_type, dtype), values in sorted(self.samples.items()):
            arr = np.asarray(values)
            with np.errstate(over="ignore"):  # a median of two huge scores sums past the max
                median, p99 = np.median(arr), np.percentile(arr, 99)
            rows.append(
                {
                    "type": op_type,
                    "dtype": dtype,
                    "n": int(arr.size),
                    "median": json_number(median, 4),
                    "p99": json_number(p99, 4),
                    "max": json_number(arr.max(), 4),
                }
            )
        return rows
