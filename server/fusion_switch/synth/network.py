"""A small convolution + transformer-style network computed for real with numpy.

This is the *original* network (what the fusion-off graph executes, one op per framework op).
The generator (:mod:`fusion_switch.synth.generator`) derives the fusion-on graph from it.

Every op is a :class:`Node` whose kernel is a plain function ``kernel(inputs, attrs) -> outputs``;
weights are ``Const`` nodes and the network input is a ``Data`` node (neither has a dump).
The network is a stem (conv + relu) followed by ``n_blocks`` identical blocks, so it scales to
thousands of ops; each block keeps the shape ``[1, C, S, S]``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

Kernel = Callable[[list[np.ndarray], dict], list[np.ndarray]]


# ----------------------------------------------------------------------------------------------
# Kernels: inputs are computed in float32 and rounded to the op's output dtype at the end.


def _conv_attrs(pad: int) -> dict:
    """GE's Conv2D attributes for a stride-1 convolution with symmetric padding."""
    return {
        "strides": [1, 1, 1, 1],
        "pads": [pad] * 4,
        "dilations": [1, 1, 1, 1],
        "groups": 1,
        "data_format": "NCHW",
    }


def _conv2d(x: np.ndarray, w: np.ndarray, pad: int) -> np.ndarray:
    xp = np.pad(x.astype(np.float32), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    kh, kw = w.shape[2], w.shape[3]
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))
    return np.einsum("nchwij,ocij->nohw", win, w.astype(np.float32), optimize=True)


def k_conv2d(inp: list[np.ndarray], attrs: dict) -> list[np.ndarray]:
    out = _conv2d(inp[0], inp[1], attrs.get("pads", [0])[0])
    if len(inp) > 2:  # bias input (folded by a fusion pass)
        out = out + inp[2].astype(np.float32).reshape(1, -1, 1, 1)
    return [out]


def k_batchnorm(inp: list[np.ndarray], attrs: dict) -> list[np.ndarray]:
    x, gamma, beta, mean, var = (a.astype(np.float32) for a in inp)
    scale = gamma / np.sqrt(var + np.float32(attrs["epsilon"]))
    shift = beta - mean * scale
    return [x * scale.reshape(1, -1, 1, 1) + shift.reshape(1, -1, 1, 1)]


def k_relu(inp, attrs):
    return [np.maximum(inp[0], 0)]


def k_gelu(inp, attrs):
    x = inp[0].astype(np.float32)
    c = np.float32(math.sqrt(2.0 / math.pi))
    return [0.5 * x * (1.0 + np.tanh(c * (x + np.float32(0.044715) * x**3)))]


def k_sigmoid(inp, attrs):
    return [1.0 / (1.0 + np.exp(-inp[0].astype(np.float32)))]


def k_softmax(inp, attrs):
    x = inp[0].astype(np.float32)
    axis = attrs.get("axes", [-1])[0]
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return [e / e.sum(axis=axis, keepdims=True)]


def k_avgpool(inp, attrs):
    """3x3, stride 1, padding 1, padding not counted (shape preserving)."""
    x = inp[0].astype(np.float32)
    k = attrs.get("ksize", [1, 1, 3, 3])[-1]
    pad = k // 2 if attrs.get("padding", "SAME") == "SAME" else 0
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ones = np.pad(np.ones(x.shape[2:], np.float32), pad)
    sums = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3)).sum(axis=(-1, -2))
    counts = np.lib.stride_tricks.sliding_window_view(ones, (k, k)).sum(axis=(-1, -2))
    return [sums / counts]


def k_transpose(inp, attrs):
    return [np.ascontiguousarray(np.transpose(inp[0], attrs["perm"]))]


def k_reshape(inp, attrs):
    return [inp[0].reshape(attrs["shape"])]


def k_cast(inp, attrs):
    return [inp[0]]  # the rounding to the destination dtype happens in Node.run


def k_matmul(inp, attrs):
    return [np.matmul(inp[0].astype(np.float32), inp[1].astype(np.float32))]


def k_biasadd(inp, attrs):
    return [inp[0].astype(np.float32) + inp[1].astype(np.float32)]


def k_add(inp, attrs):
    return [inp[0].astype(np.float32) + inp[1].astype(np.float32)]


def k_sub(inp, attrs):
    return [inp[0].astype(np.float32) - inp[1].astype(np.float32)]


