"""A fused op is proven wrong only where each of its original ops' kernels gives, from that op's
own fusion-off dump, the output that op dumped (a review of the kernels, forty-first round).

The noise floor checks a kernel on at most four fusion-off ops per type and dtype; a kernel
that computes one op otherwise than the device (an attribute it reads otherwise, a variant of
the op it does not know) was caught only when that op happened to be among them. Four max
poolings calibrated Pooling here; the average pooling the device computes over the real cells
only (the kernel counts the padding, as Caffe does) was then "proven wrong" in the fused op,
which computes exactly what the device computes.
"""

from __future__ import annotations

import numpy as np
from fusion_switch.diagnose.kernels import lookup
from fusion_switch.diagnose.replay import replay_run
from replay_support import MemoryStore, one_graph

X, C = (1, 4, 8, 8), 4


def _f16(values) -> np.ndarray:
    return np.asarray(values, np.float64).astype(np.float16).astype(np.float64)


def _desc(shape, origin: str = "") -> dict:
    attrs = [{"key": "origin_format", "value": {"s": "NCHW"}}]
    if origin:
        attrs += [
            {"key": "_datadump_origin_name", "value": {"s": origin}},
            {"key": "_datadump_origin_output_index", "value": {"i": 0}},
        ]
    return {"dtype": "DT_FLOAT16", "layout": "NCHW", "shape": {"dim": list(shape)}, "attr": attrs}


def _pooling(name: str, mode: int, pad: list[int], out) -> dict:
    ints = lambda key, v: {"key": key, "value": {"list": {"i": list(v)}}}  # noqa: E731
    return {
        "name": name,
        "type": "Pooling",
        "input": ["x:0"],
        "input_desc": [_desc(X)],
        "attr": [
            {"key": "mode", "value": {"i": mode}},
            ints("window", [3, 3]),
            ints("stride", [2, 2]),
            ints("pad", pad),
            {"key": "ceil_mode", "value": {"i": 0}},
        ],
        "output_desc": [_desc(out)],
    }


def _fused(name: str, member: str, out) -> dict:
    return {
        "name": name,
        "type": "Fused",
        "input": ["x:0"],
        "attr": [
            {"key": "_datadump_original_op_names", "value": {"list": {"s": [member]}}},
            {"key": "pass_name", "value": {"list": {"s": ["InnocentPass"]}}},
        ],
        "output_desc": [_desc(out, member)],
    }


def _pool(x, mode: int, pad: list[int]) -> np.ndarray:
    attrs = {"mode": mode, "window": [3, 3], "stride": [2, 2], "pad": pad, "ceil_mode": 0}
    return lookup("Pooling").fn([x], format="NCHW", **attrs)[0]


def test_an_op_its_kernel_does_not_reproduce_from_its_own_dump_proves_nothing() -> None:
    rng = np.random.default_rng(0)
    x_off = _f16(rng.standard_normal(X))
    x_on = _f16(x_off * (1 + 0.02 * rng.standard_normal(X)))

    def device_average(x):  # over the real cells only: not what the kernel computes
        return _pool(x, 1, [1, 1, 1, 1]) / _pool(np.ones(X), 1, [1, 1, 1, 1])

    off = [{"name": "x", "type": "Data", "output_desc": [_desc(X)]}]
    on = list(off)
    tensors = {}
    for k in range(4):  # the type's noise samples: max poolings, exact
        off.append(_pooling(f"max{k}", 0, [0, 0, 0, 0], (1, C, 4, 4)))
        on.append(_fused(f"fused_max{k}", f"max{k}", (1, C, 4, 4)))
        tensors |= {
            ("off", f"max{k}", "input", 0): x_off,
            ("off", f"max{k}", "output", 0): _f16(_pool(x_off, 0, [0] * 4)),
            ("on", f"fused_max{k}", "input", 0): x_on,
            ("on", f"fused_max{k}", "output", 0): _f16(_pool(x_on, 0, [0] * 4)),
        }
    off.append(_pooling("avg", 1, [1, 1, 1, 1], (1, C, 5, 5)))
    on.append(_fused("fused_avg", "avg", (1, C, 5, 5)))
    tensors |= {
        ("off", "avg", "input", 0): x_off,
        ("off", "avg", "output", 0): _f16(device_average(x_off)),
        ("on", "fused_avg", "input", 0): x_on,
        ("on", "fused_avg", "output", 0): _f16(device_average(x_on)),  # right
    }
    report = replay_run(one_graph(on), one_graph(off), MemoryStore(tensors), workers=1)
    verdicts = {r.op: r for r in report.results}
    # right, fed inputs that differ between the runs
    assert {verdicts[f"fused_max{k}"].verdict for k in range(4)} == {"propagates"}
    result = verdicts["fused_avg"]
    assert result.verdict == "unverified", (result.verdict, result.score, result.tolerance)
    assert "avg" in result.reason and "own" in result.reason, result.reason


def test_an_op_that_wrote_over_its_own_input_is_not_held_to_its_dump() -> None:
    """A second review: dumps are taken after an op runs, so an op writing its output over its
    input leaves an input dump holding its output; its right kernel "did not give its own
    dump", and a fused op 5% off was left unverified, the kernel blamed."""
    from replay_support import float_desc

    shape = (4, 64)
    rng = np.random.default_rng(0)

    def f32(values):
        return np.asarray(values, np.float32).astype(np.float64)

    def muls(name):
        attr = [{"key": "value", "value": {"f": 1.5}}]
        desc = {"output_desc": [float_desc(shape)], "input_desc": [float_desc(shape)]}
        return {"name": name, "type": "Muls", "input": ["x:0"], "attr": attr, **desc}

    def fused(name, member):
        names = {"key": "_datadump_original_op_names", "value": {"list": {"s": [member]}}}
        passes = {"key": "pass_name", "value": {"list": {"s": ["SomePass"]}}}
        desc = [float_desc(shape, member)]
        return {"name": name, "type": "Fused", "input": ["x:0"], "attr": [names, passes],
                "output_desc": desc}  # fmt: skip

    x_off = f32(rng.standard_normal(shape))
    x_on = f32(x_off * (1 + 0.01 * rng.standard_normal(shape)))
    off = [{"name": "x", "type": "Data", "output_desc": [float_desc(shape)]}]
    on = list(off)
    tensors = {}
    for k in range(4):  # the type's noise samples: right, not in place
        off.append(muls(f"m{k}"))
        on.append(fused(f"fused_m{k}", f"m{k}"))
        tensors |= {
            ("off", f"m{k}", "input", 0): x_off,
            ("off", f"m{k}", "output", 0): f32(x_off * 1.5),
            ("on", f"fused_m{k}", "input", 0): x_on,
            ("on", f"fused_m{k}", "output", 0): f32(x_on * 1.5),
        }
    off.append(muls("t"))
    on.append(fused("fused_t", "t"))
    tensors |= {
        ("off", "t", "input", 0): f32(x_off * 1.5),  # in place: its input dump holds its output
        ("off", "t", "output", 0): f32(x_off * 1.5),
        ("on", "fused_t", "input", 0): x_on,
        ("on", "fused_t", "output", 0): f32(x_on * 1.5 * 1.05),  # 5% off
    }
    report = replay_run(one_graph(on), one_graph(off), MemoryStore(tensors), workers=1)
    result = {r.op: r for r in report.results}["fused_t"]
    assert result.verdict == "introduces", (result.verdict, result.reason)
