"""One fused op built by several passes, replayed and localised in memory as the command line
does (``op_rules`` + ``localiser``, then ``rule_verdicts``): the fusion-off dumps are the
reference kernels' outputs (the simulated device), the fused op's output is the caller's."""

from __future__ import annotations

import numpy as np
from fusion_switch.diagnose.noise import round_to
from fusion_switch.diagnose.replay import replay_run
from fusion_switch.diagnose.replay_job import localiser
from fusion_switch.diagnose.replay_kernels import Kernels
from fusion_switch.diagnose.rules import op_rules
from fusion_switch.diagnose.subgraph import GraphIndex
from fusion_switch.diagnose.verdict import rule_verdicts
from replay_support import MemoryStore, one_graph


class _Store(MemoryStore):
    def release_arrays(self) -> None:  # nothing cached to let go
        pass


def _value(v):
    if isinstance(v, bool):
        return {"b": v}
    if isinstance(v, int):
        return {"i": v}
    if isinstance(v, float):
        return {"f": v}
    if isinstance(v, str):
        return {"s": v}
    if all(isinstance(x, int) for x in v):
        return {"list": {"i": list(v)}}
    return {"list": {"s": list(v)}}


def _desc(shape, origin="", dtype="DT_FLOAT", layout="ND"):
    attrs = []
    if origin:
        attrs = [
            {"key": "_datadump_origin_name", "value": {"s": origin}},
            {"key": "_datadump_origin_output_index", "value": {"i": 0}},
        ]
    return {"dtype": dtype, "layout": layout, "shape": {"dim": list(shape)}, "attr": attrs}


def _op(name, op_type, inputs, shape, attrs=None, dtype="DT_FLOAT"):
    return {
        "name": name,
        "type": op_type,
        "input": list(inputs),
        "attr": [{"key": k, "value": _value(v)} for k, v in (attrs or {}).items()],
        "output_desc": [_desc(shape, dtype=dtype)],
    }


def localised(
    spec, data, pass_attrs, fault, fusion_result=None, dtype="DT_FLOAT", off_noise=None, layout="ND"
):
    """``spec``: the original ops in order, (name, type, inputs, attrs), all fused into one op
    carrying ``pass_attrs``; ``data``: graph inputs and constants (names starting ``c_``);
    ``fault(values by op name)``: the fused op's output. ``dtype``: of every tensor;
    ``off_noise``: op name -> how far (relative to its largest value) the device's fusion-off
    kernel of that op is from the reference, which raises the tolerance as on a real device;
    ``layout``: the fused op's output's (where its channels are).
    Returns (its result, rule -> verdict)."""
    kernels = Kernels()
    rng = np.random.default_rng(0)
    off_ops = [
        _op(n, "Const" if n.startswith("c_") else "Data", [], np.shape(v), dtype=dtype)
        for n, v in data.items()
    ]
    values = {f"{n}:0": round_to(np.asarray(v, np.float64), dtype) for n, v in data.items()}
    dumped = {}
    for name, op_type, inputs, attrs in spec:
        op = _op(name, op_type, inputs, (1,), attrs, dtype)
        graph = GraphIndex.of(one_graph([*off_ops, op]))
        out = kernels.run(graph.ops[name], [values[r] for r in inputs])[0]
        off_ops.append(_op(name, op_type, inputs, out.shape, attrs, dtype))
        values[f"{name}:0"] = exact = round_to(out, dtype)
        off = (off_noise or {}).get(name, 0.0) * (float(np.max(np.abs(exact))) or 1.0)
        dumped[name] = round_to(exact + off * rng.uniform(-1, 1, exact.shape), dtype)
    tensors = {}
    for name, _, inputs, _ in spec:
        for i, ref in enumerate(inputs):
            tensors[("off", name, "input", i)] = values[ref]
        tensors[("off", name, "output", 0)] = dumped[name]
    members = [name for name, *_ in spec]
    boundary = list(
        dict.fromkeys(
            ref
            for _, _, inputs, _ in spec
            for ref in inputs
            if ref.split(":")[0] not in members and not ref.startswith("c_")
        )
    )
    attrs = [{"key": "_datadump_original_op_names", "value": {"list": {"s": members}}}]
    attrs += [{"key": k, "value": _value(v)} for k, v in pass_attrs.items()]
    last = members[-1]
    fused = {
        "name": "fused",
        "type": "Fused",
        "input": boundary,
        "attr": attrs,
        "output_desc": [_desc(np.shape(values[f"{last}:0"]), last, dtype, layout)],
    }
    on_ops = [o for o in off_ops if o["type"] == "Data"] + [fused]
    for i, ref in enumerate(boundary):
        tensors[("on", "fused", "input", i)] = values[ref]
        # as in a real run, the producer of each input dumped what it wrote (fusion on)
        tensors[("on", ref.split(":")[0], "output", 0)] = values[ref]
    real = fault({k.split(":")[0]: v for k, v in values.items()})
    tensors[("on", "fused", "output", 0)] = round_to(np.asarray(real, np.float64), dtype)
    report = replay_run(
        one_graph(on_ops),
        one_graph(off_ops),
        _Store(tensors),
        rules_of=lambda op, types: op_rules(op, types, fusion_result),
        localise=localiser(fusion_result),
        workers=1,
    )
    (result,) = [r for r in report.results if r.op == "fused"]
    verdicts = {v.rule: v.verdict for v in rule_verdicts(report, lambda rule, op: ("?", "?"))}
    return result, verdicts
