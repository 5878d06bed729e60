"""Evidence gaps a real run has: fusion-off dumps that are missing or unreadable.

- ``producers``: the fusion-off dumps of the original ops that feed each faulty fused op, and
  of every Cast op (users dump subsets; inputs often arrive behind Cast/TransData), are missing;
- ``random``: a seeded random 30% of the fusion-off dump files are missing;
- ``truncated``: the fusion-on dump of the first faulty fused op is cut in the middle of its
  tensor bytes (a verdict needs it: the run must say evidence is missing, never "clean").
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..readers.dumpdir import sanitize_op_name
from .executed import ExecOp
from .network import split_ref

GAP_KINDS = ("none", "producers", "random", "truncated")


def _files_of(folder: Path, op_name: str) -> list[Path]:
    stem = sanitize_op_name(op_name)
    return [p for p in folder.iterdir() if p.name.split(".")[1:2] == [stem]]


def apply_gaps(
    kind: str,
    off_leaf: Path,
    on_leaf: Path,
    off_ops: list[ExecOp],
    faulty: list[tuple[object, ExecOp]],
    seed: int,
) -> list[str]:
    """Remove or damage dump files; returns what was done (for the truth file)."""
    if kind not in GAP_KINDS:
        raise ValueError(f"unknown evidence gap {kind!r}; known: {', '.join(GAP_KINDS)}")
    done: list[str] = []
    if kind == "producers":
        names = {op.name for op in off_ops if op.type == "Cast"}
        for _, op in faulty:
            names.update(split_ref(ref)[0] for ref in _original_inputs(op, off_ops))
        for name in sorted(names):
            for path in _files_of(off_leaf, name):
                path.unlink()
                done.append(f"removed fusion-off dump of {name}")
    elif kind == "random":
        rng = np.random.default_rng(seed + 7)
        files = sorted(off_leaf.iterdir())
        for path in files:
            if rng.random() < 0.3:
                path.unlink()
                done.append(f"removed {path.name}")
    elif kind == "truncated" and faulty:
        op = faulty[0][1]
        for path in _files_of(on_leaf, op.name):
            data = path.read_bytes()
            path.write_bytes(data[: max(16, len(data) - len(data) // 3)])
            done.append(f"truncated fusion-on dump of {op.name}")
    return done


def _original_inputs(op: ExecOp, off_ops: list[ExecOp]) -> list[str]:
    """References the original ops of ``op`` read from outside it (its producers)."""
    members = set(op.original_names or [op.name])
    refs = []
    for off in off_ops:
        if off.name in members:
            refs += [r for r in off.inputs if split_ref(r)[0] not in members]
    return refs
