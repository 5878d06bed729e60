"""A fused kernel keeps its intermediates wider than the original ops' outputs.

The replay rounds every original op's output to its fusion-off dtype, as the unfused graph
computes. A fused kernel computes the chain in float32 and rounds once. Where an intermediate
is far larger than the output (a bias or a BatchNorm shift that cancels an offset), the
replay's own rounding of that intermediate is larger than the output's values: a right fused
op disagreed with its replay and its rule was "proven". The replay without the intermediate
roundings shows it right; a wrong op disagrees with both."""

from __future__ import annotations

import numpy as np
import pytest
from fusion_switch.diagnose.noise import NoiseFloor
from fusion_switch.diagnose.replay import Replayer, measure_one
from fusion_switch.diagnose.replay_decide import decide
from fusion_switch.diagnose.replay_kernels import Kernels
from fusion_switch.diagnose.replay_result import ReplayResult
from fusion_switch.diagnose.subgraph import GraphIndex, build_subgraph
from replay_support import MemoryStore, float_desc, fused_op, one_graph

SHAPE = (4, 64)


def _desc(origin: str = "", fmt: str = "ND") -> dict:
    attrs = [{"key": "origin_format", "value": {"s": fmt}}]
    if origin:
        attrs += [
            {"key": "_datadump_origin_name", "value": {"s": origin}},
            {"key": "_datadump_origin_output_index", "value": {"i": 0}},
        ]
    return {"dtype": "DT_FLOAT16", "layout": fmt, "shape": {"dim": list(SHAPE)}, "attr": attrs}


def _adds(name: str, source: str, value: float) -> dict:
    return {
        "name": name,
        "type": "Adds",
        "input": [source],
        "attr": [{"key": "value", "value": {"f": value}}],
        "output_desc": [_desc()],
    }


def _cancelling_chain():
    """x -> m1 = x + 1000 -> m2 = m1 - 1000 (float16 outputs), fused into one op."""
    x = {"name": "x", "type": "Data", "output_desc": [_desc()]}
    ops = [x, _adds("m1", "x:0", 1000.0), _adds("m2", "m1:0", -1000.0)]
    fused = fused_op(["x:0"], ["m1", "m2"], [_desc("m2")], op_type="Adds")
    on = GraphIndex.of(one_graph([x, fused]))
    off = GraphIndex.of(one_graph(ops))
    return build_subgraph(on.ops["fused"], on, off), off


def _verdict(device) -> tuple[ReplayResult, tuple]:
    sub, off = _cancelling_chain()
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(SHAPE) * 0.01).astype(np.float16).astype(np.float64)
    real = device(x).astype(np.float16).astype(np.float64)
    # a right kernel gives back its input here: the producer's dump shows it read those values
    store = MemoryStore(
        {
            ("on", "fused", "input", 0): x,
            ("on", "fused", "output", 0): real,
            ("on", "x", "output", 0): x,
        }
    )
    measured = measure_one(Replayer(store, off, Kernels()), sub)
    result = ReplayResult("fused", "Adds", 0, "unverified", rules=["G"])
    noise = NoiseFloor()
    noise.add("Adds", "DT_FLOAT16", 0.0)  # the kernel checked on a fusion-off Adds: exact
    decide(result, sub, measured, noise)
    return result, measured


def test_a_right_kernel_keeping_its_intermediates_wide_is_not_proven_wrong():
    # float32 throughout, one rounding at the end: what a fused kernel computes
    result, measured = _verdict(lambda x: (x.astype(np.float32) + 1000) - 1000)
    assert result.verdict == "clean", (result.verdict, result.reason, measured)
    assert result.evidence["unrounded_replay"]["used"] is True


@pytest.mark.parametrize("factor", [2.0, -1.0])
def test_a_wrong_kernel_disagrees_with_both_replays(factor):
    result, _ = _verdict(lambda x: x.astype(np.float32) * factor)
    assert result.verdict == "introduces", (result.verdict, result.reason)
    assert result.evidence["unrounded_replay"]["score"] > result.tolerance


