"""The reference kernels get each op's own attributes, worked out once per op (issue 16: an op
is run for the noise floor, its sub-graph and every localisation variant)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from fusion_switch.diagnose.replay import Kernels


class _Op:
    """An op whose attributes count how often they are read."""

    def __init__(self, name: str, scale: float) -> None:
        self.name, self.type = name, "Scale"
        self.input_descs, self.output_descs = [], []
        self._attrs = {"scale": scale, "unused": 1}
        self.reads = 0

    @property
    def attrs(self) -> dict:
        self.reads += 1
        return self._attrs


def _scale(inputs, scale):  # takes only ``scale``: ``unused`` must not reach it
    return [inputs[0] * scale]


def _kernels() -> Kernels:
    return Kernels(lambda op_type: SimpleNamespace(fn=_scale) if op_type == "Scale" else None)


def test_an_op_run_again_reads_its_attributes_once():
    kernels, op = _kernels(), _Op("a", 2.0)
    for _ in range(3):
        (out,) = kernels.run(op, [np.ones(3)])
        assert out.tolist() == [2.0, 2.0, 2.0]
    assert op.reads == 1


def test_each_op_and_variant_gets_its_own_attributes():
    kernels = _kernels()
    ops = [_Op(f"op{i}", float(i)) for i in range(50)]
    for _ in range(2):
        for i, op in enumerate(ops):
            assert kernels.run(op, [np.ones(2)])[0].tolist() == [float(i)] * 2
    # variants made and dropped one after the other (a localisation): never another's values
    for i in range(50):
        assert kernels.run(_Op("variant", 10.0 + i), [np.ones(1)])[0].tolist() == [10.0 + i]
