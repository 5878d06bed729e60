"""The replay's CPU (issue 16, fifth round): each shortcut gives the very bits of what it replaced.

- dump tensors are decoded with one copy (a float64 dump still gives kernels an array of
  their own);
- convolution and pooling pad with :func:`kernels.common.pad_hw` instead of ``np.pad`` (the same
  array, in the same memory order), the convolution's windows are one strided view, and the
  pooling's window counts are worked out once per shape. The references below are the previous
  implementations, kept here to compare with.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from fusion_switch.diagnose import noise
from fusion_switch.diagnose.evidence import host_array
from fusion_switch.diagnose.kernels import lookup
from fusion_switch.diagnose.kernels.common import pad_hw
from fusion_switch.diagnose.kernels.conv import conv2d_nchw
from fusion_switch.diagnose.kernels.pooling import _out_size, pool2d
from fusion_switch.diagnose.kernels.registry import KernelError
from hypothesis import given, settings
from hypothesis import strategies as st
from rounding_reference import normal_range


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return np.array_equal(a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8))


# ----------------------------------------------------------------------------- evidence


class _Dump:
    """A dump whose one tensor decodes to ``values`` as a read-only view (what
    ``DumpFile.array(copy=False)`` gives for a file read whole)."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = values
        self.path = "x.bin"
        self.npy_dtype = values.dtype  # decoded by numpy, as an .npy dump is, not by the kernel
        self.asked_copy: list[bool] = []

    def array(self, tensor, *, copy: bool = True) -> np.ndarray:
        self.asked_copy.append(copy)
        view = self.values.copy()
        view.flags.writeable = False
        return view


def _tensor(shape) -> SimpleNamespace:
    return SimpleNamespace(shape=shape, original_shape=shape, format=2, name="t")


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32])
def test_kernel_inputs_are_float64_arrays_of_their_own_decoded_without_a_copy(dtype):
    values = np.arange(6, dtype=dtype).reshape(2, 3)
    dump = _Dump(values)
    got = host_array(dump, _tensor((2, 3)))
    assert dump.asked_copy == [False]
    assert got.dtype == np.float64 and got.flags.writeable and got.flags.owndata
    assert same_bits(got, values.astype(np.float64))


# ----------------------------------------------------------------------------- kernels


def _old_conv2d_nchw(x, w, strides, pads, dilations, groups):
    """The convolution before this round: np.pad and sliding_window_view."""
    n = x.shape[0]
    o, cg, kh, kw = w.shape
    (sh, sw), (dh, dw) = strides, dilations
    top, bottom, left, right = pads
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    eh, ew = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    win = np.lib.stride_tricks.sliding_window_view(xp, (eh, ew), axis=(2, 3))
    win = win[:, :, ::sh, ::sw, ::dh, ::dw]
    oh, ow = win.shape[2], win.shape[3]
    cols = win.reshape(n, groups, cg, oh, ow, kh, kw).transpose(1, 2, 5, 6, 0, 3, 4)
    cols = cols.reshape(groups, cg * kh * kw, n * oh * ow)
    wg = w.reshape(groups, o // groups, cg * kh * kw)
    out = (
        wg[0] @ cols[0] if groups == 1 else np.concatenate([wg[g] @ cols[g] for g in range(groups)])
    )
    return out.reshape(o, n, oh, ow).transpose(1, 0, 2, 3)


def _old_pool2d(x, k, s, pads, mode, count="exclusive", ceil=False, divisor=0):
    """The pooling before this round: np.pad and counts on every call."""
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (top, bottom, left, right) = k, s, pads
    oh = _out_size(h, kh, sh, top, bottom, ceil)
    ow = _out_size(w, kw, sw, left, right, ceil)
    extra_h = max((oh - 1) * sh + kh - (h + top + bottom), 0)
    extra_w = max((ow - 1) * sw + kw - (w + left + right), 0)
    spread = ((top, bottom + extra_h), (left, right + extra_w))
    fill = -np.inf if mode == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), *spread), constant_values=fill)
    valid = np.pad(np.ones((h, w)), spread)
    inside = np.pad(np.ones((h + top + bottom, w + left + right)), ((0, extra_h), (0, extra_w)))
    acc = np.full((n, c, oh, ow), fill)
    n_valid, n_inside = np.zeros((oh, ow)), np.zeros((oh, ow))
    for i in range(kh):
        for j in range(kw):
            rows, cols = slice(i, i + (oh - 1) * sh + 1, sh), slice(j, j + (ow - 1) * sw + 1, sw)
            tap = xp[:, :, rows, cols]
            if mode == "max":
                np.maximum(acc, tap, out=acc)
            else:
                acc += tap
            n_valid += valid[rows, cols]
            n_inside += inside[rows, cols]
    if np.any(n_valid == 0):
        raise KernelError("a pooling window lies entirely in the padding")
    if mode == "max":
        return acc
    if divisor:
        return acc / divisor
    den = {"exclusive": n_valid, "padded": n_inside}.get(count, float(kh * kw))
    return acc / den


