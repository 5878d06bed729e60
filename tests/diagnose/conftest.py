"""Fixtures of the diagnose tests that build generated cases."""

from __future__ import annotations

import dataclasses

import pytest
from fusion_switch.synth import generator


@pytest.fixture
def network_changed(monkeypatch):
    """``change(f)``: ``f(net)`` edits the generated network's constants (both runs)."""
    build = generator.build_network
    changes: list = []

    def built(*args, **kwargs):
        net = build(*args, **kwargs)
        for change in changes:
            change(net)
        return net

    monkeypatch.setattr(generator, "build_network", built)
    return changes.append


@pytest.fixture
def on_dump_changed(monkeypatch):
    """``change(op_name, kind, index, f)``: the fusion-on dump of ``op_name``'s ``kind``
    ("input" or "output") ``index`` holds ``f(a copy of its values)``; what the op computed,
    and what ops downstream read, is unchanged."""
    write = generator.write_dumps
    changes: dict = {}

    def written(ops, folder, start_us):
        if "fusion_on" in str(folder):
            ops = [
                dataclasses.replace(o, input_values=list(o.input_values), outputs=list(o.outputs))
                for o in ops
            ]
            for o in ops:
                for (name, kind, index), change in changes.items():
                    if o.name != name:
                        continue
                    if kind == "input":
                        o.input_values[index] = change(o.input_values[index].copy())
                    else:
                        out = o.outputs[index]
                        value = change(out.value.copy())
                        o.outputs[index] = dataclasses.replace(out, value=value)
        return write(ops, folder, start_us)

    monkeypatch.setattr(generator, "write_dumps", written)
    return lambda name, kind, index, f: changes.__setitem__((name, kind, index), f)


@pytest.fixture
def b1_conv2_writes(monkeypatch):
    """``write(value)``: b1_conv2's fusion-on kernel writes ``value`` (NaN, infinity) into
    its first 8 output values."""
    conv_mul = generator.FUSED_KERNELS["conv2"]
    written = []

    def writing(nodes, ins, fault):
        outs = conv_mul(nodes, ins, fault)
        if nodes[0].name == "b1_conv2" and written:
            out = outs[0].copy()
            out.reshape(-1)[:8] = written[0]
            outs = [out]
        return outs

    monkeypatch.setitem(generator.FUSED_KERNELS, "conv2", writing)
    return written.append
