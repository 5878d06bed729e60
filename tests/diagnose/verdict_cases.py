"""Generated cases whose verdict is not a plain proof, shared by the verdict tests: a fused op
the replay proves wrong whose two passes it cannot split (``undecided``)."""

from __future__ import annotations

import numpy as np
from fusion_switch.synth import faults, generator


def undecided_fault(monkeypatch) -> str:
    """Registers the fault kind ``dropped_shift`` (Conv+BN+Relu losing the BatchNorm's
    shift, on the op ConvBatchnormFusionPass and a UB pass both built) and returns it."""
    monkeypatch.setitem(
        faults.FAULT_KINDS,
        "dropped_shift",
        faults.FaultKind(
            "dropped_shift", "conv1", "ConvBatchnormFusionPass", "GraphFusion", "BN shift lost"
        ),
    )

    def fused(nodes, ins, fault):
        conv, bn, _ = nodes
        x, w = ins[conv.inputs[0]], ins[conv.inputs[1]]
        gamma, beta, mean, var = (ins[r].astype(np.float32) for r in bn.inputs[1:])
        scale = gamma / np.sqrt(var + np.float32(bn.attrs["epsilon"]))
        bias = (beta - mean * scale) * (0 if fault is not None else 1)
        weight = w.astype(np.float32) * scale.reshape(-1, 1, 1, 1)
        out = conv.run([x, weight, bias], conv.attrs)[0]
        return [np.maximum(out, 0).astype(np.float32)]

    monkeypatch.setitem(generator.FUSED_KERNELS, "conv1", fused)
    return "dropped_shift"