LAYOUTS = ["C", "F", "NHWC view", "strided view"]


def _laid_out(values: np.ndarray, how: str) -> np.ndarray:
    if how == "F":
        return np.asfortranarray(values)
    if how == "NHWC view":  # what to_nchw gives for an NHWC input
        return np.ascontiguousarray(values.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    if how == "strided view":
        wide = np.zeros((*values.shape[:-1], values.shape[-1] * 2))
        wide[..., ::2] = values
        return wide[..., ::2]
    return values


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_pad_hw_is_np_pad(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=2, max_size=4)))
    values = np.random.default_rng(data.draw(st.integers(0, 99))).standard_normal(shape)
    if len(shape) == 4:
        values = _laid_out(values, data.draw(st.sampled_from(LAYOUTS)))
    pads = tuple(data.draw(st.lists(st.integers(0, 3), min_size=4, max_size=4)))
    fill = data.draw(st.sampled_from([0.0, -math.inf]))
    width = [(0, 0)] * (values.ndim - 2) + [(pads[0], pads[1]), (pads[2], pads[3])]
    expected = np.pad(values, width, constant_values=fill)
    got = pad_hw(values, pads, fill)
    assert same_bits(got, expected)
    assert (got.strides, got.flags.c_contiguous, got.flags.f_contiguous) == (
        expected.strides,
        expected.flags.c_contiguous,
        expected.flags.f_contiguous,
    )
    assert got is not values


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_the_convolution_gives_the_bits_it_gave_with_np_pad(data):
    draw = data.draw
    groups = draw(st.sampled_from([1, 1, 2, 3]))
    cg, og = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    n, h, w = draw(st.integers(1, 2)), draw(st.integers(3, 7)), draw(st.integers(3, 7))
    strides = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    dilations = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    pads = tuple(draw(st.lists(st.integers(0, 2), min_size=4, max_size=4)))
    if (kh - 1) * dilations[0] + 1 > h + pads[0] + pads[1]:
        return
    if (kw - 1) * dilations[1] + 1 > w + pads[2] + pads[3]:
        return
    rng = np.random.default_rng(draw(st.integers(0, 999)))
    x = _laid_out(rng.standard_normal((n, cg * groups, h, w)), draw(st.sampled_from(LAYOUTS)))
    weights = rng.standard_normal((og * groups, cg, kh, kw))
    expected = _old_conv2d_nchw(x, weights, strides, pads, dilations, groups)
    got = conv2d_nchw(x, weights, strides, pads, dilations, groups)
    assert same_bits(got, expected)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_pooling_gives_the_bits_it_gave_with_np_pad(data):
    draw = data.draw
    n, c, h, w = 1, draw(st.integers(1, 3)), draw(st.integers(2, 7)), draw(st.integers(2, 7))
    k = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    s = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    pads = (
        draw(st.integers(0, k[0] - 1)),
        draw(st.integers(0, k[0] - 1)),
        draw(st.integers(0, k[1] - 1)),
        draw(st.integers(0, k[1] - 1)),
    )
    mode = draw(st.sampled_from(["max", "avg"]))
    count = draw(st.sampled_from(["exclusive", "padded", "full"]))
    ceil, divisor = draw(st.booleans()), draw(st.sampled_from([0, 0, 5]))
    rng = np.random.default_rng(draw(st.integers(0, 999)))
    x = _laid_out(rng.standard_normal((n, c, h, w)), draw(st.sampled_from(LAYOUTS)))
    try:
        expected = _old_pool2d(x, k, s, pads, mode, count, ceil, divisor)
    except KernelError as error:
        with pytest.raises(KernelError, match=str(error)):
            pool2d(x, k, s, pads, mode, count, ceil, divisor)
        return
    for _ in range(2):  # the second time with the counts of the first
        assert same_bits(pool2d(x, k, s, pads, mode, count, ceil, divisor), expected)


