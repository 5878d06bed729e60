"""The platform-specific .vsix (scripts/package_vscode.sh --target) starts its bundled server in
code-server when the configured interpreter has no fusion-switch installed (issue 15).

Builds the wheelhouse for this machine's platform and Python when the cache has none or holds
another server than this checkout's, and the platform .vsix from it (about a minute each).
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import venv

import pytest
from code_server import CACHE, ROOT, CodeServer, make_workspace

PLATFORM = {"x86_64": "linux-x64", "aarch64": "linux-arm64"}[platform.machine()]
ABI = f"cp{sys.version_info[0]}{sys.version_info[1]}"
CFG = (
    '{\n  "Switch": {\n    "GraphFusion": {\n      "ConvBatchnormFusionPas": "off"\n    }\n  }\n}\n'
)


def _sources(package) -> dict[str, bytes]:
    return {
        str(path.relative_to(package)): path.read_bytes()
        for path in sorted(package.rglob("*.py"))
        if "__pycache__" not in path.parts
    }


def _bundle_is_current(bundled) -> bool:
    """The cached bundle's server is this checkout's: the cache outlives the clone, and an old
    bundle made the bundled .vsix run an old server (a helper found it)."""
    ours = ROOT / "server" / "fusion_switch"
    return bundled.is_dir() and _sources(bundled) == _sources(ours)


@pytest.fixture(scope="module")
def platform_vsix():
    offline = CACHE / "offline"
    if not _bundle_is_current(offline / "bundle" / PLATFORM / "libs" / ABI / "fusion_switch"):
        subprocess.run(
            ["bash", str(ROOT / "scripts" / "build_wheelhouse.sh"), str(offline)],
            check=True,
            capture_output=True,
            env={
                **os.environ,
                "FUSION_SWITCH_PLATFORMS": PLATFORM,
                "FUSION_SWITCH_PYTHONS": f"{sys.version_info[0]}.{sys.version_info[1]}",
                "PYTHON": sys.executable,
            },
        )
    subprocess.run(
        ["bash", str(ROOT / "scripts" / "package_vscode.sh"), "--target", PLATFORM],
        check=True,
        capture_output=True,
        env={**os.environ, "SKIP_NPM_CI": "1", "OFFLINE_DIR": str(offline)},
    )
    return next((ROOT / "client-config" / "vscode" / "out").glob(f"fusion-switch-{PLATFORM}-*"))


def test_bundled_server_starts_with_an_interpreter_that_lacks_fusion_switch(
    platform_vsix, tmp_path, browser, artifacts
):
    bare = tmp_path / "bare-venv"
    venv.EnvBuilder(with_pip=False).create(bare)
    python = bare / "bin" / "python"
    assert subprocess.run([python, "-c", "import fusion_switch"], capture_output=True).returncode
    folder = make_workspace(tmp_path, {"fusion_switch.cfg": CFG})
    server = CodeServer(tmp_path, {}, python=str(python), vsix=platform_vsix)
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        page.set_default_timeout(60_000)
        page.goto(server.url(folder))
        page.wait_for_selector(".monaco-workbench", timeout=120_000)
        page.keyboard.press("Control+P")
        page.locator(".quick-input-widget input").fill("fusion_switch.cfg")
        page.locator(".quick-input-list .monaco-list-row").first.wait_for()
        page.keyboard.press("Enter")
        page.locator(".squiggly-warning, .squiggly-error").first.wait_for()
        page.keyboard.press("Control+Shift+M")
        problems = page.locator(".markers-panel")
        problems.locator(".monaco-list-row").first.wait_for()
        page.screenshot(path=str(artifacts / "bundled-01-diagnostics.png"))
        assert "unknown-rule" in problems.inner_text()
    finally:
        page.close()
        server.stop()
