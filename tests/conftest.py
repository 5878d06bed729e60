"""Hypothesis in CI draws the same examples on every run (derandomize), so a CI result can be
reproduced and never flips on a lucky draw; runs elsewhere keep exploring new examples, and
`FUSION_SWITCH_FUZZ=long` (tests/reliability) explores thousands. Also the generated cases
that tests of several packages share, and the groups of tests that must not run side by side
when pytest-xdist spreads the suite over the cores (scripts/test.sh)."""

import os

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

# Tests that share something outside their tmp_path run on one xdist worker, one after the
# other: the VS Code extension's build folders, the wheelhouse and code-server in the cache
# (every test under tests/clients builds or installs them). scripts/test.sh runs
# `-n N --dist loadfile`: whole files go to a worker, and the files of a group below go as
# one unit. (xdist's own `loadgroup` marks do not reach its scheduler under pytest 9: the
# test ids it renames are not the ones pytest reports.) Tests that observe the whole machine
# are marked `machine_wide` and run after the others, alone.
SERIAL_GROUPS = {"clients": ("clients/",)}


def serial_group(test_file: str) -> str | None:
    """The group of a test file, given as its path under tests/ ("compare/test_dask.py")."""
    for group, prefixes in SERIAL_GROUPS.items():
        if test_file.startswith(prefixes):
            return group
    return None


try:
    from xdist.scheduler import LoadFileScheduling
except ImportError:  # pragma: no cover - pytest-xdist is in the test extras
    LoadFileScheduling = None

if LoadFileScheduling is not None:

    class _FilesAndGroups(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            test_file = nodeid.split("::", 1)[0]
            group = serial_group(test_file.removeprefix("tests/"))
            return f"group:{group}" if group else test_file

    def pytest_xdist_make_scheduler(config, log):
        if config.getvalue("dist") == "loadfile":
            return _FilesAndGroups(config, log)
        return None


@pytest.fixture(scope="session")
def many_ops_case(tmp_path_factory):
    """A generated case of ~3,000 original ops with small tensors (4x4 feature maps): graphs of
    10 MB, 39 MB of dumps; for what grows with the number of ops (memory estimates)."""
    from fusion_switch.synth.generator import generate_case

    return generate_case(
        tmp_path_factory.mktemp("many_ops"), n_ops=3000, spatial=4, graph_text=False
    )
