"""Data movement: Transpose(D), ConfusionTransposeD, Reshape, Squeeze, Unsqueeze, ExpandDims,
Flatten(V2), Identity, TransData, Cast, ConcatD/ConcatV2D, SplitD/SplitVD, Pad(D)/PadV3(D),
StridedSliceD, GatherV2(D).

Sources: GE's op definitions in ``transformation_ops.h``, ``array_ops.h``,
``split_combination_ops.h``, ``pad_ops.h``, ``selection_ops.h`` and
``elewise_calculation_ops.h`` (Cast) of mindspore-ai/graphengine
(``third_party/fwkacllib/inc/ops/``). Attributes as GE names them: ``perm``; ConfusionTransposeD
``perm``, ``shape``, ``transpose_first``; Reshape's target shape is input 1 (Caffe's
``axis``/``num_axes`` other than the defaults are refused); Squeeze ``axis``, Unsqueeze
``axes``; Flatten ``axis`` 1, FlattenV2 ``axis`` 1 / ``end_axis`` -1; Cast ``dst_type``
(``ge::DataType`` numbering); ConcatD ``concat_dim``, ``N``; SplitD ``split_dim``,
``num_split``; SplitVD ``size_splits``; PadV3 ``mode`` and ``paddings_contiguous`` (true:
``[[b0, e0], [b1, e1], ...]``, false: ``[b0, b1, ..., e0, e1, ...]``). Generator readings
(``synth/network.py``): Reshape's ``shape`` and SplitD's ``axis`` arrive as attributes; both are
accepted when the GE form is absent.

TransData to or from a device layout (NC1HWC0, FRACTAL_*) is the identity on host-layout values;
between two host layouts (``src_format``/``dst_format`` NCHW, NHWC, HWCN, CHWN) it transposes.
Cast rounds to float destinations (float16, bfloat16 with round-to-nearest-even, float32); to
integer destinations only values that are already integers are exact, anything else is refused
(the device's rounding mode for such casts is not documented).
"""

from __future__ import annotations

import numpy as np

from .common import as_bool, as_float, as_int, int_list, need, norm_axis, optional
from .registry import KernelError, kernel


def _ints_from(value: np.ndarray | list | None, name: str) -> list[int]:
    if isinstance(value, np.ndarray):
        value = [float(v) for v in value.ravel()]
    return int_list(list(value or []), name)


@kernel("TransposeD", attrs=("perm",))
def transpose_d(inputs, *, perm=None):
    x = need(inputs, 0, "x")
    return [_transpose(x, perm, "perm")]


@kernel("Transpose")
def transpose(inputs):
    x, perm = need(inputs, 0, "x"), need(inputs, 1, "perm")
    return [_transpose(x, _ints_from(perm, "input perm"), "input perm")]


def _transpose(x: np.ndarray, perm, name: str) -> np.ndarray:
    if perm is None:
        raise KernelError(f"attribute {name} is missing")
    p = int_list(perm, name)
    if sorted(norm_axis(a, x.ndim, name) for a in p) != list(range(x.ndim)):
        raise KernelError(f"{name}={p} is not a permutation of x's {x.ndim} axes")
    return np.transpose(x, [norm_axis(a, x.ndim, name) for a in p])


def _reshape(x: np.ndarray, shape: list[int], name: str) -> np.ndarray:
    if 0 in shape and x.size:
        raise KernelError(f"{name}={shape} holds 0: copy-or-empty differs by framework")
    if shape.count(-1) > 1 or any(s < -1 for s in shape):
        raise KernelError(f"{name}={shape} is not a valid target shape")
    try:
        return x.reshape(shape)
    except ValueError as exc:
        raise KernelError(f"{name}={shape} does not hold x's {x.size} elements") from exc


@kernel("Reshape", attrs=("axis", "num_axes", "shape"))
def reshape(inputs, *, axis=0, num_axes=-1, shape=None):
    x = need(inputs, 0, "x")
    if as_int(axis, "axis") != 0 or as_int(num_axes, "num_axes") != -1:
        raise KernelError(f"attributes axis={axis}/num_axes={num_axes}: partial reshape")
    target = optional(inputs, 1)
    if target is not None:
        return [_reshape(x, _ints_from(target, "input shape"), "input shape")]
    if shape is None:
        raise KernelError("input shape is missing (and no shape attribute)")
    return [_reshape(x, int_list(shape, "shape"), "shape")]


