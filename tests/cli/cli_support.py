"""Running `fusion-switch` as a subprocess in the CLI tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

GRAPH_RULE = "AAMatMulNzToNdFusionPass"  # GraphFusion, can be switched off
UB_RULE = "AddLayerNormV3FusionPass"  # UBFusion, can be switched off
FORBIDDEN = "AABiasaddConvFusion"  # on CANN's forbidden-close list

# the user's own layout: 3-space indent, CRLF, a key order that is not sorted, extra spaces
USER_CFG = (
    b'{\r\n   "Switch" : {\r\n      "UBFusion" : {\r\n         "ALL" : "on"\r\n      },\r\n'
    b'      "GraphFusion" : {\r\n         "ZetaRule" : "on",\r\n'
    b'         "AlphaRule" : "off"\r\n      }\r\n   }\r\n}\r\n'
)


def fs(
    *args: str | Path, stdin: str | None = None, env: dict | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fusion_switch", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        input=stdin,
        env=None if env is None else {**os.environ, **env},
    )


def user_cfg(tmp_path: Path, content: bytes = USER_CFG) -> Path:
    path = tmp_path / "fusion_switch.cfg"
    path.write_bytes(content)
    return path
