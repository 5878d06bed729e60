"""Real VS Code (code-server 4.100, VS Code 1.100) driven by Playwright in Debian's Chromium.

One code-server per module: the built .vsix is installed into a fresh extensions folder, the
server is the project's interpreter (`fusionSwitch.server.pythonPath`), and the workspace is a
copy of a small folder with a `fusion_switch.cfg`. Screenshots of every step go to
`$FUSION_SWITCH_ARTIFACTS/vscode/` (default `~/.cache/fusion-switch/artifacts/vscode/`, outside
the clone), so CI can keep them.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CACHE = Path(os.environ.get("FUSION_SWITCH_CACHE", Path.home() / ".cache" / "fusion-switch"))
ARTIFACTS = Path(os.environ.get("FUSION_SWITCH_ARTIFACTS", CACHE / "artifacts")) / "vscode"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _code_server() -> str:
    """The executable, installed (or found in the cache) by scripts/install_code_server.sh."""
    given = os.environ.get("CODE_SERVER_BIN")
    if given:
        return given
    out = subprocess.run(
        ["bash", str(ROOT / "scripts" / "install_code_server.sh")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return out.strip().splitlines()[-1]


def _vsix() -> Path:
    out = ROOT / "client-config" / "vscode" / "out"
    # the universal .vsix (fusion-switch-<version>.vsix): a platform one built by another test
    # sorts after it and carries the server of the cached wheelhouse (a helper found it)
    found = sorted(out.glob("fusion-switch-[0-9]*.vsix")) if out.is_dir() else []
    if not found or os.environ.get("FUSION_SWITCH_REBUILD_VSIX"):
        subprocess.run(
            ["bash", str(ROOT / "scripts" / "package_vscode.sh")],
            check=True,
            capture_output=True,
            env={**os.environ, "SKIP_NPM_CI": "1"},
        )
        found = sorted(out.glob("fusion-switch-[0-9]*.vsix"))
    return found[-1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env_for(bin_path: str) -> dict[str, str]:
    env = dict(os.environ)
    node_dir = Path(bin_path).parents[2] / "node-bin-dir"  # written when node 20 came from npm
    if node_dir.is_file():
        env["PATH"] = node_dir.read_text().strip() + os.pathsep + env["PATH"]
    return env


class CodeServer:
    def __init__(
        self,
        tmp: Path,
        user_settings: dict,
        python: str | None = sys.executable,
        vsix: Path | None = None,
    ) -> None:
        self.bin = _code_server()
        # its own temporary folder, removed in stop(): every code-server left vscode-git-* and
        # vscode-ipc-*.sock in /tmp (over a hundred of each after a day of CI runs). Short, as the
        # sockets' paths must stay under 108 bytes
        self.temporary = tempfile.mkdtemp(prefix="cs-")
        self.env = {**_env_for(self.bin), "TMPDIR": self.temporary}
        try:
            self._start(tmp, user_settings, python, vsix)
        except BaseException:
            if getattr(self, "proc", None) is not None and self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            if getattr(self, "log", None) is not None:
                self.log.close()
            shutil.rmtree(self.temporary, ignore_errors=True)
            raise

    def _start(self, tmp: Path, user_settings: dict, python: str | None, vsix: Path | None):
        self.data = tmp / "data"
        self.extensions = tmp / "extensions"
        self.workspace = tmp / "workspace"
        user = self.data / "User"
        user.mkdir(parents=True)
        settings = {
            "workbench.startupEditor": "none",
            "security.workspace.trust.enabled": False,
            "telemetry.telemetryLevel": "off",
            "update.mode": "none",
            "extensions.autoCheckUpdates": False,
            "workbench.tips.enabled": False,
            "editor.quickSuggestionsDelay": 10,
            "files.autoSave": "off",
            **({"fusionSwitch.server.pythonPath": python} if python else {}),
            **user_settings,
        }
        (user / "settings.json").write_text(json.dumps(settings, indent=2))
        subprocess.run(
            [
                self.bin,
                "--user-data-dir",
                str(self.data),
                "--extensions-dir",
                str(self.extensions),
                "--install-extension",
                str(vsix or _vsix()),
            ],
            check=True,
            capture_output=True,
            env=self.env,
            timeout=180,
        )
        self.port = _free_port()
        self.log = open(tmp / "code-server.log", "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [
                self.bin,
                "--auth",
                "none",
                "--bind-addr",
                f"127.0.0.1:{self.port}",
                "--user-data-dir",
                str(self.data),
                "--extensions-dir",
                str(self.extensions),
                "--disable-telemetry",
                "--disable-update-check",
                "--disable-workspace-trust",
                "--disable-getting-started-override",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=self.env,
        )
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=2)
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"code-server did not start; see {tmp}/code-server.log"
                    ) from None
                time.sleep(0.5)

    def url(self, folder: Path) -> str:
        return f"http://127.0.0.1:{self.port}/?folder={folder}"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.temporary, ignore_errors=True)


def make_workspace(tmp: Path, files: dict[str, str]) -> Path:
    folder = tmp / "workspace"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder
