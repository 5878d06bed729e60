"""The real, public sample files under tests/data/real (a byte copy of samples/real) and the facts
their expectations.json records."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

REAL = Path(__file__).resolve().parents[1] / "data" / "real"
# the team workspace keeps the originals in shared/samples/real next to the checkout
SHARED = next(
    (
        folder / "shared" / "samples" / "real"
        for folder in Path(__file__).resolve().parents[2:5]
        if (folder / "shared" / "samples" / "real").is_dir()
    ),
    Path("/nonexistent/shared/samples/real"),
)


@cache
def expectations() -> dict[str, dict]:
    return json.loads((REAL / "expectations.json").read_text(encoding="utf-8"))["files"]


def files_under(folder: str) -> list[str]:
    """Every expectations.json entry under ``folder`` (relative names, sorted)."""
    return sorted(name for name in expectations() if name.startswith(folder + "/"))


def graph_files() -> list[Path]:
    """Every graph file of the real samples and of tests/data/graphs that is a graph (ONNX
    text, Caffe or an empty file are refused before any op is read)."""
    from fusion_switch.readers.graph_kind import sniff_graph

    data = REAL.parent
    found = sorted((data / "real" / "graphs").glob("*")) + sorted((data / "graphs").glob("*"))
    return [path for path in found if sniff_graph(path).is_graph]