def test_the_pooling_counts_kept_per_shape_cannot_be_changed_by_a_caller():
    x = np.ones((1, 1, 4, 4))
    first = pool2d(x, (3, 3), (1, 1), (1, 1, 1, 1), "avg")
    from fusion_switch.diagnose.kernels.pooling import _window_counts

    counts = _window_counts((4, 4), (3, 3), (1, 1), (1, 1, 1, 1), (4, 4))
    with pytest.raises(ValueError):
        counts[0][0, 0] = 99.0
    assert same_bits(pool2d(x, (3, 3), (1, 1), (1, 1, 1, 1), "avg"), first)


def test_registered_kernels_still_take_the_new_paths():
    conv, pool = lookup("Conv2D"), lookup("AvgPool")
    x = np.arange(2 * 3 * 5 * 5, dtype=np.float64).reshape(2, 3, 5, 5) / 7
    w = np.linspace(-1, 1, 4 * 3 * 3 * 3).reshape(4, 3, 3, 3)
    attrs = {"strides": [1, 1, 2, 2], "pads": [1, 1, 0, 1], "format": "NCHW"}
    got = conv.fn([x, w], **attrs)[0]
    assert same_bits(got, _old_conv2d_nchw(x, w, (2, 2), (1, 1, 0, 1), (1, 1), 1))
    pooled = pool.fn([x], ksize=[1, 1, 3, 3], strides=[1, 1, 1, 1], padding="SAME", format="NCHW")
    assert same_bits(pooled[0], _old_pool2d(x, (3, 3), (1, 1), (1, 1, 1, 1), "avg"))


# ----------------------------------------------------------------------------- handed over


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    from fusion_switch.compare.engine import CompareRequest, run_compare
    from fusion_switch.synth.generator import generate_case

    root = tmp_path_factory.mktemp("handed")
    case = generate_case(
        root / "case", n_ops=160, faults=["wrong_epsilon", "dropped_bias@3"], graph_text=False
    )
    request = CompareRequest(case.on_dump, case.off_dump, case.on_graph, case.off_graph, root / "o")
    return run_compare(request)


def test_what_is_handed_to_the_waiting_process_measures_as_the_graph_ops_do(outcome):
    """The waiting process gets :class:`.replay_handed.OpRead` copies, not the graph's ops: the
    scores, evidence and reasons it measures with them are the child's, and the pickle is
    smaller."""
    import pickle

    from fusion_switch.diagnose import replay
    from fusion_switch.diagnose.evidence import EvidenceStore
    from fusion_switch.diagnose.replay_handed import looked_up
    from fusion_switch.diagnose.replay_kernels import Kernels
    from fusion_switch.diagnose.subgraph import GraphIndex, build_subgraph, fused_ops

    on, off = GraphIndex.of(outcome.on_graph), GraphIndex.of(outcome.off_graph)
    subs = [build_subgraph(op, on, off) for op in fused_ops(outcome.on_graph)]
    assert len(subs) > 20
    here = replay.Replayer(EvidenceStore(outcome.on_dumps, outcome.off_dumps), off, Kernels())
    expected = {sub.fused.name: replay.measure_one(here, sub) for sub in subs}
    assert any(m[0] == "ok" for m in expected.values())
    light, off_ops = replay.handed_over(subs, off)
    light, off_ops = pickle.loads(pickle.dumps((light, off_ops)))  # as it travels
    store = EvidenceStore(outcome.on_dumps, outcome.off_dumps)
    got = replay.measure_handed(light, off_ops, store)
    assert got["measured"] == expected
    assert set(got["files_read"]) == {str(p) for p in here.store.files_read}
    heavy = len(pickle.dumps((subs, looked_up(off, subs)), protocol=pickle.HIGHEST_PROTOCOL))
    assert len(pickle.dumps((light, off_ops), protocol=pickle.HIGHEST_PROTOCOL)) < heavy / 2


