"""The shared e2e fixtures (see `e2e_support.session_fixtures`): one server per emulated client
per test module.

pytest-lsp's fixture yields the client itself, so the `Session` built at start-up (which
keeps the initialize result and the recorded diagnostics) rides on it as an attribute.
"""

from __future__ import annotations

import pytest
from e2e_support import CLIENTS, session_fixtures
from fusion_switch.synth.generator import generate_case

lsp, session = session_fixtures(CLIENTS)


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    """A small generated comparison case with one injected fault (see workflow_support)."""
    return generate_case(tmp_path_factory.mktemp("case") / "case", n_ops=40)
