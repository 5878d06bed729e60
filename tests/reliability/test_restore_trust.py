"""`restore` never applies a file it did not write (issue 12, "Outputs and trust"), through
the real command line: a version planted in, or changed inside, the history folder next to
the configuration (a cloned repository, another user of a shared folder) is refused and the
configuration is left as it was."""

from __future__ import annotations

import subprocess
import sys

USER_CFG = (
    b'{\n  "Switch": {\n    "GraphFusion": {\n      "ConvBatchnormFusionPass": "on"\n'
    b"    }\n  }\n}\n"
)


def fs(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fusion_switch", *map(str, args)],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_planted_and_changed_versions_are_never_applied(tmp_path):
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_bytes(USER_CFG)
    assert fs("off", cfg, "--all").returncode == 0
    all_off = cfg.read_bytes()
    (history,) = (tmp_path / ".fusion-switch").glob("*.history")
    planted = history / "v0002.before"
    planted.write_bytes(b'{"planted": true}')
    refused = fs("restore", cfg, "--version", "2", "--yes")
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert cfg.read_bytes() == all_off
    (history / "v0001.before").write_bytes(b'{"Switch": {}}')  # changed after we wrote it
    refused = fs("restore", cfg, "--yes")
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert cfg.read_bytes() == all_off
