"""Faults the case generator can inject into a fused op, and which fusion rule each one blames.

Each kind names the fused op it lands on (by the role of its anchor op in a block) and the rule
that built that op. The fault changes only how the fusion-on side computes that op; everything
downstream then computes from the faulty values, so the error propagates for real.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FaultKind:
    name: str
    target: str  # key of the fused-op plan entry in a block (see generator.BLOCK_PLAN)
    rule: str  # the fusion rule that built the target op
    section: str
    description: str


FAULT_KINDS: dict[str, FaultKind] = {
    k.name: k
    for k in (
        FaultKind(
            "wrong_epsilon",
            "conv1",
            "ConvBatchnormFusionPass",
            "GraphFusion",
            "BatchNorm folded into the convolution with epsilon 1e-2 instead of 1e-5: channels "
            "with a small running variance are scaled down",
        ),
        FaultKind(
            "dropped_bias",
            "mm1",
            "MatMulBiasAddFusionPass",
            "GraphFusion",
            "the BiasAdd folded into the MatMul is lost: the bias is never added",
        ),
        FaultKind(
            "dropped_scale",
            "conv2",
            "AConv2dMulFusion",
            "GraphFusion",
            "the scalar Mul (x0.125) folded into the convolution is lost: the output is 8x too "
            "large, cosine similarity stays 1.0",
        ),
        FaultKind(
            "fp16_saturation",
            "softmax",
            "SoftmaxFusionPass",
            "GraphFusion",
            "the fused softmax exponentiates in float16 without subtracting the row maximum: "
            "exp() saturates at 65504 and large logits become indistinguishable",
        ),
        FaultKind(
            "wrong_axis",
            "softmax",
            "SoftmaxFusionPass",
            "GraphFusion",
            "the fused softmax normalises over the sequence axis instead of the channel axis",
        ),
        FaultKind(
            "dropped_relu",
            "conv1",
            "TbeCommonRules0FusionPass",
            "UBFusion",
            "the UB pass that appends the Relu tail to the fused Conv+BatchNorm drops it: "
            "negative values pass through (the graph pass that folded the BatchNorm is innocent)",
        ),
        FaultKind(
            "approx_gelu",
            "mm1",
            "TbeBatchMatmulElementWiseFusionPass",
            "UBFusion",
            "the UB tail of the fused float16 MatMul computes Gelu with the sigmoid "
            "approximation x*sigmoid(1.702x): a subtle error (cosine ~0.9999) in a float16 op",
        ),
        FaultKind(
            "inverted_gate",
            "glu",
            "TbeEltwiseFusionPass",
            "UBFusion",
            "the fused Sigmoid+Mul gate computes 1 - sigmoid(x): the GLU passes what it should "
            "block (with custom_ops the sigmoid has no reference kernel: only a heuristic sees it)",
        ),
        FaultKind(
            "wrong_perm",
            "tr_in",
            "TransposeReshapeFusionPass",
            "GraphFusion",
            "the ConfusionTransposeD built from Transpose+Reshape uses permutation (0,3,2,1) "
            "instead of (0,2,3,1): height and width are swapped",
        ),
    )
}


@dataclass(frozen=True)
class Fault:
    """A fault of ``kind`` injected into block ``block`` (None: the generator picks one)."""

    kind: str
    block: int | None = None

    @property
    def spec(self) -> FaultKind:
        return FAULT_KINDS[self.kind]

    @classmethod
    def parse(cls, value: str | Fault) -> Fault:
        """``"kind"`` or ``"kind@block"``; raises ValueError naming the known kinds."""
        if isinstance(value, Fault):
            fault = value
        else:
            kind, _, block = str(value).partition("@")
            try:
                fault = cls(kind.strip(), int(block) if block.strip() else None)
            except ValueError:
                raise ValueError(f"bad fault {value!r}: expected KIND or KIND@BLOCK") from None
        if fault.kind not in FAULT_KINDS:
            known = ", ".join(sorted(FAULT_KINDS))
            raise ValueError(f"unknown fault kind {fault.kind!r}; known kinds: {known}")
        return fault
