"""Run the replay for a finished comparison (an engine ``CompareOutcome``).

Reads only what the replay needs: the fused ops' fusion-on dumps and the fusion-off dumps of
their original ops (each decoded once), plus the fusion-off graph for the original edges.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from typing import Any

from ..readers.dumpdir import DumpDirError, scan_dump_dir
from ..readers.graph import GraphError
from .evidence import EvidenceStore
from .localise import localise
from .replay import replay_run
from .replay_result import ReplayReport
from .replay_share import ChildShare
from .rules import op_rules


def dump_dirs(outcome: Any) -> tuple[Any, Any]:
    """The folders the comparison indexed (an outcome from elsewhere may carry only paths).
    Raises DumpDirError or OSError."""
    on_dir, off_dir = getattr(outcome, "on_dumps", None), getattr(outcome, "off_dumps", None)
    on_dir = scan_dump_dir(outcome.on_dump_dir) if on_dir is None else on_dir
    off_dir = scan_dump_dir(outcome.off_dump_dir) if off_dir is None else off_dir
    return on_dir, off_dir


def localiser(fusion_result: Mapping[str, Mapping[str, Any]] | None) -> Callable:
    """:func:`.localise.localise` told the rules fusion_result.json puts in UBFusion (a fused
    op of a real graph names its UB pass in pass_name only), for every process that localises."""
    ub_rules = frozenset(
        rule for rule, info in (fusion_result or {}).items() if info.get("section") == "UBFusion"
    )
    return functools.partial(localise, ub_rules=ub_rules)


def replay_outcome(
    outcome: Any,
    fusion_result: Mapping[str, Mapping[str, Any]] | None,
    notes: list[str],
    workers: int | None = None,
    processes: int | None = None,
    share: ChildShare | None = None,
) -> ReplayReport | None:
    """The replay of every fused op of ``outcome``; None (with a note) when it cannot run.
    ``workers``: chunks of the measuring (None: one per core); ``processes``: how many
    processes measure them (None: one per chunk); ``share``: the end may be handed to the
    waiting parent; see :func:`.replay.replay_run`."""
    on_graph, off_graph = getattr(outcome, "on_graph", None), getattr(outcome, "off_graph", None)
    on_path = getattr(outcome, "on_dump_dir", None)
    off_path = getattr(outcome, "off_dump_dir", None)
    if on_graph is None or off_graph is None or on_path is None or off_path is None:
        notes.append("replay skipped: the comparison did not give both graphs and dump folders")
        return None
    try:
        on_dir, off_dir = dump_dirs(outcome)
        store = EvidenceStore(on_dir, off_dir)
        off_ops = off_graph.ops  # a deferred graph is read here
    except (DumpDirError, GraphError, OSError) as error:
        notes.append(f"replay skipped: {error}")
        return None
    del off_ops
    report = replay_run(
        on_graph,
        off_graph,
        store,
        rules_of=lambda op, types: op_rules(op, types, fusion_result),
        localise=localiser(fusion_result),
        workers=workers if workers is not None else (os.cpu_count() or 1),
        store_factory=lambda: EvidenceStore(on_dir, off_dir),
        processes=processes,
        share=share,
    )
    if not report.kernels_available:
        notes.append(
            "replay: no reference kernels are installed (diagnose/kernels): every fused op is "
            "unverified and the row heuristic is shown as a labelled guess"
        )
    return report
