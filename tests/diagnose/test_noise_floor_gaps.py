"""The noise floor and the scores never prove a right op wrong (a review of the calibration,
fortieth round of issue 16). Each case is a fused op that computes exactly as its fusion-off
ops do on the (simulated) device, yet was "proven by replay":

- an int8 output one step away from its replay (the device rounds to an integer otherwise);
- NaN from upstream, which the device's Relu makes 0 and the kernel keeps, the fusion-off
  sample that showed it dropped from the floor;
- a type calibrated only by samples whose inputs hold one value (exact on any device);

and the floor's units and sampling: a float16 output of float32 ops was held to float32's
tolerance (3% wrong called clean), and a float16 op was never sampled after four float32 ones
of its type (then "dump the fusion-off run's ops of that type", which were dumped).
"""

from __future__ import annotations

import numpy as np
from fusion_switch.diagnose.replay import replay_run
from replay_support import MemoryStore, one_graph


def _desc(shape, dtype="DT_FLOAT", origin=""):
    attrs = []
    if origin:
        attrs = [
            {"key": "_datadump_origin_name", "value": {"s": origin}},
            {"key": "_datadump_origin_output_index", "value": {"i": 0}},
        ]
    return {"dtype": dtype, "layout": "ND", "shape": {"dim": list(shape)}, "attr": attrs}


def _op(name, op_type, inputs, out_desc, attrs=None):
    attr = [{"key": k, "value": v} for k, v in (attrs or {}).items()]
    return {"name": name, "type": op_type, "input": inputs, "output_desc": [out_desc], "attr": attr}


def _fused(name, inputs, members, out_desc, rule, op_type="Fused"):
    return {
        "name": name,
        "type": op_type,
        "input": inputs,
        "attr": [
            {"key": "_datadump_original_op_names", "value": {"list": {"s": members}}},
            {"key": "pass_name", "value": {"list": {"s": [rule]}}},
        ],
        "output_desc": [out_desc],
    }


def _verdicts(on_ops, off_ops, tensors) -> dict[str, object]:
    report = replay_run(one_graph(on_ops), one_graph(off_ops), MemoryStore(tensors), workers=1)
    return {r.op: r for r in report.results}


def _f16(values):
    return np.asarray(values, dtype=np.float64).astype(np.float16).astype(np.float64)


def _f32(values):
    return np.asarray(values, dtype=np.float64).astype(np.float32).astype(np.float64)


def _relu_then(
    kind,
    cases,
    shape,
    device,
    *,
    out_dtype="DT_FLOAT",
    member_dtype="DT_FLOAT",
    last_dtype=None,
    attrs=None,
    fused_type="Fused",
):
    """Per case (tag, fusion-off input, fusion-on input): Relu -> ``kind`` (with ``attrs``;
    its output ``last_dtype``, the members' by default) fused into one op, every output
    computed by ``device`` (the same function on both runs: no op is wrong)."""
    on_ops, off_ops, tensors = [], [], {}
    for tag, x_off, x_on in cases:
        relu, last = f"relu_{tag}", f"{kind.lower()}_{tag}"
        data = _op(f"x_{tag}", "Data", [], _desc(shape, member_dtype))
        off_ops += [
            data,
            _op(relu, "Relu", [f"x_{tag}:0"], _desc(shape, member_dtype)),
            _op(last, kind, [f"{relu}:0"], _desc(shape, last_dtype or member_dtype), attrs),
        ]
        out = _desc(shape, out_dtype, last)
        fused = _fused(f"fused_{tag}", [f"x_{tag}:0"], [relu, last], out, f"R_{tag}", fused_type)
        on_ops += [data, fused]
        r_off, r_on = np.maximum(x_off, 0.0), np.maximum(x_on, 0.0)
        tensors |= {
            ("off", relu, "input", 0): x_off,
            ("off", relu, "output", 0): r_off,
            ("off", last, "input", 0): r_off,
            ("off", last, "output", 0): device(r_off),
            ("on", f"fused_{tag}", "input", 0): x_on,
            ("on", f"fused_{tag}", "output", 0): device(r_on),
        }
    return on_ops, off_ops, tensors


def test_one_step_of_an_integer_output_proves_nothing():
    """The device quantises x * scale in float16 and rounds; the float64 replay differs by one
    step on a few values, which scores 1 / max|output| / 1e-5: thousands on small outputs."""
    shape, scale = (4, 256), 0.3701171875
    attrs = {
        "scale": {"f": scale},
        "offset": {"f": 0.0},
        "round_mode": {"s": "Round"},
        "dst_type": {"i": 2},
        "sqrt_mode": {"b": False},
    }

    def device(x):
        return np.clip(np.rint(_f16(_f16(x) * _f16(scale))), -128, 127)

    rng = np.random.default_rng(0)
    cases = []
    for k, spread in enumerate([200.0, 220.0, 180.0, 240.0, 20.0]):
        x_off = _f16(rng.normal(0.0, spread, shape))
        cases.append((str(k), x_off, _f16(x_off * (1.0 + 2e-3 * rng.standard_normal(shape)))))
    case = _relu_then(
        "AscendQuant",
        cases,
        shape,
        device,
        out_dtype="DT_INT8",
        member_dtype="DT_FLOAT16",
        last_dtype="DT_INT8",
        attrs=attrs,
        fused_type="AscendQuant",
    )
    found = _verdicts(*case)
    small = found["fused_4"]
    assert small.outputs[0].score > small.tolerance  # one step on a small range: a high score
    assert small.outputs[0].steps == 1.0
    assert small.verdict == "unverified" and "one step" in small.reason, small.reason
    assert all(r.verdict != "introduces" for r in found.values())