@kernel("ConfusionTransposeD", attrs=("perm", "shape", "transpose_first"))
def confusion_transpose_d(inputs, *, perm=None, shape=None, transpose_first=None):
    """Transpose then reshape (``transpose_first``) or reshape then transpose."""
    x = need(inputs, 0, "x")
    for name, value in (("perm", perm), ("shape", shape), ("transpose_first", transpose_first)):
        if value is None:
            raise KernelError(f"attribute {name} is missing")
    if as_bool(transpose_first, "transpose_first"):
        return [_reshape(_transpose(x, perm, "perm"), int_list(shape, "shape"), "shape")]
    return [_transpose(_reshape(x, int_list(shape, "shape"), "shape"), perm, "perm")]


@kernel("Squeeze", attrs=("axis",))
def squeeze(inputs, *, axis=()):
    x = need(inputs, 0, "x")
    axes = [norm_axis(a, x.ndim, "axis") for a in int_list(axis, "axis")]
    if not axes:
        return [np.squeeze(x)]
    if len(set(axes)) != len(axes):  # numpy raised ValueError (hypothesis found it)
        raise KernelError(f"attribute axis={axis} repeats an axis")
    if any(x.shape[a] != 1 for a in axes):
        raise KernelError(f"attribute axis={axis} names an axis of x {x.shape} that is not 1")
    return [np.squeeze(x, axis=tuple(axes))]


def _expand(x: np.ndarray, axes: list[int], name: str) -> np.ndarray:
    rank = x.ndim + len(axes)
    if rank > 8:  # GE tensors have at most 8 axes
        raise KernelError(f"{name}={axes} would give x {x.shape} rank {rank} (GE allows 8)")
    norm = sorted(norm_axis(a, rank, name) for a in axes)
    if len(set(norm)) != len(norm):
        raise KernelError(f"{name}={axes} repeats an axis")
    return np.expand_dims(x, tuple(norm))


@kernel("Unsqueeze", attrs=("axes",))
def unsqueeze(inputs, *, axes=()):
    return [_expand(need(inputs, 0, "x"), int_list(axes, "axes"), "axes")]


@kernel("ExpandDims", attrs=("axis",))
def expand_dims(inputs, *, axis=None):
    x = need(inputs, 0, "x")
    a = optional(inputs, 1)
    if a is not None:
        return [_expand(x, _ints_from(a, "input axis"), "input axis")]
    if axis is None:
        raise KernelError("input axis is missing")
    return [_expand(x, int_list(axis, "axis"), "axis")]


@kernel("Flatten", attrs=("axis",))
def flatten(inputs, *, axis=1):
    x = need(inputs, 0, "x")
    a = norm_axis(as_int(axis, "axis"), x.ndim + 1, "axis") if x.ndim else 0
    return [x.reshape(int(np.prod(x.shape[:a])), int(np.prod(x.shape[a:])))]


@kernel("FlattenV2", attrs=("axis", "end_axis"))
def flatten_v2(inputs, *, axis=1, end_axis=-1):
    x = need(inputs, 0, "x")
    a = norm_axis(as_int(axis, "axis"), x.ndim, "axis")
    e = norm_axis(as_int(end_axis, "end_axis"), x.ndim, "end_axis")
    if e < a:
        raise KernelError(f"attribute end_axis={end_axis} comes before axis={axis}")
    return [x.reshape((*x.shape[:a], int(np.prod(x.shape[a : e + 1])), *x.shape[e + 1 :]))]


@kernel("Identity", "StopGradient", "Snapshot")
def identity(inputs):
    return [need(inputs, 0, "x")]


HOST_LAYOUTS = ("NCHW", "NHWC", "HWCN", "CHWN")  # 4-D layouts a host tensor can have


@kernel("TransData", attrs=("src_format", "dst_format"))
def trans_data(inputs, *, src_format=None, dst_format=None):
    """Identity when one side is a device layout (NC1HWC0, FRACTAL_Z, FRACTAL_NZ, ...): the
    host-layout values do not change. Between two host layouts it is a transpose."""
    x = need(inputs, 0, "x")
    src, dst = str(src_format or "").upper(), str(dst_format or "").upper()
    if src in HOST_LAYOUTS and dst in HOST_LAYOUTS and src != dst:
        if x.ndim != 4:
            raise KernelError(f"input x has rank {x.ndim} for a {src} -> {dst} TransData")
        return [np.transpose(x, [src.index(axis) for axis in dst])]
    return [x]


# ge::DataType codes (graph attributes such as Cast's dst_type use this numbering)
_GE_FLOATS = {0: np.float32, 1: np.float16, 11: np.float64}
_GE_INTS = {
    2: np.int8,
    3: np.int32,
    4: np.uint8,
    6: np.int16,
    7: np.uint16,
    8: np.uint32,
    9: np.int64,
    10: np.uint64,
}
_GE_BOOL, _GE_BF16 = 12, 27


