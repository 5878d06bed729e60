"""Reference kernels for replay-verified attribution (issue 11).

One module per op family; each registers pure numpy functions under GE op type names with
``@kernel``. The replay calls ``lookup(op.type).fn(inputs, **op.attrs, format=host_layout)``:
inputs in the op's host layout as float64 (absent optional inputs ``None``), attributes as
:mod:`fusion_switch.readers.graph` decodes them, GE's defaults for absent ones. A value the
kernel cannot honour raises :class:`KernelError` naming it, which the replay reports as
``unverified``. Outputs have the shape the op definition implies (e.g. GE's ``keep_dims`` false
drops reduced axes); the values never depend on it. ``KNOWN_GAPS`` lists the op types seen in
fused ops or the generator that have no kernel, with the reason.
"""

from __future__ import annotations

from . import (  # noqa: F401  (importing a family registers its kernels)
    activation,
    conv,
    conv_backprop,
    elementwise,
    matmul,
    norm,
    pooling,
    quant,
    reduce,
    shape,
    softmax,
)
from .registry import REGISTRY, Kernel, KernelError, KernelSpec, kernel

__all__ = [
    "KNOWN_GAPS",
    "Kernel",
    "KernelError",
    "KernelSpec",
    "kernel",
    "known_types",
    "lookup",
]


def lookup(op_type: str) -> KernelSpec | None:
    """The kernel for a GE op type, or None when there is none."""
    return REGISTRY.get(op_type)


def known_types() -> frozenset[str]:
    return frozenset(REGISTRY)


# Op types seen in the fused ops of the real sample graphs or in the generator's graphs that
# have no kernel. Each reason starts with how often the type occurs there (checked by
# tests/diagnose/kernels/test_kernels_coverage.py).
KNOWN_GAPS: dict[str, str] = {
    "ReadSelect": (
        "3 fused ops in the real samples (ge_proto_00000062_Build: L1 read-select + 1x1 Conv2D "
        "+ Eltwise + LeakyRelu, originals absent from the graph, so the fused type stands in); "
        "a ReadSelect alone is a strided read whose stride GE does not record (only the shapes "
        "imply it): replay the original Conv2D/BN/Scale/Eltwise/Relu ops instead"
    ),
}