def k_mul(inp, attrs):
    return [inp[0].astype(np.float32) * inp[1].astype(np.float32)]


def k_split(inp, attrs):
    parts = np.split(inp[0], attrs["num_split"], attrs["split_dim"])
    return [np.ascontiguousarray(a) for a in parts]


def k_reduce_mean(inp, attrs):
    return [inp[0].astype(np.float32).mean(axis=tuple(attrs["axes"]), keepdims=True)]


def k_squared_difference(inp, attrs):
    d = inp[0].astype(np.float32) - inp[1].astype(np.float32)
    return [d * d]


def k_rsqrt(inp, attrs):
    return [1.0 / np.sqrt(inp[0].astype(np.float32))]


KERNELS: dict[str, Kernel] = {
    "Conv2D": k_conv2d,
    "BatchNorm": k_batchnorm,
    "Relu": k_relu,
    "Gelu": k_gelu,
    "Sigmoid": k_sigmoid,
    "SoftmaxV2": k_softmax,
    "AvgPool": k_avgpool,
    "TransposeD": k_transpose,
    "Reshape": k_reshape,
    "Cast": k_cast,
    "BatchMatMulV2": k_matmul,
    "BiasAdd": k_biasadd,
    "Add": k_add,
    "Sub": k_sub,
    "Mul": k_mul,
    "SplitD": k_split,
    "ReduceMeanD": k_reduce_mean,
    "SquaredDifference": k_squared_difference,
    "Rsqrt": k_rsqrt,
}


# Framework custom ops: no GE op definition, hence no reference kernel (the replay must say
# "unverified" for the fused ops made of them). Kept apart from KERNELS, the GE-defined types.
CUSTOM_KERNELS: dict[str, Kernel] = {"CustomSigmoid": k_sigmoid}


# ----------------------------------------------------------------------------------------------
# Graph of original ops


@dataclass
class Node:
    """One op of the original network. ``inputs`` are ``"producer:index"`` references."""

    name: str
    type: str
    inputs: list[str] = field(default_factory=list)
    attrs: dict = field(default_factory=dict)
    dtype: str = "float32"  # output dtype
    n_outputs: int = 1
    block: int = -1  # -1 = stem / not in a block
    role: str = ""  # position in the block (e.g. "conv1"), used by fusion plans and faults

    @property
    def has_task(self) -> bool:
        return self.type not in ("Data", "Const")

    def run(self, inputs: list[np.ndarray], attrs: dict | None = None) -> list[np.ndarray]:
        kernel = KERNELS.get(self.type) or CUSTOM_KERNELS[self.type]
        outs = kernel(inputs, self.attrs if attrs is None else attrs)
        return [np.asarray(o).astype(self.dtype, copy=False) for o in outs]


@dataclass
class Network:
    nodes: list[Node]  # topological (= execution) order, Data and Const included
    consts: dict[str, np.ndarray]  # Const/Data node name -> value
    channels: int
    spatial: int
    n_blocks: int

    def node(self, name: str) -> Node:
        return self._by_name[name]

    def __post_init__(self) -> None:
        self._by_name = {n.name: n for n in self.nodes}

    @property
    def task_nodes(self) -> list[Node]:
        return [n for n in self.nodes if n.has_task]

    def evaluate(self) -> dict[str, list[np.ndarray]]:
        """Outputs of every node, keyed by node name (the fusion-off run)."""
        values: dict[str, list[np.ndarray]] = {}
        for node in self.nodes:
            if not node.has_task:
                values[node.name] = [self.consts[node.name]]
                continue
            values[node.name] = node.run([resolve(values, ref) for ref in node.inputs])
        return values


def split_ref(ref: str) -> tuple[str, int]:
    name, _, idx = ref.rpartition(":")
    return name, int(idx)


def resolve(values: dict[str, list[np.ndarray]], ref: str) -> np.ndarray:
    name, idx = split_ref(ref)
    return values[name][idx]


OPS_PER_BLOCK = 33  # task ops in one block (see _add_block)
STEM_OPS = 2


def blocks_for(n_ops: int) -> int:
    """Number of blocks giving at least ``n_ops`` task ops in the original network."""
    return max(1, math.ceil((n_ops - STEM_OPS) / OPS_PER_BLOCK))


