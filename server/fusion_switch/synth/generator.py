"""Realistic fusion-on / fusion-off cases: graphs, binary dumps and a truth file, computed for real.

``generate_case`` builds the original network (:mod:`.network`), runs it once as the fusion-off
model (one op per original op) and once as the fusion-on model, in which graph fusion and UB
fusion merged ops the way CANN does (real pass names, the attributes GE sets, TransData ops where
the fused kernels want device formats). Faults (:mod:`.faults`) change how one fused op computes;
everything downstream on the fusion-on side computes from its output, so the error propagates.

Written per side: an atc-style graph JSON and a ``ge_proto_*_Build.txt``, and the dump folder
``dump/{time}/{device}/{model_name}/{model_id}/{iteration}/Type.name.task.stream.timestamp``.
msaccucmp reads both (``-m on -g off -f on.json -cf off.json``).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .emit import graph_json, write_dumps
from .executed import (
    GRAPH_FUSION,
    NC1HWC0,
    NZ,
    UB_FUSION,
    ExecOp,
    OutSpec,
    host_format,
    wanted_format,
)
from .faults import FAULT_KINDS, Fault
from .gaps import apply_gaps
from .network import Network, Node, blocks_for, build_network, split_ref

# ----------------------------------------------------------------------------------------------
# The fusion plan: which original ops each fused op is made of, and by which passes.


@dataclass(frozen=True)
class GroupPlan:
    """One fusion-on op built from ``members`` (roles of original ops, execution order).

    ``name``: the fused op's name, ``{p}`` = block prefix. ``passes``: (rule, section) in the
    order they fired; the last UB one is also ``pass_name_ub``. ``outputs``: exposed (role, index)
    pairs (default: every output of the last member). ``device_in``/``device_out``: formats the
    kernel reads/writes on the device (``host`` = the original layout).
    """

    key: str
    name: str
    type: str
    members: tuple[str, ...]
    passes: tuple[tuple[str, str], ...] = ()
    single_op_ub: tuple[str, ...] = ()
    outputs: tuple[tuple[str, int], ...] | None = None
    device_in: str = "host"
    device_out: str = "host"


def _g(rule: str) -> tuple[str, str]:
    return (rule, GRAPH_FUSION)


def _ub(rule: str) -> tuple[str, str]:
    return (rule, UB_FUSION)


CONV_UB = "TbeCommonRules0FusionPass"
MATMUL_UB = "TbeBatchMatmulElementWiseFusionPass"
REDUCE_UB = "TbeReduceElemwiseFusionPass"

STEM_PLAN = (
    GroupPlan(
        "stem",
        "stem_convstem_relu",
        "Conv2D",
        ("stem_conv", "stem_relu"),
        (_ub(CONV_UB),),
        device_in=NC1HWC0,
        device_out=NC1HWC0,
    ),
)

BLOCK_PLAN = (
    GroupPlan(
        "conv1",
        "{p}conv1{p}relu1",
        "Conv2D",
        ("conv1", "bn1", "relu1"),
        (_g("ConvBatchnormFusionPass"), _ub(CONV_UB)),
        device_in=NC1HWC0,
        device_out=NC1HWC0,
    ),
    GroupPlan(
        "conv2",
        "{p}conv2",
        "Conv2D",
        ("conv2", "scale2"),
        (_g("AConv2dMulFusion"),),
        device_in=NC1HWC0,
        device_out=NC1HWC0,
    ),
    GroupPlan("add1", "{p}add1", "Add", ("add1",), device_in=NC1HWC0, device_out=NC1HWC0),
    GroupPlan(
        "pool",
        "{p}pool",
        "AvgPool",
        ("pool",),
        (_g("AvgPoolFusionPass"),),
        device_in=NC1HWC0,
        device_out=NC1HWC0,
    ),
    GroupPlan(
        "tr_in",
        "{p}tr_in",
        "ConfusionTransposeD",
        ("tr_in", "rs_in"),
        (_g("TransposeReshapeFusionPass"),),
    ),
    GroupPlan("cast16", "{p}cast16", "Cast", ("cast16",)),
    GroupPlan(
        "mm1",
        "{p}mm1{p}gelu",
        "BatchMatMulV2",
        ("mm1", "bias1", "gelu"),
        (_g("MatMulBiasAddFusionPass"), _ub(MATMUL_UB)),
        device_out=NZ,
    ),
    GroupPlan("split", "{p}split", "SplitVD", ("split",), (_g("ZSplitDFusionPass"),)),
    GroupPlan("glu", "{p}sig{p}glu", "Mul", ("sig", "glu"), (_ub("TbeEltwiseFusionPass"),)),
    GroupPlan("cast32", "{p}cast32", "Cast", ("cast32",)),
    GroupPlan(
        "ln",
        "{p}layer_norm",
        "LayerNorm",
        (
            "ln_mean",
            "ln_sqd",
            "ln_var",
            "ln_add_eps",
            "ln_rsqrt",
            "ln_sub",
            "ln_norm",
            "ln_scale",
            "ln_out",
        ),
        (_g("LayerNormFusionPass"),),
        single_op_ub=(REDUCE_UB,),
    ),
    GroupPlan(
        "mm2", "{p}mm2{p}temp", "BatchMatMulV2", ("mm2", "temp"), (_ub(MATMUL_UB),), device_out=NZ
    ),
    GroupPlan(
        "softmax",
        "{p}softmax",
        "SoftmaxV2",
        ("softmax",),
        (_g("SoftmaxFusionPass"),),
        single_op_ub=(REDUCE_UB,),
    ),
    GroupPlan("gate", "{p}gate", "Mul", ("gate",)),
    GroupPlan(
        "tr_out",
        "{p}tr_out",
        "ConfusionTransposeD",
        ("rs_out", "tr_out"),
        (_g("ReshapeTransposeFusionPass"),),
    ),
    GroupPlan("add_out", "{p}add_out", "Add", ("add_out",), device_in=NC1HWC0, device_out=NC1HWC0),
)


# ----------------------------------------------------------------------------------------------
# Fused kernels (how the fusion-on side computes; faults change them)


def _fused_conv_bn_relu(
    nodes: list[Node], ins: dict[str, np.ndarray], fault: Fault | None
) -> list[np.ndarray]:
    conv, bn, _relu = nodes
    x, w = ins[conv.inputs[0]], ins[conv.inputs[1]]
    gamma, beta, mean, var = (ins[r].astype(np.float32) for r in bn.inputs[1:])
    eps = 1e-2 if fault and fault.kind == "wrong_epsilon" else bn.attrs["epsilon"]
    scale = gamma / np.sqrt(var + np.float32(eps))
    folded_w = w.astype(np.float32) * scale.reshape(-1, 1, 1, 1)
    bias = beta - mean * scale
    out = conv.run([x, folded_w, bias], conv.attrs)[0]
    if fault and fault.kind == "dropped_relu":
        return [out.astype(np.float32)]
    return [np.maximum(out, 0).astype(np.float32)]


def _fused_conv_mul(
    nodes: list[Node], ins: dict[str, np.ndarray], fault: Fault | None
) -> list[np.ndarray]:
    conv, mul = nodes
    factor = np.float32(1.0) if fault and fault.kind == "dropped_scale" else ins[mul.inputs[1]]
    folded_w = ins[conv.inputs[1]].astype(np.float32) * np.float32(factor)
    return conv.run([ins[conv.inputs[0]], folded_w], conv.attrs)


def _fused_layer_norm(
    nodes: list[Node], ins: dict[str, np.ndarray], fault: Fault | None
) -> list[np.ndarray]:
    by_role = {n.role: n for n in nodes}
    x = ins[by_role["ln_mean"].inputs[0]].astype(np.float32)
    eps = ins[by_role["ln_add_eps"].inputs[1]]
    gamma = ins[by_role["ln_scale"].inputs[1]]
    beta = ins[by_role["ln_out"].inputs[1]]
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return [((x - mean) / np.sqrt(var + eps) * gamma + beta).astype(np.float32)]


def _saturating_softmax(x: np.ndarray) -> np.ndarray:
    """Softmax as a faulty float16 kernel computes it: exp(x) without the max shift, saturated."""
    with np.errstate(over="ignore"):
        e = np.minimum(np.exp(x.astype(np.float32)), np.float32(65504.0)).astype(np.float16)
    e = e.astype(np.float32)
    return e / e.sum(axis=-1, keepdims=True)


FusedKernel = Callable[[list[Node], dict[str, np.ndarray], "Fault | None"], list[np.ndarray]]
FUSED_KERNELS: dict[str, FusedKernel] = {
    "conv1": _fused_conv_bn_relu,
    "conv2": _fused_conv_mul,
    "ln": _fused_layer_norm,
}


def _run_member(node: Node, inputs: list[np.ndarray], fault: Fault | None) -> list[np.ndarray]:
    kind = fault.kind if fault else None
    if kind == "dropped_bias" and node.type == "BiasAdd":
        return [inputs[0]]
    if kind == "wrong_perm" and node.type == "TransposeD":
        return node.run(inputs, {**node.attrs, "perm": [0, 3, 2, 1]})
    if kind == "wrong_axis" and node.type == "SoftmaxV2":
        return node.run(inputs, {**node.attrs, "axes": [1]})
    if kind == "inverted_gate" and node.role == "sig":
        return [(1.0 - node.run(inputs)[0].astype(np.float32)).astype(node.dtype)]
    if kind == "approx_gelu" and node.type == "Gelu":
        x = inputs[0].astype(np.float32)
        return [(x / (1.0 + np.exp(-1.702 * x))).astype(node.dtype)]
    if kind == "fp16_saturation" and node.type == "SoftmaxV2":
        return [_saturating_softmax(inputs[0]).astype(node.dtype)]
    return node.run(inputs)


# ----------------------------------------------------------------------------------------------
# The two executed graphs


def _off_ops(net: Network, values: dict[str, list[np.ndarray]]) -> list[ExecOp]:
    ops = []
    for node in net.nodes:
        outs = [OutSpec(node.name, i, host_format(v), v) for i, v in enumerate(values[node.name])]
        ins = [values[split_ref(r)[0]][split_ref(r)[1]] for r in node.inputs]
        ops.append(
            ExecOp(
                node.name,
                node.type,
                list(node.inputs),
                ins,
                [host_format(v) for v in ins],
                outs,
                attrs=dict(node.attrs),
                block=node.block,
                key=node.role,
            )
        )
    return ops


class _OnBuilder:
    """Builds the fusion-on graph while computing it."""

    def __init__(self, net: Network, faults: dict[tuple[int, str], Fault], formats: str) -> None:
        self.net = net
        self.faults = faults
        self.formats = formats
        self.ops: list[ExecOp] = []
        self.values: dict[str, np.ndarray] = {}  # original ref -> fusion-on value (host layout)
        self.where: dict[str, tuple[str, int, str]] = {}  # original ref -> (on op, idx, format)
        self.trans: dict[tuple[str, str], str] = {}
        self.scope = 0
        self.placed: set[str] = set()
        self.faulty_ops: list[tuple[Fault, ExecOp]] = []
        self.group_of: dict[str, str] = {}  # original task op -> fused op name

    def place_source(self, node: Node) -> None:
        if node.name in self.placed:
            return
        self.placed.add(node.name)
        value = self.net.consts[node.name]
        ref = f"{node.name}:0"
        self.values[ref] = value
        self.where[ref] = (node.name, 0, host_format(value))
        self.ops.append(
            ExecOp(
                node.name,
                node.type,
                [],
                outputs=[OutSpec(node.name, 0, host_format(value), value)],
                block=node.block,
            )
        )

    def input_ref(self, ref: str, want: str) -> tuple[str, str]:
        """The on-side reference a consumer reads ``ref`` through, inserting a TransData if the
        producer writes another format. Returns (on ref, format)."""
        src, idx, fmt = self.where[ref]
        value = self.values[ref]
        want = wanted_format(want, value, self.formats)
        if src in self.placed or fmt == want:  # Data/Const are read as they are
            return f"{src}:{idx}", fmt
        key = (ref, want)
        if key not in self.trans:
            name = f"trans_TransData_{len(self.trans)}"
            origin, origin_idx = split_ref(ref)
            self.ops.append(
                ExecOp(
                    name,
                    "TransData",
                    [f"{src}:{idx}"],
                    [value],
                    [fmt],
                    [OutSpec(origin, origin_idx, want, value)],
                    original_names=[],
                    attrs={"src_format": fmt, "dst_format": want},
                )
            )
            self.trans[key] = name
        return f"{self.trans[key]}:0", want

    def add_group(self, plan: GroupPlan, block: int) -> None:
        p = f"b{block}_" if block >= 0 else ""
        nodes = [self.net.node(p + role) for role in plan.members]
        member_names = {n.name for n in nodes}
        for n in nodes:
            for ref in n.inputs:
                src = self.net.node(split_ref(ref)[0])
                if not src.has_task:
                    self.place_source(src)
        external: list[str] = []
        for n in nodes:
            for ref in n.inputs:
                if split_ref(ref)[0] not in member_names and ref not in external:
                    external.append(ref)
        on_inputs, in_formats = [], []
        for ref in external:
            on_ref, fmt = self.input_ref(ref, plan.device_in)
            on_inputs.append(on_ref)
            in_formats.append(fmt)
        fault = self.faults.get((block, plan.key))
        ins = {ref: self.values[ref] for ref in external}
        local: dict[str, np.ndarray] = dict(ins)
        custom = FUSED_KERNELS.get(plan.key) if len(nodes) > 1 else None
        if custom is not None:
            outs = custom(nodes, ins, fault)
            for i, v in enumerate(outs):
                local[f"{nodes[-1].name}:{i}"] = v
        else:
            for n in nodes:
                for i, v in enumerate(_run_member(n, [local[r] for r in n.inputs], fault)):
                    local[f"{n.name}:{i}"] = v
        exposed = plan.outputs or tuple((nodes[-1].role, i) for i in range(nodes[-1].n_outputs))
        name = plan.name.format(p=p)
        outputs = []
        for k, (role, i) in enumerate(exposed):
            ref = f"{p}{role}:{i}"
            value = local[ref]
            fmt = wanted_format(plan.device_out, value, self.formats)
            outputs.append(OutSpec(p + role, i, fmt, value))
            self.values[ref] = value
            self.where[ref] = (name, k, fmt)
        scope = None
        if any(sec == UB_FUSION for _, sec in plan.passes):
            self.scope += 1
            scope = self.scope
        op = ExecOp(
            name,
            plan.type,
            on_inputs,
            [ins[r] for r in external],
            in_formats,
            outputs,
            original_names=[n.name for n in nodes] if plan.passes or len(nodes) > 1 else None,
            passes=list(plan.passes),
            single_op_ub=list(plan.single_op_ub),
            fusion_scope=scope,
            attrs=dict(nodes[0].attrs),
            block=block,
            key=plan.key,
        )
        self.ops.append(op)
        self.group_of.update((n.name, name) for n in nodes)
        if fault is not None:
            self.faulty_ops.append((fault, op))


def _check_exposed(net: Network, on: _OnBuilder) -> None:
    """Every value read across a fused-op boundary must be one the fused op exposes."""
    for node in net.task_nodes:
        for ref in node.inputs:
            src = split_ref(ref)[0]
            if on.group_of.get(src) != on.group_of[node.name] and ref not in on.where:
                raise AssertionError(f"fusion plan hides {ref} needed by {node.name}")


def build_fusion_on(
    net: Network, faults: Sequence[Fault], formats: str = "device"
) -> tuple[list[ExecOp], list[tuple[Fault, ExecOp]]]:
    by_target = {(f.block, f.spec.target): f for f in faults}
    on = _OnBuilder(net, by_target, formats)
    on.place_source(net.node("input"))
    for plan in STEM_PLAN:
        on.add_group(plan, -1)
    for block in range(net.n_blocks):
        for plan in BLOCK_PLAN:
            on.add_group(plan, block)
    _check_exposed(net, on)
    return on.ops, on.faulty_ops


# ----------------------------------------------------------------------------------------------
# Graph JSON (the tree `atc --mode=5` writes)


# ----------------------------------------------------------------------------------------------
# The case


@dataclass
class Case:
    root: Path
    on_dump: Path  # leaf folder holding the fusion-on dump files
    off_dump: Path
    on_graph: Path  # atc-style JSON
    off_graph: Path
    on_graph_txt: Path | None
    off_graph_txt: Path | None
    fusion_result: Path
    truth_path: Path
    truth: dict
    dump_bytes: int
    n_original_ops: int
    n_fused_ops: int


def _fusion_result(ops: list[ExecOp], graph_id: str) -> dict:
    counts: dict[str, dict[str, int]] = {GRAPH_FUSION: {}, UB_FUSION: {}}
    for op in ops:
        for name, sec in op.passes:
            counts[sec][name] = counts[sec].get(name, 0) + 1
        for name in op.single_op_ub:
            counts[UB_FUSION][name] = counts[UB_FUSION].get(name, 0) + 1

    def table(sec: str) -> dict:
        return {k: {"match_times": str(v), "effect_times": str(v)} for k, v in counts[sec].items()}

    return {
        "session_and_graph_id": graph_id,
        "graph_fusion": table(GRAPH_FUSION),
        "ub_fusion": table(UB_FUSION),
    }


def _write_json_atomic(path: Path, data: object) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def _write_graph_text(graph: dict, path: Path) -> Path:
    from ..readers.graph_text import write_graph_text

    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(write_graph_text(graph), encoding="utf-8")
    os.replace(tmp, path)
    return path


def generate_case(
    out_dir: str | os.PathLike,
    *,
    n_ops: int = 70,
    faults: Sequence[str | Fault] = ("wrong_epsilon",),
    seed: int = 0,
    soc_version: str = "Ascend910B1",
    formats: str = "device",
    channels: int = 16,
    spatial: int = 16,
    graph_text: bool = True,
    gaps: str = "none",
    custom_ops: bool = False,
) -> Case:
    """Generate a case in ``out_dir`` (created). ``n_ops``: at least this many original ops with a
    task (rounded up to whole blocks). ``faults``: kinds (``"wrong_epsilon"``) or
    ``"kind@block"``; an empty list gives a clean case. ``formats``: ``"device"`` (fusion-on
    outputs in NC1HWC0 / FRACTAL_NZ with TransData ops) or ``"host"``. ``gaps``: dumps missing
    or damaged (:mod:`.gaps`). ``custom_ops``: the GLU's sigmoid is a framework custom op
    (``CustomSigmoid``) that no reference kernel covers: its fused ops must stay unverified."""
    if formats not in ("device", "host"):
        raise ValueError("formats must be 'device' or 'host'")
    root = Path(out_dir)
    _prepare_folder(root)
    n_blocks = blocks_for(n_ops)
    parsed = []
    for i, f in enumerate(faults):
        fault = Fault.parse(f)
        block = fault.block if fault.block is not None else _default_block(n_blocks, i)
        if not 0 <= block < n_blocks:
            raise ValueError(f"fault {fault.kind}: block {block} outside 0..{n_blocks - 1}")
        parsed.append(Fault(fault.kind, block))
    targets = [(f.block, f.spec.target) for f in parsed]
    if len(set(targets)) != len(targets):
        raise ValueError("two faults target the same fused op; put them in different blocks")

    net = build_network(
        n_blocks, channels=channels, spatial=spatial, seed=seed, custom_ops=custom_ops
    )
    off_values = net.evaluate()
    off_ops = _off_ops(net, off_values)
    on_ops, faulty = build_fusion_on(net, parsed, formats)

    stamp = 20260101120000 + seed
    sides = {}
    dump_bytes = 0
    for side, ops, graph_no, base_us in (
        ("fusion_off", off_ops, 1, 1767268800000000),
        ("fusion_on", on_ops, 2, 1767272400000000),
    ):
        model = f"ge_default_{stamp + graph_no}_{graph_no}"
        side_dir = root / side
        leaf = side_dir / "dump" / str(stamp + graph_no) / "0" / model / str(graph_no) / "0"
        dump_bytes += write_dumps(ops, leaf, base_us)
        graph = graph_json(ops, model, soc_version)
        json_path = side_dir / f"ge_proto_0000{graph_no}_graph_{graph_no}_Build.json"
        _write_json_atomic(json_path, graph)
        txt = None
        if graph_text:
            txt = _write_graph_text(graph, json_path.with_suffix(".txt"))
        sides[side] = (leaf, json_path, txt)
    gap_log = apply_gaps(gaps, sides["fusion_off"][0], sides["fusion_on"][0], off_ops, faulty, seed)
    fusion_result = root / "fusion_on" / "fusion_result.json"
    _write_json_atomic(fusion_result, _fusion_result(on_ops, "0_2"))

    truth = {
        "faults": [_truth_entry(f, op) for f, op in faulty],
        "n_blocks": n_blocks,
        "formats": formats,
        "seed": seed,
        "soc_version": soc_version,
        "n_original_ops": len(net.task_nodes),
        "n_fused_ops": sum(1 for op in on_ops if op.has_task),
        "gaps": gaps,
        "gap_log": gap_log[:50],
        "custom_ops": custom_ops,
        "unreplayable_ops": [op.name for op in on_ops if op.key == "glu"] if custom_ops else [],
    }
    truth_path = root / "truth.json"
    _write_json_atomic(truth_path, truth)
    (on_leaf, on_json, on_txt), (off_leaf, off_json, off_txt) = (
        sides["fusion_on"],
        sides["fusion_off"],
    )
    return Case(
        root,
        on_leaf,
        off_leaf,
        on_json,
        off_json,
        on_txt,
        off_txt,
        fusion_result,
        truth_path,
        truth,
        dump_bytes,
        truth["n_original_ops"],
        truth["n_fused_ops"],
    )


def _prepare_folder(root: Path) -> None:
    """Create ``root``; a case generated there before is replaced (its dumps would otherwise mix
    with the new ones), anything else in the way is an error."""
    root.mkdir(parents=True, exist_ok=True)
    ours = [root / "fusion_on", root / "fusion_off"]
    if not any(p.exists() for p in ours):
        return
    if not (root / "truth.json").is_file():
        raise ValueError(
            f"{root} already has fusion_on/ or fusion_off/ but no truth.json: "
            "not a generated case, refusing to overwrite it; pick another folder"
        )
    for p in ours:
        shutil.rmtree(p, ignore_errors=True)


def _default_block(n_blocks: int, i: int) -> int:
    """Faults land in the middle of the network (so error has somewhere to propagate), several
    faults in successive blocks."""
    return min(n_blocks - 1, n_blocks // 2 + i)


def _truth_entry(fault: Fault, op: ExecOp) -> dict:
    spec = fault.spec
    return {
        "kind": fault.kind,
        "block": fault.block,
        "op": op.name,
        "rule": spec.rule,
        "section": spec.section,
        "op_rules": [name for name, _ in reversed(op.passes)]
        + [n for n in op.single_op_ub if n not in {p for p, _ in op.passes}],
        "original_ops": list(op.original_names or [op.name]),
        "description": spec.description,
    }


__all__ = ["BLOCK_PLAN", "FAULT_KINDS", "Case", "Fault", "generate_case"]