def test_what_is_handed_to_the_waiting_process_localises_as_the_graph_ops_do(outcome):
    """The waiting process localises the flagged ops it measured (issue 16) from the same
    copies: every variant of every member (epsilons, axes over the input's rank, perms, the
    fused op's UB pass) must score as with the graph's ops. Each sub-graph is treated as
    flagged, with two candidate rules, so that its variants run."""
    import pickle

    from fusion_switch.diagnose import replay
    from fusion_switch.diagnose.evidence import EvidenceStore
    from fusion_switch.diagnose.localise import _variants, localise
    from fusion_switch.diagnose.replay_kernels import Kernels
    from fusion_switch.diagnose.subgraph import GraphIndex, build_subgraph, fused_ops

    class Flagged:
        rules, tolerance, score = ["GraphPassA", "GraphPassB"], 1e-3, 1.0
        channel_tolerance = None

    on, off = GraphIndex.of(outcome.on_graph), GraphIndex.of(outcome.off_graph)
    subs = [build_subgraph(op, on, off) for op in fused_ops(outcome.on_graph)]
    here = replay.Replayer(EvidenceStore(outcome.on_dumps, outcome.off_dumps), off, Kernels())
    light, off_ops = pickle.loads(pickle.dumps(replay.handed_over(subs, off)))
    there = replay.Replayer(
        EvidenceStore(outcome.on_dumps, outcome.off_dumps), GraphIndex(off_ops, {}, {}), Kernels()
    )
    ran = 0
    for sub, copy in zip(subs, light, strict=True):
        for member, read in zip(sub.members, copy.members, strict=True):  # axes: by the rank
            assert [v[0] for v in _variants(read)] == [v[0] for v in _variants(member)]
        expected = localise(here, sub, Flagged())
        assert localise(there, copy, Flagged()) == expected, sub.fused.name
        ran += bool(expected and expected.get("method") == "replay variants")
    assert ran >= 10


def test_the_handed_copies_pickle_as_their_values(outcome, monkeypatch):
    """:class:`.replay_handed.OpRead` and ``DescRead`` travel as one tuple of values each, not as
    pickle's default state of slotted objects (issue 16: ~40% more time to pickle, while the
    parent waits): every slot comes back equal, and the message is smaller than the default's."""
    import pickle

    from fusion_switch.diagnose import replay, replay_handed
    from fusion_switch.diagnose.subgraph import GraphIndex, build_subgraph, fused_ops

    on, off = GraphIndex.of(outcome.on_graph), GraphIndex.of(outcome.off_graph)
    subs = [build_subgraph(op, on, off) for op in fused_ops(outcome.on_graph)]
    handed = replay.handed_over(subs, off)
    message = pickle.dumps(handed, protocol=pickle.HIGHEST_PROTOCOL)
    light, off_ops = pickle.loads(message)

    def values(read):
        got = {}
        for name in type(read).__slots__:
            value = getattr(read, name)
            if isinstance(value, list) and value and hasattr(value[0], "__slots__"):
                value = [values(item) for item in value]
            got[name] = value
        return (type(read).__name__, got)

    pairs = [(a.fused, b.fused) for a, b in zip(handed[0], light, strict=True)]
    for a, b in zip(handed[0], light, strict=True):
        pairs += zip(a.members, b.members, strict=True)
    pairs += [(handed[1][name], off_ops[name]) for name in handed[1]]
    assert len(pairs) > 100 and any(a.attrs for a, _ in pairs)
    for sent, got in pairs:
        assert values(got) == values(sent)
    for cls in (replay_handed.OpRead, replay_handed.DescRead):
        if "__reduce__" in vars(cls):  # pickle's default for the size to beat
            monkeypatch.delattr(cls, "__reduce__")
    assert len(message) < 0.9 * len(pickle.dumps(handed, protocol=pickle.HIGHEST_PROTOCOL))