def round_to_bf16(x: np.ndarray) -> np.ndarray:
    """float64 → nearest bfloat16 (ties to even, via float32), returned as float64."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    out = rounded.astype(np.uint32).view(np.float32).astype(np.float64)
    return np.where(np.isnan(x), x, out)


@kernel("Cast", attrs=("dst_type",))
def cast(inputs, *, dst_type=None):
    """Without ``dst_type`` (the generator's Cast) the value passes unchanged; rounding to the
    output dtype is then the caller's, as for every other op."""
    x = need(inputs, 0, "x")
    if dst_type is None:
        return [x]
    code = as_int(dst_type, "dst_type")
    if code in _GE_FLOATS:
        with np.errstate(over="ignore"):
            return [x.astype(_GE_FLOATS[code]).astype(np.float64)]
    if code == _GE_BF16:
        return [round_to_bf16(x)]
    if code == _GE_BOOL:
        return [(x != 0).astype(np.float64)]
    if code in _GE_INTS:
        info = np.iinfo(_GE_INTS[code])
        if (
            np.all(np.isfinite(x))
            and np.all(x == np.trunc(x))
            and x.min(initial=0) >= info.min
            and x.max(initial=0) <= info.max
        ):
            return [x]
        raise KernelError(f"attribute dst_type={code}: rounding of non-integer values not replayed")
    raise KernelError(f"attribute dst_type={code} is not a numeric type")


@kernel("ConcatD", "ConcatV2D", attrs=("concat_dim", "N"))
def concat_d(inputs, *, concat_dim=None, N=None):
    xs = [need(inputs, i, f"x{i}") for i in range(len(inputs))]
    if not xs:
        raise KernelError("input x0 is missing")
    if concat_dim is None:
        raise KernelError("attribute concat_dim is missing")
    if N is not None and as_int(N, "N") != len(xs):
        raise KernelError(f"attribute N={N} but the op has {len(xs)} inputs")
    axis = norm_axis(as_int(concat_dim, "concat_dim"), xs[0].ndim, "concat_dim")
    try:
        return [np.concatenate(xs, axis=axis)]
    except ValueError as exc:
        shapes = [x.shape for x in xs]
        raise KernelError(f"inputs {shapes} do not concatenate on concat_dim={concat_dim}") from exc


@kernel("SplitD", attrs=("split_dim", "num_split", "axis"))
def split_d(inputs, *, split_dim=None, num_split=None, axis=None):
    x = need(inputs, 0, "x")
    return _even(x, _split_axis(x, split_dim, axis), num_split)


@kernel("SplitVD", attrs=("size_splits", "split_dim", "num_split", "axis"))
def split_vd(inputs, *, size_splits=None, split_dim=None, num_split=None, axis=None):
    x = need(inputs, 0, "x")
    ax = _split_axis(x, split_dim, axis)
    if size_splits is None:
        return _even(x, ax, num_split)
    sizes = int_list(size_splits, "size_splits")
    if sizes.count(-1) == 1:
        sizes[sizes.index(-1)] = x.shape[ax] - sum(s for s in sizes if s != -1)
    if any(s < 0 for s in sizes) or sum(sizes) != x.shape[ax]:
        raise KernelError(f"attribute size_splits={size_splits} does not sum to {x.shape[ax]}")
    if num_split is not None and as_int(num_split, "num_split") != len(sizes):
        raise KernelError(f"attribute num_split={num_split} but size_splits has {len(sizes)}")
    return list(np.split(x, np.cumsum(sizes)[:-1], axis=ax))


def _even(x: np.ndarray, ax: int, num_split) -> list[np.ndarray]:
    n = as_int(num_split if num_split is not None else 0, "num_split")
    if n < 1 or x.shape[ax] % n:
        raise KernelError(f"attribute num_split={num_split} does not divide {x.shape[ax]}")
    return list(np.split(x, n, axis=ax))


def _split_axis(x: np.ndarray, split_dim, axis) -> int:
    name, value = ("split_dim", split_dim) if split_dim is not None else ("axis", axis)
    if value is None:
        raise KernelError("attribute split_dim is missing")
    return norm_axis(as_int(value, name), x.ndim, name)


def _pairs(flat: list[int], ndim: int, contiguous: bool, name: str) -> list[tuple[int, int]]:
    if len(flat) != 2 * ndim:
        raise KernelError(f"{name} has {len(flat)} values for a rank-{ndim} x")
    if contiguous:
        return [(flat[2 * i], flat[2 * i + 1]) for i in range(ndim)]
    return [(flat[i], flat[ndim + i]) for i in range(ndim)]


def _pad(x, pairs, mode, value) -> np.ndarray:
    if any(b < 0 or e < 0 for b, e in pairs):
        raise KernelError(f"paddings {pairs} are negative (cropping is not replayed)")
    if not pairs:  # a scalar: nothing to pad (np.pad refuses an empty pad width)
        return x.copy()
    m = str(mode).lower()
    if m == "constant":
        return np.pad(x, pairs, mode="constant", constant_values=value)
    if m in ("reflect", "edge", "symmetric"):
        return np.pad(x, pairs, mode=m)
    raise KernelError(f"attribute mode={mode!r} is not constant, reflect, edge or symmetric")


@kernel("PadD", "PadV3D", attrs=("paddings", "mode", "constant_values", "paddings_contiguous"))
def pad_d(inputs, *, paddings=None, mode="constant", constant_values=0, paddings_contiguous=True):
    x = need(inputs, 0, "x")
    if paddings is None:
        raise KernelError("attribute paddings is missing")
    if not isinstance(paddings, list):
        raise KernelError(f"attribute paddings={paddings!r} is not a list of [begin, end] pairs")
    flat = [v for row in paddings for v in (row if isinstance(row, list) else [row])]
    pairs = _pairs(
        int_list(flat, "paddings"),
        x.ndim,
        as_bool(paddings_contiguous, "paddings_contiguous"),
        "attribute paddings",
    )
    return [_pad(x, pairs, mode, as_float(constant_values, "constant_values"))]


@kernel("Pad", "PadV3", attrs=("mode", "paddings_contiguous"))
def pad(inputs, *, mode="constant", paddings_contiguous=True):
    x, p = need(inputs, 0, "x"), need(inputs, 1, "paddings")
    pairs = _pairs(
        _ints_from(p, "input paddings"),
        x.ndim,
        as_bool(paddings_contiguous, "paddings_contiguous"),
        "input paddings",
    )
    value = optional(inputs, 2)
    return [_pad(x, pairs, mode, 0.0 if value is None else float(value.ravel()[0]))]


@kernel(
    "StridedSliceD",
    attrs=(
        "begin",
        "end",
        "strides",
        "begin_mask",
        "end_mask",
        "ellipsis_mask",
        "new_axis_mask",
        "shrink_axis_mask",
    ),
)
def strided_slice_d(
    inputs,
    *,
    begin=None,
    end=None,
    strides=None,
    begin_mask=0,
    end_mask=0,
    ellipsis_mask=0,
    new_axis_mask=0,
    shrink_axis_mask=0,
):
    x = need(inputs, 0, "x")
    for name, value in (("ellipsis_mask", ellipsis_mask), ("new_axis_mask", new_axis_mask)):
        if as_int(value, name) != 0:
            raise KernelError(f"attribute {name}={value} is not replayed")
    if begin is None or end is None:
        raise KernelError("attribute begin/end is missing")
    b, e = int_list(begin, "begin"), int_list(end, "end")
    s = int_list(strides, "strides") if strides is not None else [1] * len(b)
    if not len(b) == len(e) == len(s) or len(b) > x.ndim:
        raise KernelError(f"attributes begin/end/strides {b}/{e}/{s} do not fit x {x.shape}")
    bm, em, sm = (
        as_int(v, n)
        for v, n in (
            (begin_mask, "begin_mask"),
            (end_mask, "end_mask"),
            (shrink_axis_mask, "shrink_axis_mask"),
        )
    )
    index: list = []
    for i, (lo, hi, st) in enumerate(zip(b, e, s, strict=True)):
        if st == 0:
            raise KernelError("attribute strides holds 0")
        if sm >> i & 1:
            index.append(lo)
            continue
        index.append(slice(None if bm >> i & 1 else lo, None if em >> i & 1 else hi, st))
    return [x[tuple(index)]]


@kernel("GatherV2D", attrs=("axis",))
def gather_v2_d(inputs, *, axis=0):
    x, idx = need(inputs, 0, "x"), need(inputs, 1, "indices")
    return [_gather(x, idx, as_int(axis, "axis"))]


@kernel("GatherV2", attrs=("batch_dims",))
def gather_v2(inputs, *, batch_dims=0):
    x, idx, a = need(inputs, 0, "x"), need(inputs, 1, "indices"), need(inputs, 2, "axis")
    if as_int(batch_dims, "batch_dims") != 0:
        raise KernelError(f"attribute batch_dims={batch_dims} is not replayed")
    return [_gather(x, idx, _ints_from(a, "input axis")[0])]


def _gather(x: np.ndarray, idx: np.ndarray, axis: int) -> np.ndarray:
    ax = norm_axis(axis, x.ndim, "axis")
    if np.any(idx != np.trunc(idx)) or np.any(idx < -x.shape[ax]) or np.any(idx >= x.shape[ax]):
        raise KernelError(f"input indices are not integers within x's axis {ax} ({x.shape[ax]})")
    return np.take(x, idx.astype(np.int64), axis=ax)