def build_network(
    n_blocks: int, *, channels: int = 16, spatial: int = 16, seed: int = 0, custom_ops=False
) -> Network:
    """The original network: stem conv + relu, then ``n_blocks`` blocks. ``custom_ops``: the
    GLU sigmoid is the custom op type ``CustomSigmoid`` (same values)."""
    if channels % 16 or spatial < 4:
        raise ValueError("channels must be a multiple of 16 and spatial at least 4")
    rng = np.random.default_rng(seed)
    c, s = channels, spatial
    b = _Builder(rng)
    b.data("input", rng.standard_normal((1, 3, s, s)).astype(np.float32))
    w = b.const("stem_conv_weight", rng.standard_normal((c, 3, 3, 3)) * math.sqrt(2 / 27))
    b.op("stem_conv", "Conv2D", ["input:0", w], **_conv_attrs(1), role="stem_conv")
    x = b.op("stem_relu", "Relu", ["stem_conv:0"], role="stem_relu")
    for i in range(n_blocks):
        x = _add_block(b, x, i, c, s, "CustomSigmoid" if custom_ops else "Sigmoid")
    net = Network(b.nodes, b.consts, channels, spatial, n_blocks)
    assert len(net.task_nodes) == STEM_OPS + OPS_PER_BLOCK * n_blocks
    return net


class _Builder:
    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.nodes: list[Node] = []
        self.consts: dict[str, np.ndarray] = {}
        self.block = -1
        self.values: dict[str, list[np.ndarray]] = {}  # evaluated while building (calibration)

    def data(self, name: str, value: np.ndarray) -> str:
        self.nodes.append(Node(name, "Data", dtype=str(value.dtype)))
        self.consts[name] = value
        self.values[name] = [value]
        return f"{name}:0"

    def const(self, name: str, value, dtype: str = "float32") -> str:
        arr = np.asarray(value).astype(dtype)
        self.nodes.append(Node(name, "Const", dtype=dtype, block=self.block))
        self.consts[name] = arr
        self.values[name] = [arr]
        return f"{name}:0"

    def op(self, name, type_, inputs, *, role, dtype="float32", n_outputs=1, **attrs) -> str:
        node = Node(name, type_, list(inputs), attrs, dtype, n_outputs, self.block, role)
        self.nodes.append(node)
        self.values[name] = node.run([resolve(self.values, ref) for ref in node.inputs])
        return f"{name}:0"

    def value(self, ref: str) -> np.ndarray:
        return resolve(self.values, ref)


