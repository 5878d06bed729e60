"""The ops of one executed graph (fusion on or off) with the tensors its dump holds."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

GRAPH_FUSION, UB_FUSION = "GraphFusion", "UBFusion"
NC1HWC0, NZ = "NC1HWC0", "FRACTAL_NZ"


@dataclass
class OutSpec:
    origin: str  # original (fusion-off) op name
    origin_index: int
    format: str  # device format or the host format
    value: np.ndarray  # host layout


@dataclass
class ExecOp:
    """An op of one of the two executed graphs, with the tensors its dump holds."""

    name: str
    type: str
    inputs: list[str]  # "producer:index" on the same side
    input_values: list[np.ndarray] = field(default_factory=list)  # host layout
    input_formats: list[str] = field(default_factory=list)
    outputs: list[OutSpec] = field(default_factory=list)
    original_names: list[str] | None = None  # None: attribute absent (op is itself original)
    passes: list[tuple[str, str]] = field(default_factory=list)
    single_op_ub: list[str] = field(default_factory=list)
    fusion_scope: int | None = None
    attrs: dict = field(default_factory=dict)
    block: int = -1
    key: str = ""

    @property
    def has_task(self) -> bool:
        return self.type not in ("Data", "Const", "NetOutput")


def host_format(value: np.ndarray) -> str:
    return "NCHW" if value.ndim == 4 else "ND"


def wanted_format(fmt: str, value: np.ndarray, formats: str) -> str:
    if formats != "device" or fmt == "host":
        return host_format(value)
    if fmt == NC1HWC0 and value.ndim != 4:
        return host_format(value)
    if fmt == NZ and value.ndim < 2:
        return host_format(value)
    return fmt