# ----------------------------------------------------------------------------- in place, rounding

finite_arrays = st.lists(
    st.floats(-800, 800) | st.floats(-1e300, 1e300) | st.sampled_from([0.0, -0.0]),
    min_size=1,
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(values=finite_arrays, rows=st.integers(1, 3), axis=st.sampled_from([0, 1, -1]))
def test_softmax_and_sigmoid_in_place_give_the_bits_of_the_expressions_they_replace(
    values, rows, axis
):
    x = np.tile(np.array(values), (rows, 1))
    with np.errstate(all="ignore"):
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        expected_softmax = e / e.sum(axis=axis, keepdims=True)
        expected_sigmoid = 1.0 / (1.0 + np.exp(-x))
        got_softmax = lookup("SoftmaxV2").fn([x], axes=[axis])[0]
        got_sigmoid = lookup("Sigmoid").fn([x])[0]
    assert same_bits(got_softmax, expected_softmax)
    assert same_bits(got_sigmoid, expected_sigmoid)


def _old_round_float32(values: np.ndarray) -> np.ndarray:
    """Rounding to float32 before this round (range checked on the float64 values)."""
    if normal_range(values, 2.0**-126, float(np.finfo(np.float32).max)):
        return values.astype(np.float32).astype(np.float64)
    return noise._round_bits(values, 24, 2.0**-126)


F32_EDGES = [
    float(np.finfo(np.float32).max),
    float(np.nextafter(float(np.finfo(np.float32).max), math.inf)),  # casts to the max, or not
    3.4028235677973366e38,  # the float32 max + half an ulp: a tie the cast sends to inf
    2.0**-126,
    float(np.nextafter(2.0**-126, 0.0)),  # below the normals, casts to 2^-126
    2.0**-126 - 2.0**-151,
    2.0**-149,
    0.0,
    -0.0,
    math.inf,
    math.nan,
]


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(
        st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True)
        | st.sampled_from(F32_EDGES)
        | st.floats(-1e3, 1e3),
        min_size=1,
        max_size=30,
    ),
    sign=st.sampled_from([1.0, -1.0]),
)
def test_rounding_to_float32_gives_the_bits_it_gave(values, sign):
    x = np.array(values) * sign
    assert same_bits(noise.round_to(x, "DT_FLOAT"), _old_round_float32(x))
    assert same_bits(noise.round_to(x, "DT_FLOAT"), noise._round_frexp(x, 24, 2.0**-126))


def test_values_just_above_the_float32_maximum_round_as_the_formula_does():
    top = float(np.finfo(np.float32).max)
    x = np.array([top, np.nextafter(top, np.inf), 3.4028235677973366e38, 1.0])
    assert same_bits(noise.round_to(x, "DT_FLOAT"), noise._round_frexp(x, 24, 2.0**-126))
    assert np.isfinite(noise.round_to(x, "DT_FLOAT")).all()  # the tie is 2^128, not inf


@pytest.mark.parametrize("values", [[1e300, 1.0], [-1e39], [math.inf, 2.0], [math.nan], [1e-320]])
def test_rounding_out_of_float32_range_warns_nothing(values):
    """The float32 cast overflowed with a RuntimeWarning, which numpy prints on the user's
    terminal in the middle of `compare`; the rounding itself was right."""
    import warnings

    x = np.array(values)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rounded = noise.round_to(x, "DT_FLOAT")
    assert same_bits(rounded, noise._round_frexp(x, 24, 2.0**-126))