def test_a_right_kernel_rounding_as_the_original_ops_do_needs_no_second_replay():
    result, _ = _verdict(
        lambda x: (x.astype(np.float16) + np.float16(1000)).astype(np.float16) - np.float16(1000)
    )
    assert result.verdict == "clean", (result.verdict, result.reason)
    assert "unrounded_replay" not in result.evidence


def test_the_unrounded_replay_keeps_the_roundings_that_are_an_op_s_purpose():
    """A Cast, and an op with an integer output (a quantization), round by what they are."""
    from fusion_switch.diagnose.replay_unrounded import rounded_keys

    sub, _ = _cancelling_chain()
    rounded = rounded_keys(sub)
    m1, m2 = sub.members
    assert rounded(m2, "m2:0")  # the fused output stands for it
    assert not rounded(m1, "m1:0")  # a float16 intermediate
    m1.type = "Cast"
    assert rounded(m1, "m1:0")
    m1.type = "Adds"
    m1.output_descs[0].dtype = "DT_INT8"
    assert rounded(m1, "m1:0")


def test_the_replay_with_the_fused_op_s_own_weights_leaves_out_the_same_roundings():
    """A review: a right fused op dumped at another step (a weight moved) over a cancelling
    float16 intermediate. The replay with its own weight kept the intermediate roundings
    (score 4.5) and missed "the runs held other weights"; with a sibling vouching for the
    weights, its rule was proven."""
    x = {"name": "x", "type": "Data", "output_desc": [_desc()]}
    c = {"name": "c", "type": "Const", "output_desc": [_desc()]}
    m1 = {"name": "m1", "type": "Add", "input": ["x:0", "c:0"], "output_desc": [_desc()]}
    m2 = _adds("m2", "m1:0", -1000.0)
    fused = fused_op(["x:0", "c:0"], ["m1", "m2"], [_desc("m2")], op_type="Add")
    on = GraphIndex.of(one_graph([x, c, fused]))
    off = GraphIndex.of(one_graph([x, c, m1, m2]))
    sub = build_subgraph(on.ops["fused"], on, off)
    rng = np.random.default_rng(3)

    def f16(values):
        return np.asarray(values).astype(np.float16).astype(np.float64)

    xv = f16(rng.standard_normal(SHAPE) * 0.01)
    c_off = f16(np.full(SHAPE, 1000.0) + rng.integers(-8, 8, SHAPE) * 0.5)
    c_on = f16(c_off + 4.0)  # the fusion-on run was dumped at another step
    real = f16((xv.astype(np.float32) + c_on.astype(np.float32)) - np.float32(1000))
    store = MemoryStore(
        {
            ("on", "fused", "input", 0): xv,
            ("on", "fused", "input", 1): c_on,
            ("on", "fused", "output", 0): real,
            ("off", "m1", "input", 0): xv,
            ("off", "m1", "input", 1): c_off,
        }
    )
    measured = measure_one(Replayer(store, off, Kernels()), sub)
    assert measured[2]["own_parameters_score"] <= 1.0, measured[2]
    result = ReplayResult("fused", "Add", 0, "unverified", rules=["G"])
    decide(result, sub, measured, NoiseFloor(), fold_witness=lambda: ("a sibling", ""))
    assert result.verdict == "unverified" and "same weights" in result.reason, result.reason


def test_an_empty_output_is_not_scored_by_channel():
    from fusion_switch.diagnose.noise import channel_scores

    for shape in ((0, 16), (4, 0)):
        assert channel_scores(np.zeros(shape), np.zeros(shape), "DT_FLOAT16", 1) is None