def test_nan_the_device_and_the_kernel_handle_otherwise_proves_nothing():
    """fusion-off relu_a reads NaN in both runs (the device's Relu gives 0, the kernel keeps
    NaN: an infinite score, dropped from the floor); relu_b reads NaN in the fusion-on run
    only, from upstream. Relu stayed calibrated by the finite sample and fused_b was proven."""
    shape = (8, 64)
    rng = np.random.default_rng(5)

    def device(x):
        return np.where(np.isnan(x), 0.0, x) * 0.5

    x_a = rng.normal(size=shape)
    x_a.reshape(-1)[[1, 7]] = np.nan
    x_b = _f32(rng.normal(size=shape))
    x_b_on = x_b.copy()
    x_b_on.reshape(-1)[np.flatnonzero(x_b.reshape(-1) > 0.5)[:3]] = np.nan
    on_ops, off_ops, tensors = _relu_then(
        "Muls", [("a", x_a, x_a), ("b", x_b, x_b_on)], shape, lambda r: device(r)
    )
    for ops in (on_ops, off_ops):  # Muls by 0.5
        for op in ops:
            if op["type"] == "Muls":
                op["attr"].append({"key": "value", "value": {"f": 0.5}})
    for tag, x in (("a", x_a), ("b", x_b)):  # the device's Relu: NaN to 0
        relu = np.where(np.isnan(x), 0.0, np.maximum(x, 0.0))
        tensors[("off", f"relu_{tag}", "output", 0)] = relu
        tensors[("off", f"muls_{tag}", "input", 0)] = relu
        tensors[("off", f"muls_{tag}", "output", 0)] = relu * 0.5
    on_b = tensors[("on", "fused_b", "input", 0)]
    tensors[("on", "fused_b", "output", 0)] = np.where(np.isnan(on_b), 0.0, on_b).clip(0) * 0.5
    found = _verdicts(on_ops, off_ops, tensors)
    assert found["fused_b"].verdict == "unverified", found["fused_b"].reason
    assert "not finite" in found["fused_b"].reason
    assert all(r.verdict != "introduces" for r in found.values())


def test_samples_whose_inputs_hold_one_value_calibrate_nothing():
    """Four fusion-off Sigmoid ops read zeros (a Relu of negative values): sigmoid(0) is exact
    on any device, so they set Sigmoid's floor to 0 and the least tolerance; the right
    Sigmoid of the fifth, on varied values, then exceeded it."""
    shape = (2, 64)

    def device(x):  # an approximated sigmoid, as a device's
        return _f32(1.0 / (1.0 + np.exp(-x)) * (1.0 + 1e-4 * np.sin(37.0 * x)))

    rng = np.random.default_rng(3)
    cases = []
    for k in range(4):
        negative = _f32(-np.abs(rng.normal(0, 2.0, shape)) - 0.1)
        cases.append((f"c{k}", negative, negative))
    x = _f32(rng.normal(0.0, 2.0, shape))
    cases.append(("target", x, _f32(x * (1 + 1e-4 * rng.standard_normal(shape)))))
    found = _verdicts(*_relu_then("Sigmoid", cases, shape, device))
    assert found["fused_target"].verdict in ("clean", "propagates"), found["fused_target"].reason
    assert found["fused_target"].tolerance > 1.0  # its own fusion-off Sigmoid calibrated it


def test_a_float16_output_of_float32_ops_is_held_to_float16_s_rounding():
    """The score is counted in float16's units, the floor of float32 ops in float32's: the
    tolerance was ~100 times too loose, and an output 3% wrong was clean."""
    shape = (2, 64)
    rng = np.random.default_rng(4)

    def device(x):
        return 1.0 / (1.0 + np.exp(-x)) * (1.0 + 1e-4 * np.sin(37.0 * x))

    cases = [(t, _f32(x), _f32(x)) for t, x in (("a", rng.normal(0, 2.0, shape)),)]
    x_wrong = _f32(rng.normal(0, 2.0, shape))
    cases.append(("wrong", x_wrong, x_wrong))
    on_ops, off_ops, tensors = _relu_then("Sigmoid", cases, shape, lambda r: _f32(device(r)))
    for op in on_ops:
        if op["name"] == "fused_wrong":
            op["output_desc"][0]["dtype"] = "DT_FLOAT16"
    wrong = np.maximum(x_wrong, 0.0)
    tensors[("on", "fused_wrong", "output", 0)] = _f16(device(wrong) * 1.03)
    found = _verdicts(on_ops, off_ops, tensors)
    assert found["fused_a"].verdict == "clean"
    wrong = found["fused_wrong"]
    assert wrong.outputs[0].dtype == "DT_FLOAT16"
    assert wrong.verdict == "introduces" and wrong.tolerance == 1.0, (wrong.tolerance, wrong.reason)