def _add_block(b: _Builder, x: str, i: int, c: int, s: int, sig_type: str) -> str:
    """33 task ops: conv-bn-relu, conv-mul(scale), residual add, avg pool, transpose+reshape to a
    sequence, fp16 MLP (matmul-bias-gelu-split-sigmoid-mul), layer norm (9 primitive ops),
    attention-like matmul-temperature-softmax-gate, reshape+transpose back, residual add."""
    rng, p = b.rng, f"b{i}_"
    b.block = i
    # per-channel filter scales spread the channel variances over four decades, as in trained
    # nets, so the BatchNorm epsilon matters; running statistics are the real ones
    x_std = float(b.value(x).std()) or 1.0
    filt_scale = 10.0 ** rng.uniform(-2, 0, (c, 1, 1, 1)) / x_std
    w1 = b.const(
        p + "conv1_weight", rng.standard_normal((c, c, 3, 3)) * math.sqrt(1 / (9 * c)) * filt_scale
    )
    conv1 = b.op(p + "conv1", "Conv2D", [x, w1], **_conv_attrs(1), role="conv1")
    y = b.value(conv1)
    bn = [
        b.const(p + "bn1_gamma", rng.uniform(0.5, 1.5, c)),
        b.const(p + "bn1_beta", rng.uniform(-0.5, 0.5, c)),
        b.const(p + "bn1_mean", y.mean(axis=(0, 2, 3))),
        b.const(p + "bn1_variance", y.var(axis=(0, 2, 3))),
    ]
    bn1 = b.op(p + "bn1", "BatchNorm", [conv1, *bn], epsilon=1e-5, is_training=False, role="bn1")
    relu1 = b.op(p + "relu1", "Relu", [bn1], role="relu1")
    w2 = b.const(p + "conv2_weight", rng.standard_normal((c, c, 1, 1)) * math.sqrt(1 / c))
    conv2 = b.op(p + "conv2", "Conv2D", [relu1, w2], **_conv_attrs(0), role="conv2")
    k = b.const(p + "scale2_factor", np.array(0.125))
    scale2 = b.op(p + "scale2", "Mul", [conv2, k], role="scale2")
    add1 = b.op(p + "add1", "Add", [scale2, x], role="add1")
    pool = b.op(
        p + "pool",
        "AvgPool",
        [add1],
        ksize=[1, 1, 3, 3],
        strides=[1, 1, 1, 1],
        padding="SAME",
        data_format="NCHW",
        role="pool",
    )
    tr_in = b.op(p + "tr_in", "TransposeD", [pool], perm=[0, 2, 3, 1], role="tr_in")
    rs_in = b.op(p + "rs_in", "Reshape", [tr_in], shape=[1, s * s, c], role="rs_in")
    cast16 = b.op(p + "cast16", "Cast", [rs_in], dtype="float16", role="cast16")
    wm1 = b.const(p + "mm1_weight", rng.standard_normal((c, 2 * c)) / math.sqrt(c), "float16")
    mm1 = b.op(p + "mm1", "BatchMatMulV2", [cast16, wm1], dtype="float16", role="mm1")
    bias1 = b.const(p + "bias1_value", rng.uniform(0.2, 1.0, 2 * c), "float16")
    badd = b.op(
        p + "bias1", "BiasAdd", [mm1, bias1], dtype="float16", data_format="NHWC", role="bias1"
    )
    gelu = b.op(p + "gelu", "Gelu", [badd], dtype="float16", role="gelu")
    split = b.op(
        p + "split",
        "SplitD",
        [gelu],
        dtype="float16",
        n_outputs=2,
        num_split=2,
        split_dim=-1,
        role="split",
    )
    sig = b.op(p + "sig", sig_type, [p + "split:1"], dtype="float16", role="sig")
    glu = b.op(p + "glu", "Mul", [split, sig], dtype="float16", role="glu")
    cast32 = b.op(p + "cast32", "Cast", [glu], role="cast32")
    # layer norm over the channel axis, written out as the framework's primitive ops
    mean = b.op(p + "ln_mean", "ReduceMeanD", [cast32], axes=[-1], keep_dims=True, role="ln_mean")
    sqd = b.op(p + "ln_sqd", "SquaredDifference", [cast32, mean], role="ln_sqd")
    var = b.op(p + "ln_var", "ReduceMeanD", [sqd], axes=[-1], keep_dims=True, role="ln_var")
    eps = b.const(p + "ln_epsilon", np.array(1e-5))
    veps = b.op(p + "ln_add_eps", "Add", [var, eps], role="ln_add_eps")
    rstd = b.op(p + "ln_rsqrt", "Rsqrt", [veps], role="ln_rsqrt")
    cen = b.op(p + "ln_sub", "Sub", [cast32, mean], role="ln_sub")
    norm = b.op(p + "ln_norm", "Mul", [cen, rstd], role="ln_norm")
    gam = b.const(p + "ln_gamma", rng.uniform(0.8, 1.2, c))
    bet = b.const(p + "ln_beta", rng.uniform(-0.1, 0.1, c))
    scaled = b.op(p + "ln_scale", "Mul", [norm, gam], role="ln_scale")
    ln = b.op(p + "ln_out", "Add", [scaled, bet], role="ln_out")
    wm2 = b.const(p + "mm2_weight", rng.standard_normal((c, c)) / math.sqrt(c))
    mm2 = b.op(p + "mm2", "BatchMatMulV2", [ln, wm2], role="mm2")
    t = b.const(p + "temperature", np.array(8.0))
    temp = b.op(p + "temp", "Mul", [mm2, t], role="temp")
    sm = b.op(p + "softmax", "SoftmaxV2", [temp], axes=[-1], role="softmax")
    gate = b.op(p + "gate", "Mul", [sm, ln], role="gate")
    rs_out = b.op(p + "rs_out", "Reshape", [gate], shape=[1, s, s, c], role="rs_out")
    tr_out = b.op(p + "tr_out", "TransposeD", [rs_out], perm=[0, 3, 1, 2], role="tr_out")
    out = b.op(p + "add_out", "Add", [tr_out, add1], role="add_out")
    b.block = -1
    return out
