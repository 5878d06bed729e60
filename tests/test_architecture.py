"""The invariants ARCHITECTURE.md states, checked on the code itself."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "server" / "fusion_switch"
PURE_PACKAGES = ("catalogue", "cfg", "compare", "workflow")
PROTOCOL_MODULES = ("pygls", "lsprotocol", "cattrs")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", PURE_PACKAGES)
def test_pure_packages_never_import_the_protocol(package):
    offenders = {
        str(path.relative_to(PACKAGE)): sorted(imported_modules(path) & set(PROTOCOL_MODULES))
        for path in (PACKAGE / package).rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_pure_layers_load_without_pygls_at_run_time():
    code = (
        "import sys, fusion_switch.cfg, fusion_switch.compare.engine, "
        "fusion_switch.compare.attribution, fusion_switch.workflow.annotate, "
        "fusion_switch.workflow.job\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pygls', 'lsprotocol')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_only_lsp_imports_the_protocol():
    users = {
        str(path.relative_to(PACKAGE)).split("/")[0]
        for path in PACKAGE.rglob("*.py")
        if imported_modules(path) & {"pygls", "lsprotocol"}
    }
    assert users <= {"lsp"}, users