def test_each_dtype_of_a_type_gets_its_own_samples():
    """Four float32 Sigmoid ops used up the samples of Sigmoid; the float16 one of the fifth,
    dumped, was never sampled, and its op was unverified with "dump the fusion-off run's ops of
    that type"."""
    shape = (2, 64)
    rng = np.random.default_rng(6)

    def device(x):
        return 1.0 / (1.0 + np.exp(-x)) * (1.0 + 1e-4 * np.sin(37.0 * x))

    on_ops, off_ops, tensors = [], [], {}
    for k, dtype in enumerate(["DT_FLOAT"] * 4 + ["DT_FLOAT16"]):
        rounded = _f32 if dtype == "DT_FLOAT" else _f16
        x = rounded(rng.normal(0, 2, shape))
        case = _relu_then(
            "Sigmoid",
            [(str(k), x, x)],
            shape,
            lambda r, rounded=rounded: rounded(device(r)),
            out_dtype=dtype,
            member_dtype=dtype,
        )
        on_ops, off_ops = on_ops + case[0], off_ops + case[1]
        tensors |= case[2]
    r = np.maximum(tensors[("on", "fused_4", "input", 0)], 0.0)
    tensors[("on", "fused_4", "output", 0)] = _f16(device(r) * 1.05)  # 5% wrong
    found = _verdicts(on_ops, off_ops, tensors)
    assert found["fused_4"].verdict == "introduces", found["fused_4"].reason


def test_every_output_of_a_sample_calibrates_the_floor():
    """A review: only output 0 of a fusion-off op was scored for the floor, so a fused output
    standing for a LayerNorm's variance was held to the tolerance its y (exact here) gave."""
    shape, reduced = (4, 32), (4, 1)
    rng = np.random.default_rng(7)

    def device(x, gamma, beta):  # the device's variance: another summation, ~1e-4 apart
        mean = x.mean(axis=1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
        y = (x - mean) / np.sqrt(var + 1e-5) * gamma + beta
        var = var * (1.0 + 1e-4 * np.sin(np.arange(var.size)).reshape(var.shape))
        return [_f32(y), _f32(mean), _f32(var)]

    def ln_descs(origin=""):
        descs = [_desc(shape), _desc(reduced), _desc(reduced)]
        if origin:
            descs = [_desc(reduced, origin=origin)]
            descs[0]["attr"][1]["value"]["i"] = 2
        return descs

    attrs = {"begin_norm_axis": {"i": 1}, "begin_params_axis": {"i": 1}, "epsilon": {"f": 1e-5}}
    on_ops, off_ops, tensors = [], [], {}
    gamma, beta = _f32(rng.uniform(0.5, 1.5, 32)), _f32(rng.normal(0, 0.1, 32))
    for k in range(5):
        x = _f32(rng.normal(0, 2.0, shape))
        ln = f"ln{k}"
        data = _op(f"x{k}", "Data", [], _desc(shape))
        consts = [_op(f"g{k}", "Const", [], _desc((32,))), _op(f"b{k}", "Const", [], _desc((32,)))]
        layer_norm = _op(ln, "LayerNorm", [f"x{k}:0", f"g{k}:0", f"b{k}:0"], _desc(shape), attrs)
        layer_norm["output_desc"] = ln_descs()
        off_ops += [data, *consts, layer_norm]
        fused = _fused(f"fused{k}", [f"x{k}:0", f"g{k}:0", f"b{k}:0"], [ln], None, f"R{k}")
        fused["output_desc"] = ln_descs(ln)
        on_ops += [data, *consts, fused]
        outs = device(x, gamma, beta)
        tensors |= {("off", ln, "input", 0): x, ("off", ln, "input", 1): gamma}
        tensors |= {("off", ln, "input", 2): beta}
        tensors |= {("off", ln, "output", i): out for i, out in enumerate(outs)}
        x_on = _f32(x * (1.0 + 1e-3 * rng.standard_normal(shape)))  # drift from upstream
        on_inputs = (x_on, gamma, beta)
        tensors |= {("on", f"fused{k}", "input", i): v for i, v in enumerate(on_inputs)}
        tensors[("on", f"fused{k}", "output", 0)] = device(*on_inputs)[2]  # a right op
    found = _verdicts(on_ops, off_ops, tensors)
    assert all(r.outputs and r.outputs[0].origin.endswith(":2") for r in found.values())
    assert all(r.verdict in ("clean", "propagates") for r in found.values()), {
        name: (r.verdict, r.tolerance, r.reason) for name, r in found.items()
    }
