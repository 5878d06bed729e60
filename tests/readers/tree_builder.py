"""Multi-rank, multi-iteration dump trees built from generated cases (the generator writes one
leaf per side; a real run on N devices over K iterations writes N x K of them)."""

from __future__ import annotations

import shutil
from pathlib import Path


def build_tree(
    root: Path,
    leaves: dict[tuple[int, int], Path],
    model: str,
    model_id: str = "1",
    time: str = "20260101120002",
) -> Path:
    """``root/{time}/{rank}/{model}/{model_id}/{iteration}/`` with a copy of each given leaf."""
    for (rank, iteration), source in leaves.items():
        target = root / time / str(rank) / model / model_id / str(iteration)
        target.mkdir(parents=True)
        for f in source.iterdir():
            shutil.copyfile(f, target / f.name)
    return root
