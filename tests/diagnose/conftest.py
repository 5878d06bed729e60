"""Fixtures of the diagnose tests that build generated cases."""

from __future__ import annotations

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
