"""Offline installs (issue 15): the wheelhouse installs with `pip --no-index`, and the libraries a
platform-specific .vsix bundles start the server from an interpreter that has no fusion-switch.

Uses the output of scripts/build_wheelhouse.sh from the cache folder when it is complete; otherwise
builds it, for every platform and Python it covers (about 15 s and 100 MB from the package index):
a build for this machine alone made the every-platform check fail on a fresh machine.
"""

from __future__ import annotations

import asyncio
import os
import platform
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.lsp.client import LanguageClient

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("FUSION_SWITCH_CACHE", Path.home() / ".cache" / "fusion-switch"))
PLATFORM = {"x86_64": "linux-x64", "aarch64": "linux-arm64"}.get(platform.machine(), "")
ABI = f"cp{sys.version_info[0]}{sys.version_info[1]}"
PLATFORMS = ("linux-x64", "linux-arm64")  # scripts/build_wheelhouse.sh's defaults
ABIS = ("cp311", "cp312", "cp313")


@pytest.fixture(scope="module")
def offline() -> Path:
    out = CACHE / "offline"
    bundles = [out / "bundle" / p / "libs" / abi for p in PLATFORMS for abi in ABIS]
    if not all((libs / "fusion_switch").is_dir() for libs in bundles):
        env = {**os.environ, "PYTHON": sys.executable}
        for name in ("FUSION_SWITCH_PLATFORMS", "FUSION_SWITCH_PYTHONS"):
            env.pop(name, None)  # the script's defaults: every platform and Python
        subprocess.run(
            ["bash", str(ROOT / "scripts" / "build_wheelhouse.sh"), str(out)],
            check=True,
            env=env,
            capture_output=True,
        )
    return out


def fresh_venv(path: Path, with_pip: bool) -> Path:
    venv.EnvBuilder(with_pip=with_pip, clear=True).create(path)
    python = path / "bin" / "python"
    probe = subprocess.run([python, "-c", "import fusion_switch"], capture_output=True)
    assert probe.returncode != 0, "the fresh venv must not have fusion-switch"
    return python


def test_our_wheel_in_the_wheelhouse_is_pure_python(offline):
    # one wheel for x86_64 and aarch64 hosts: the C speed-ups are left out (they are optional)
    ours = sorted((offline / "wheelhouse").glob("fusion_switch-*.whl"))
    assert [wheel.name.endswith("-py3-none-any.whl") for wheel in ours] == [True]


def test_wheelhouse_installs_with_no_index(offline, tmp_path):
    python = fresh_venv(tmp_path / "venv", with_pip=True)
    subprocess.run(
        [
            python,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-index",
            "--find-links",
            offline / "wheelhouse",
            "fusion-switch",
        ],
        check=True,
        capture_output=True,
    )
    version = subprocess.run(
        [tmp_path / "venv" / "bin" / "fusion-switch", "--version"],
        check=True,
        capture_output=True,
        text=True,
    )
    assert "0.1.0" in version.stdout + version.stderr


def test_wheelhouse_has_numpy_for_both_platforms_and_every_python(offline):
    names = [p.name for p in (offline / "wheelhouse").glob("numpy-*.whl")]
    for arch in ("x86_64", "aarch64"):
        for abi in ABIS:
            assert any(f"-{abi}-{abi}-" in n and arch in n for n in names), (arch, abi, names)


async def _initialize(python: Path, launcher: Path) -> types.InitializeResult:
    client = LanguageClient("bundle-test", "1")
    client.feature(types.WINDOW_LOG_MESSAGE)(lambda params: None)
    await client.start_io(str(python), str(launcher))
    result = await asyncio.wait_for(
        client.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities())),
        60,
    )
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return result


def test_bundled_libraries_start_the_server_without_an_install(offline, tmp_path):
    python = fresh_venv(tmp_path / "bare", with_pip=False)
    extension = tmp_path / "extension" / "bundled"
    extension.mkdir(parents=True)
    shutil.copy(ROOT / "client-config" / "vscode" / "bundled" / "launch.py", extension)
    (extension / "libs").symlink_to(offline / "bundle" / PLATFORM / "libs")
    check = subprocess.run([python, extension / "launch.py", "--check"], capture_output=True)
    assert check.returncode == 0, check.stderr
    result = asyncio.run(_initialize(python, extension / "launch.py"))
    assert result.server_info.name == "fusion-switch"


def test_an_unsupported_python_gets_a_clear_message(offline, tmp_path):
    extension = tmp_path / "bundled"
    (extension / "libs" / "cp399").mkdir(parents=True)
    shutil.copy(ROOT / "client-config" / "vscode" / "bundled" / "launch.py", extension)
    run = subprocess.run(
        [sys.executable, extension / "launch.py", "--check"], capture_output=True, text=True
    )
    assert run.returncode == 2
    assert f"bundles the server for cp399; {sys.executable} is {ABI}" in run.stderr
