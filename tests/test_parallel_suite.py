"""The suite runs on every core (scripts/test.sh: pytest-xdist, `--dist loadfile`): the files
that share a build folder or the cache must go to one worker as one unit, and a test that
observes the whole machine must run alone (marker ``machine_wide``). A test file added later
that does either without its group or marker would fail only sometimes, beside another."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

TESTS = Path(__file__).parent
# what shares state outside tmp_path: the extension's build (package_vscode.sh), code-server
# and the wheelhouse in the cache
SHARED_BUILD = re.compile(r"package_vscode\.sh|code_server|build_wheelhouse|CODE_SERVER_BIN")
MACHINE_WIDE = re.compile(r"/dev/shm")


def _conftest():
    spec = importlib.util.spec_from_file_location("suite_conftest", TESTS / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _test_files() -> list[Path]:
    here = Path(__file__)
    return sorted(p for p in TESTS.rglob("test_*.py") if "benchmarks" not in p.parts and p != here)


def test_files_sharing_a_build_or_the_cache_are_in_a_serial_group() -> None:
    conftest = _conftest()
    sharing = [p for p in _test_files() if SHARED_BUILD.search(p.read_text(encoding="utf-8"))]
    assert len(sharing) >= 5, sharing  # the VS Code package, bundle and code-server tests
    ungrouped = [
        p for p in sharing if conftest.serial_group(p.relative_to(TESTS).as_posix()) is None
    ]
    assert not ungrouped, f"add them to SERIAL_GROUPS in tests/conftest.py: {ungrouped}"


def test_tests_that_watch_the_machine_are_marked_to_run_alone() -> None:
    watching = [p for p in _test_files() if MACHINE_WIDE.search(p.read_text(encoding="utf-8"))]
    assert watching, "the semaphore test of test_killed_runs.py is one"
    unmarked = [p for p in watching if "pytest.mark.machine_wide" not in p.read_text("utf-8")]
    assert not unmarked, f"mark them @pytest.mark.machine_wide: {unmarked}"


def test_the_scheduler_keeps_a_group_together_and_other_files_apart() -> None:
    conftest = _conftest()
    split = conftest._FilesAndGroups._split_scope
    first = split(None, "tests/clients/test_vscode_package.py::test_a")
    second = split(None, "tests/clients/vscode/test_vscode_real.py::test_b[x]")
    assert first == second == "group:clients"
    assert split(None, "tests/compare/test_dask.py::test_c") == "tests/compare/test_dask.py"
    assert split(None, "tests/lsp/test_x.py::Case::test_d") == "tests/lsp/test_x.py"
