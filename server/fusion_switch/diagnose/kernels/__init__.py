"""Reference kernels for replay-verified attribution (issue 11).

One module per op family; each registers pure numpy functions under GE op type names with
``@kernel``. The replay calls ``lookup(op.type).fn(inputs, **op.attrs, format=host_layout)``:
inputs in the op's host layout as float64 (absent optional inputs ``None``), attributes as
:mod:`fusion_switch.readers.graph` decodes them, GE's defaults for absent ones. A value the
kernel cannot honour raises :class:`KernelError` naming it, which the replay reports as
``unverified``. ``KNOWN_GAPS`` lists the op types seen in fused ops or the generator that have
no kernel, with the reason.
"""

from __future__ import annotations

from . import (  # noqa: F401  (importing a family registers its kernels)
    activation,
    conv,
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


KNOWN_GAPS: dict[str, str] = {}
