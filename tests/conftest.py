"""Hypothesis in CI draws the same examples on every run (derandomize), so a CI result can be
reproduced and never flips on a lucky draw; runs elsewhere keep exploring new examples, and
`FUSION_SWITCH_FUZZ=long` (tests/reliability) explores thousands. Also the generated cases
that tests of several packages share."""

import os

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(scope="session")
def many_ops_case(tmp_path_factory):
    """A generated case of ~3,000 original ops with small tensors (4x4 feature maps): graphs of
    10 MB, 39 MB of dumps; for what grows with the number of ops (memory estimates)."""
    from fusion_switch.synth.generator import generate_case

    return generate_case(
        tmp_path_factory.mktemp("many_ops"), n_ops=3000, spatial=4, graph_text=False
    )
