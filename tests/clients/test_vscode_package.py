"""The VS Code extension as CI builds it: `scripts/package_vscode.sh`, then its node tests.

The node tests start the real server and compare its commands and settings with package.json
(test/consistency.test.mjs), activate the packaged bundle against a stand-in `vscode` module and
the real server (test/activation.test.mjs; VS Code itself cannot be downloaded here), and unit-test
the extension's pure parts (test/unit.test.mjs). Skipped only when npm/node are not installed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = ROOT / "client-config" / "vscode"
SCHEMA = ROOT / "schemas" / "fusion_switch.schema.json"

pytestmark = pytest.mark.skipif(
    shutil.which("npm") is None or shutil.which("node") is None,
    reason="npm/node not installed (Node.js >= 20 with npm is needed to package the extension)",
)


@pytest.fixture(scope="module")
def vsix() -> Path:
    """Runs the packaging script once for this module and returns the .vsix it made."""
    result = subprocess.run(
        ["bash", str(ROOT / "scripts" / "package_vscode.sh")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, f"package_vscode.sh failed:\n{result.stdout}\n{result.stderr}"
    version = json.loads((EXTENSION / "package.json").read_text())["version"]
    path = EXTENSION / "out" / f"fusion-switch-{version}.vsix"
    assert path.is_file()
    assert f"package_vscode: OK out/fusion-switch-{version}.vsix" in result.stdout
    return path


def test_vsix_holds_bundle_manifest_language_files_and_the_generated_schema(vsix: Path) -> None:
    with zipfile.ZipFile(vsix) as archive:
        names = set(archive.namelist())
        manifest = json.loads(archive.read("extension/package.json"))
        schema = archive.read("extension/schemas/fusion_switch.schema.json")
        bundle = archive.read("extension/dist/extension.js").decode()
    assert {
        "extension/package.json",
        "extension/dist/extension.js",
        "extension/language-configuration.json",
        "extension/syntaxes/fusion-switch.tmLanguage.json",
        "extension/schemas/fusion_switch.schema.json",
        "extension/readme.md",
    } <= names
    assert not [n for n in names if n.startswith(("extension/node_modules/", "extension/src/"))]
    assert not [n for n in names if n.startswith("extension/test/") or n.endswith(".map")]
    assert schema == SCHEMA.read_bytes()
    assert manifest["main"] == "./dist/extension.js"
    assert manifest["contributes"]["jsonValidation"][0]["url"] == (
        "./schemas/fusion_switch.schema.json"
    )
    # vscode-languageclient is bundled; only the `vscode` module stays external.
    assert "vscode-languageclient" not in json.dumps(manifest.get("dependencies", {}))
    assert 'require("vscode")' in bundle
    assert "fusionSwitch/status" in bundle


def _node_test(file: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FUSION_SWITCH_PYTHON": sys.executable}
    return subprocess.run(
        ["node", "--test", "--test-reporter=spec", file],
        cwd=EXTENSION,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_extension_unit_tests(vsix: Path) -> None:
    result = _node_test("test/unit.test.mjs")
    assert result.returncode == 0, result.stdout + result.stderr


def test_bundle_activates_against_the_real_server(vsix: Path) -> None:
    """dist/extension.js with a stand-in `vscode`: starts the server, gets its diagnostics."""
    result = _node_test("test/activation.test.mjs")
    assert result.returncode == 0, result.stdout + result.stderr


def test_package_json_agrees_with_the_server(vsix: Path) -> None:
    result = _node_test("test/consistency.test.mjs")
    assert result.returncode == 0, result.stdout + result.stderr