@pytest.mark.parametrize(
    "gone",
    [None, ("on", "x", "output", 0), ("off", "m1", "output", 0), "off of another size"],
    ids=["producer dumped", "producer not dumped", "no fusion-off output", "off sized apart"],
)
def test_a_wrong_op_written_over_its_own_input_is_not_passed_as_right(gone):
    """A review: an op that agrees with its replay was held against its producers for NaN
    only. A wrong Relu-like op writing its output over its input memory leaves an input dump
    equal to that output, on which its replay agrees (relu(y) = y): it "propagated" an error
    its producer never wrote, or was "clean" where fusion off had no output to compare. An
    input dump holding an output's values is now held against its producer's output; with
    no such dump (a Data or view producer, a dump not taken), nothing shows what the op read."""
    from replay_support import chain

    sub, off = chain(["Relu"], SHAPE, ["m1"])
    rng = np.random.default_rng(5)
    x = rng.standard_normal(SHAPE)
    wrong = np.abs(x) * 1.5  # what the fused op wrote, over its own input
    tensors = {
        ("on", "fused", "input", 0): wrong,
        ("on", "fused", "output", 0): wrong,
        ("on", "x", "output", 0): x,  # what the producer wrote
        ("off", "m1", "output", 0): np.maximum(x, 0.0),
    }
    if gone == "off of another size":
        tensors[("off", "m1", "output", 0)] = np.maximum(x, 0.0)[:, :32]
    elif gone is not None:
        del tensors[gone]
    measured = measure_one(Replayer(MemoryStore(tensors), off, Kernels()), sub)
    assert measured[0] == "unverified", measured
    assert "disagrees too" in measured[1] or "no dump of its producer" in measured[1], measured


def test_a_right_op_whose_input_holds_its_output_is_verified_on_its_producer():
    """Relu of positive values gives back its input: the look finds the input holding the
    output, and the producer's dump shows the op read those values."""
    from replay_support import chain

    sub, off = chain(["Relu"], SHAPE, ["m1"])
    x = np.abs(np.random.default_rng(6).standard_normal(SHAPE)) + 0.1
    tensors = {
        ("on", "fused", "input", 0): x,
        ("on", "fused", "output", 0): x,
        ("on", "x", "output", 0): x,
        ("off", "m1", "output", 0): x,
    }
    measured = measure_one(Replayer(MemoryStore(tensors), off, Kernels()), sub)
    assert measured[0] == "ok" and measured[1][0].score <= 1.0, measured


@pytest.mark.parametrize("values", ["zeros", "empty"])
def test_tensors_that_say_nothing_of_shared_memory_are_not_holding(values):
    """A review: an all-zero (or empty) input and output from a graph input were equal, so
    the op was taken as written over its input and, its producer not dumped, unverified."""
    from replay_support import chain

    shape = SHAPE if values == "zeros" else (0, 64)
    sub, off = chain(["Relu"], shape, ["m1"])
    zeros = np.zeros(shape)
    store = MemoryStore({("on", "fused", "input", 0): zeros, ("on", "fused", "output", 0): zeros})
    assert measure_one(Replayer(store, off, Kernels()), sub)[0] == "ok"


def test_an_output_written_over_the_head_of_a_larger_input_is_held_against_the_producer():
    """A review: a wrong Relu+SplitVD wrote its first (smaller) output over the head of its
    input's memory: the sizes differ, no input was taken as holding, and the replay on the
    damaged input agreed with the wrong output."""
    whole, half = (8, 64), (4, 64)

    desc = float_desc
    data = {"name": "x", "type": "Data", "output_desc": [desc(whole)]}
    p = _adds("p", "x:0", 0.0) | {"output_desc": [desc(whole)]}
    m1 = {"name": "m1", "type": "Relu", "input": ["p:0"], "output_desc": [desc(whole)]}
    m2 = {
        "name": "m2",
        "type": "SplitVD",
        "input": ["m1:0"],
        "output_desc": [desc(half), desc(half)],
        "attr": [
            {"key": "size_splits", "value": {"list": {"i": [4, 4]}}},
            {"key": "split_dim", "value": {"i": 0}},
            {"key": "num_split", "value": {"i": 2}},
        ],
    }
    fused = fused_op(["p:0"], ["m1", "m2"], [desc(half, "m2", 0), desc(half, "m2", 1)])
    on = GraphIndex.of(one_graph([data, p, fused]))
    off = GraphIndex.of(one_graph([data, p, m1, m2]))
    sub = build_subgraph(on.ops["fused"], on, off)
    x = np.random.default_rng(2).standard_normal(whole)
    right = np.maximum(x, 0)
    wrong0 = right[:4] * 1.5 + 0.25
    given = x.copy()
    given[:4] = wrong0  # written over the head of its input
    store = MemoryStore(
        {
            ("on", "fused", "input", 0): given,
            ("on", "fused", "output", 0): wrong0,
            ("on", "fused", "output", 1): right[4:],
            ("on", "p", "output", 0): x,
        }
    )
    measured = measure_one(Replayer(store, off, Kernels()), sub)
    assert measured[0] == "unverified", measured


