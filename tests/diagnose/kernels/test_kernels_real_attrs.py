"""The kernels accept the attributes of the real sample graphs as ``load_graph`` decodes them:
every unfused op of a type with a kernel (once per distinct attributes and shapes; a fused op's
type does not describe what it computes) is run on random tensors shaped by its input descs (origin
shape, host layout from the desc, as the replay passes it) and its outputs must have the sizes
of its output descs. A kernel may refuse an op only with a KernelError naming the reason."""

from __future__ import annotations

from collections import Counter

import numpy as np
from fusion_switch.diagnose.kernels import KernelError, lookup
from kernel_check import real_graphs

# inputs that hold indices or shapes (Const values the graph files do not carry)
INDEX_INPUTS = {"Transpose", "Reshape", "PadV3", "Pad", "GatherV2", "GatherV2D", "ExpandDims"}
# refusals that are the kernels' documented choices, not failures
EXPECTED_REFUSALS = ("offset_x=-128", "rounding of non-integer values")  # random floats to int64


def _inputs(op, rng):
    values = []
    for desc in op.input_descs:
        shape = tuple(desc.origin_shape or desc.shape or ())
        if desc.format == "FORMAT_RESERVED" or (not shape and desc.dtype in ("", "DT_UNDEFINED")):
            values.append(None)
            continue
        values.append(rng.uniform(0.5, 1.5, shape))
    while values and values[-1] is None:
        values.pop()
    return values


def test_real_ops_run_with_their_decoded_attributes():
    rng = np.random.default_rng(0)
    ran, refused = Counter(), Counter()
    seen: set[str] = set()
    for path, graph in real_graphs():
        for op in (o for g in graph.all_graphs for o in g.ops):
            spec = lookup(op.type)
            if spec is None or op.type in INDEX_INPUTS or not op.input_descs:
                continue
            if len([n for n in op.original_names if n]) >= 2:
                continue
            shapes = [tuple(d.origin_shape or d.shape or ()) for d in op.input_descs]
            key = repr((op.type, [op.attrs.get(a) for a in spec.attrs], shapes))
            if key in seen:
                continue
            seen.add(key)
            inputs = _inputs(op, rng)
            fmt = op.input_descs[0].origin_format or op.input_descs[0].format
            try:
                outs = spec.fn(inputs, **op.attrs, format=fmt)
            except KernelError as exc:
                refused[f"{op.type}: {exc}"] += 1
                continue
            for out, desc in zip(outs, op.output_descs, strict=False):
                want = int(np.prod(desc.origin_shape or desc.shape or ()))
                assert out.size == want, (
                    f"{path.name} {op.name}: {out.shape} vs {desc.origin_shape}"
                )
            ran[op.type] += 1
    print("ran:", dict(ran))
    print("refused:", dict(refused))
    assert ran["Conv2D"] > 0 and ran["FullyConnection"] > 0 and ran["Pooling"] > 0
    unexpected = [r for r in refused if not any(e in r for e in EXPECTED_REFUSALS)]
    assert unexpected == []
