"""Every op type of the generator's original network (``synth/network.py``): the kernel, fed the
generator's own tensors and the attributes as its fusion-off graph carries them (read back with
``load_graph``, format from the input desc, as the replay passes them), reproduces the
generator's output within the output dtype's floor (the replay's score: max|kernel - generator|
/ max|generator| over fp16 2^-10, fp32 1e-5)."""

from __future__ import annotations

import numpy as np
import pytest
from fusion_switch.diagnose.kernels import lookup
from fusion_switch.readers.graph import load_graph
from fusion_switch.synth.generator import generate_case
from fusion_switch.synth.network import KERNELS, build_network, resolve

FLOOR = {"float16": 2.0**-10, "float32": 1e-5}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    case = generate_case(
        tmp_path_factory.mktemp("kernels") / "case", n_ops=35, faults=[], formats="host"
    )
    net = build_network(case.truth["n_blocks"], seed=case.truth["seed"])
    return case, net, net.evaluate(), load_graph(case.off_graph)


def test_every_generator_op_type_has_a_kernel():
    assert sorted(t for t in KERNELS if lookup(t) is None) == []


def test_kernels_reproduce_the_generator(generated):
    _case, net, values, graph = generated
    seen: dict[str, float] = {}
    for node in net.task_nodes:
        op = graph.op(node.name)
        assert op is not None and op.type == node.type
        inputs = [resolve(values, ref) for ref in node.inputs]
        fmt = op.input_descs[0].format if op.input_descs else None
        outs = lookup(op.type).fn(inputs, **op.attrs, format=fmt)
        expected = values[node.name]
        assert len(outs) >= len(expected), node.name
        for got, want in zip(outs, expected, strict=False):
            assert got.size == want.size, f"{node.name}: {got.shape} vs {want.shape}"
            # same values; a kept reduced axis may differ in shape only (GE keep_dims default)
            rounded = got.reshape(want.shape).astype(want.dtype).astype(np.float64)
            ref = want.astype(np.float64)
            score = np.abs(rounded - ref).max() / max(np.abs(ref).max(), 1e-30)
            score /= FLOOR[str(want.dtype)]
            seen[node.type] = max(seen.get(node.type, 0.0), float(score))
    print(
        "worst score per type (1 = the dtype's floor):", {k: round(v, 3) for k, v in seen.items()}
    )
    assert set(seen) == set(KERNELS) - {"Data", "Const"}
    assert max(seen.values()) <= 1.0, seen