def test_a_constant_input_equal_to_the_output_is_not_taken_as_written_over():
    """A review: Add(an all-zero activation, a constant table) + Relu gives the table back;
    the constant's input position was taken as holding the output and, a Const never dumped,
    the right op was unverified. The replay reads constants from fusion off."""

    def desc():
        return float_desc(SHAPE)

    xs = {"name": "x", "type": "Data", "output_desc": [desc()]}
    a = {"name": "a", "type": "Relu", "input": ["x:0"], "output_desc": [desc()]}
    c = {"name": "c", "type": "Const", "output_desc": [desc()]}
    m1 = {"name": "m1", "type": "Add", "input": ["a:0", "c:0"], "output_desc": [desc()]}
    m2 = {"name": "m2", "type": "Relu", "input": ["m1:0"], "output_desc": [desc()]}
    fused = fused_op(["a:0", "c:0"], ["m1", "m2"], [float_desc(SHAPE, "m2")])
    on = GraphIndex.of(one_graph([xs, a, c, fused]))
    off = GraphIndex.of(one_graph([xs, a, c, m1, m2]))
    sub = build_subgraph(on.ops["fused"], on, off)
    zero, table = np.zeros(SHAPE), np.abs(np.random.default_rng(8).standard_normal(SHAPE))
    store = MemoryStore(
        {
            ("on", "fused", "input", 0): zero,
            ("on", "fused", "input", 1): table,
            ("on", "fused", "output", 0): table,
            ("on", "a", "output", 0): zero,
            ("off", "m1", "input", 1): table,
            ("off", "m2", "output", 0): table,
        }
    )
    measured = measure_one(Replayer(store, off, Kernels()), sub)
    assert measured[0] == "ok" and measured[1][0].score <= 1.0, measured


def test_an_input_read_through_a_view_is_held_against_the_op_behind_the_view():
    """A review: a right Relu fed through a Reshape (a view GE runs without a task, never
    dumped) of a dumped op gave back its input; no dump of the view showed what it read, and
    it was unverified. The op behind the view wrote those values."""

    desc = float_desc
    flat = (SHAPE[0] * SHAPE[1],)
    data = {"name": "x", "type": "Data", "output_desc": [desc(flat)]}
    p = {"name": "p", "type": "Relu", "input": ["x:0"], "output_desc": [desc(flat)]}
    r = {"name": "r", "type": "Reshape", "input": ["p:0"], "output_desc": [desc(SHAPE)]}
    m1 = {"name": "m1", "type": "Relu", "input": ["r:0"], "output_desc": [desc(SHAPE)]}
    fused = fused_op(["r:0"], ["m1"], [desc(SHAPE, "m1")])
    on = GraphIndex.of(one_graph([data, p, r, fused]))
    off = GraphIndex.of(one_graph([data, p, r, m1]))
    sub = build_subgraph(on.ops["fused"], on, off)
    x = np.abs(np.random.default_rng(1).standard_normal(SHAPE))
    store = MemoryStore(
        {
            ("on", "fused", "input", 0): x,
            ("on", "fused", "output", 0): x,
            ("on", "p", "output", 0): x.reshape(-1),
            ("off", "m1", "output", 0): x,
        }
    )
    measured = measure_one(Replayer(store, off, Kernels()), sub)
    assert measured[0] == "ok", measured
