"""Hypothesis in CI draws the same examples on every run (derandomize), so a CI result can be
reproduced and never flips on a lucky draw; runs elsewhere keep exploring new examples, and
`FUSION_SWITCH_FUZZ=long` (tests/reliability) explores thousands."""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
