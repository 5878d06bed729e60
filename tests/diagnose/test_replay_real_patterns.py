"""Replay of every fused pattern of the real ResNet-50 graphs (samples/real/graphs) on synthetic
tensors.

The fused ops (their names, original-op lists, attributes, edges and output descs) are taken
as they are from the real fusion-on graphs; the fusion-off side is built from the original op
names (Caffe ResNet-50: ``res2a_branch2a`` a convolution, ``bn2a_branch2a`` BatchNorm,
``scale2a_branch2a`` Scale, ``res2a`` the residual Eltwise, ``*_relu`` Relu) with synthetic
weights, channels that are not multiples of 16 and small feature maps. The fused output is
computed the way a correct fused kernel does (BatchNorm and Scale folded into the filter and
bias, in float32): every pattern must replay ``clean``; the same fold with the wrong epsilon
must be flagged.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fusion_switch.diagnose.noise import score
from fusion_switch.diagnose.replay import Replayer
from fusion_switch.diagnose.replay_kernels import Kernels
from fusion_switch.diagnose.subgraph import (
    PASS_THROUGH_TYPES,
    GraphIndex,
    build_subgraph,
    fused_ops,
    ref_name,
)
from fusion_switch.readers.graph import graph_from_dict, load_graph

GRAPHS = Path(__file__).resolve().parents[1] / "data" / "real" / "graphs"  # copy of shared/
REAL = [
    "ge_proto_00017_OptimizeOriginalGraph_FeGraphFusionAfter.txt",
    "ge_proto_00026_afterUBMatch.txt",
    "ge_proto_00000062_Build.txt",
]
C_IN, C_OUT, SIZE, EPS = 20, 24, 9, 1e-5  # 20, 24: not multiples of 16 (NC1HWC0 padding)


def role(name: str) -> str:
    if name.endswith("_relu"):
        return "Relu"
    if name.startswith("bn"):
        return "BatchNorm"
    if name.startswith("scale"):
        return "Scale"
    if name.startswith("res") and "branch" not in name:
        return "Eltwise"
    return "Conv2D"


def _attr(key: str, value) -> dict:
    if isinstance(value, list):
        return {"key": key, "value": {"list": {"i": value, "val_type": "VT_LIST_INT"}}}
    if isinstance(value, float):
        return {"key": key, "value": {"f": value}}
    if isinstance(value, str):
        return {"key": key, "value": {"s": value}}
    return {"key": key, "value": {"i": value}}


def _desc(shape) -> dict:
    return {"dtype": "DT_FLOAT", "layout": "NCHW", "shape": {"dim": list(shape)}, "attr": []}


def _source(ref: str, on: GraphIndex) -> str:
    """The on-side producer a boundary input comes from, through GE-inserted TransData/Cast."""
    name, index = ref_name(ref)
    while on.ops.get(name) is not None and on.ops[name].type in PASS_THROUGH_TYPES:
        name, index = ref_name(on.ops[name].data_inputs[0])
    producer = on.ops.get(name)
    descs = producer.output_descs if producer is not None else []
    return (descs[index].origin_name if index < len(descs) else "") or name


class Store:
    """What the replay reads, in memory: fusion-on inputs/outputs, fusion-off op inputs."""

    def __init__(self) -> None:
        self.tensors: dict[tuple[str, str, str, int], np.ndarray] = {}
        self.files_read, self.unreadable = set(), {}

    def has(self, side, op):
        return any(k[:2] == (side, op) for k in self.tensors)

    def tensor(self, side, op, kind, index):
        return self.tensors[(side, op, kind, index)]


def build_case(fused, on: GraphIndex, rng, fold_eps: float = EPS):
    """(off graph, store) for one real fused op: fusion-off original ops and tensors, and the
    fusion-on output a correct (or wrong-epsilon) folded kernel produces."""
    names = list(dict.fromkeys(n for n in fused.original_names if n))
    kinds = {n: role(n) for n in names}
    conv = next(n for n in names if kinds[n] == "Conv2D")
    order = [conv, *[n for k in ("BatchNorm", "Scale", "Eltwise", "Relu") for n in names
                     if kinds[n] == k]]  # fmt: skip
    attrs = fused.attrs
    stride = attrs.get("strides", [1, 1, 1, 1])
    pads = attrs.get("pads", [0, 0, 0, 0])
    kh = 7 if pads[0] == 3 else (3 if pads[0] == 1 else 1)
    x = rng.standard_normal((1, C_IN, SIZE, SIZE))
    w = rng.standard_normal((C_OUT, C_IN, kh, kh)) / np.sqrt(C_IN * kh * kh)
    gamma, beta = rng.uniform(0.5, 1.5, C_OUT), rng.uniform(-0.5, 0.5, C_OUT)
    mean, var = rng.uniform(-0.2, 0.2, C_OUT), 10.0 ** rng.uniform(-4, 0, C_OUT)
    s_scale, s_bias = rng.uniform(0.5, 1.5, C_OUT), rng.uniform(-0.3, 0.3, C_OUT)
    inputs = fused.data_inputs
    data_name = _source(inputs[0], on)
    ops, store = [], Store()
    ops.append({"name": data_name, "type": "Data", "output_desc": [_desc(x.shape)]})
    conv_attrs = [_attr("strides", stride), _attr("pads", pads), _attr("dilations", [1, 1, 1, 1]),
                  _attr("groups", 1), _attr("data_format", "NCHW")]  # fmt: skip
    consts: list[tuple[str, np.ndarray]] = []
    last = f"{data_name}:0"
    residual = None
    for n in order:
        op = {"name": n, "type": kinds[n], "input": [last], "input_desc": [_desc(x.shape)]}
        values: list[np.ndarray] = []
        if kinds[n] == "Conv2D":
            op["attr"], values = conv_attrs, [w]
        elif kinds[n] == "BatchNorm":
            op["attr"] = [_attr("epsilon", EPS), _attr("data_format", "NCHW")]
            values = [gamma, beta, mean, var]
        elif kinds[n] == "Scale":
            op["attr"], values = [_attr("axis", 1), _attr("num_axes", 1)], [s_scale, s_bias]
        elif kinds[n] == "Eltwise":
            residual_name = _source(inputs[-1], on)
            op["input"].append(f"{residual_name}:0")
            op["attr"] = [_attr("mode", 1), _attr("N", 2)]
        for k, value in enumerate(values):
            const = f"{n}_param{k}"
            consts.append((const, value))
            op["input"].append(f"{const}:0")
        ops.append(op)
        last = f"{n}:0"
    out_h = (SIZE + pads[0] + pads[1] - kh) // stride[2] + 1
    out_w = (SIZE + pads[2] + pads[3] - kh) // stride[3] + 1
    if "Eltwise" in kinds.values():
        residual = rng.standard_normal((1, C_OUT, out_h, out_w))
        ops.insert(1, {"name": residual_name, "type": "Data",
                       "output_desc": [_desc(residual.shape)]})  # fmt: skip
    for const, value in consts:
        ops.insert(1, {"name": const, "type": "Const", "output_desc": [_desc(value.shape)]})
    for op in ops:
        op.setdefault("output_desc", [_desc((1, C_OUT, out_h, out_w))])
    off = graph_from_dict({"graph": [{"name": "off", "op": ops}], "name": "off"})
    # fusion-off dumps: each original op's inputs (parameters come from here)
    for op in ops:
        for k, ref in enumerate(op.get("input", [])):
            const = dict(consts).get(ref_name(ref)[0])
            if const is not None:
                store.tensors[("off", op["name"], "input", k)] = const
    # fusion-on: the folded kernel, in float32
    a = gamma / np.sqrt(var + fold_eps)
    folded_w = (w * (a * s_scale)[:, None, None, None]).astype(np.float32)
    folded_b = ((beta - mean * a) * s_scale + s_bias).astype(np.float32)
    xp = np.pad(x.astype(np.float32), ((0, 0), (0, 0), (pads[0], pads[1]), (pads[2], pads[3])))
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kh), axis=(2, 3))
    win = win[:, :, :: stride[2], :: stride[3]]
    y = np.einsum("nchwij,ocij->nohw", win, folded_w) + folded_b[None, :, None, None]
    if residual is not None:
        y = y + residual.astype(np.float32)
    if "Relu" in kinds.values():
        y = np.maximum(y, 0)
    store.tensors[("on", fused.name, "input", 0)] = x
    if residual is not None:
        store.tensors[("on", fused.name, "input", len(inputs) - 1)] = residual
    store.tensors[("on", fused.name, "output", 0)] = y.astype(np.float32).astype(np.float64)
    return off, store


def _patterns():
    seen = {}
    for name in REAL:
        graph = load_graph(GRAPHS / name)
        for op in fused_ops(graph):
            if op.type != "Conv2D":
                continue  # ReadSelect (62_Build) has no original sub-graph: see the last test
            kinds = tuple(role(n) for n in dict.fromkeys(op.original_names) if n)
            key = (name, tuple(sorted(kinds)), tuple(op.attrs.get("strides", [])),
                   tuple(op.attrs.get("pads", [])))  # fmt: skip
            seen.setdefault(key, (graph, op.name))
    return seen


PATTERNS = _patterns()


def test_the_real_patterns_were_found():
    """The parametrised test below must not run on an empty set."""
    assert len(PATTERNS) >= 10, sorted(PATTERNS)


@pytest.mark.parametrize("key", sorted(PATTERNS), ids=lambda k: f"{k[0][:14]}-{'+'.join(k[1])}")
def test_real_fused_pattern_replays_clean_and_flags_a_wrong_fold(key):
    graph, op_name = PATTERNS[key]
    on = GraphIndex.of(graph)
    fused = on.ops[op_name]
    for fold_eps, expect_flag in ((EPS, False), (1e-2, True)):
        off_graph, store = build_case(fused, on, np.random.default_rng(7), fold_eps)
        off = GraphIndex.of(off_graph)
        sub = build_subgraph(fused, on, off)
        replayer = Replayer(store, off, Kernels())
        plan, evidence = replayer.gather(sub)
        values = replayer.evaluate(sub, plan)
        (_, origin), *_ = sub.outputs
        worst = score(store.tensor("on", fused.name, "output", 0), values[origin], "DT_FLOAT")
        assert evidence["parameters"], "parameters must come from the fusion-off dumps"
        assert not any("filter_host" in p or "dynamic_const" in p for p in evidence["parameters"])
        if expect_flag:
            assert worst > 100, (op_name, worst)
        else:
            assert worst <= 1.0, (op_name, worst)


def test_every_fused_op_type_of_the_real_graphs_is_covered_or_listed():
    from fusion_switch.diagnose.kernels import known_types

    seen = {op.type for name in REAL for op in fused_ops(load_graph(GRAPHS / name))}
    assert seen == {"Conv2D", "ReadSelect"}
    assert "Conv2D" in known_types()
    # ReadSelect (a data-movement op GE inserts) stands for no original compute op: the replay
    # says "sub-graph not reconstructible" for it rather than guessing (1 of 159 fused ops).
