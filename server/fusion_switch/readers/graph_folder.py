"""A folder given where a graph file is expected: pick the graph whose ops match the dump.

GE's graph dump folder holds many ``ge_proto_*.txt`` (one per stage and per graph) and sometimes
the JSON that atc made of them. Only the graphs after Build (``ge_proto_*_Build.txt`` / JSON)
name the ops that were executed and dumped; among them, the one that names the most dumped ops
is the graph of that dump. The choice is always reported. A pick asked to be remembered is
answered again without reading the graphs (the same folder, unchanged, and the same dumped
ops: the ranks of one model under ``--rank all``).
"""

from __future__ import annotations

import os
from pathlib import Path

from .dumpdir import sanitize_op_name
from .graph import Graph, GraphError, file_stamp, hand_on, handed_graph, load_graph

_PICKS: dict[tuple, tuple[Path, str]] = {}  # pick_key(...) -> (file, note)
_PICKS_KEPT = 64


def graph_candidates(folder: str | os.PathLike) -> list[Path]:
    """``ge_proto_*_Build.txt`` and ``*.json`` graphs in ``folder`` (not recursive), sorted."""
    p = Path(folder)
    found = sorted(p.glob("ge_proto_*_Build.txt")) + sorted(
        f for f in p.glob("*.json") if f.name != "fusion_result.json"
    )
    return [f for f in found if f.is_file()]


def pick_graph(
    folder: str | os.PathLike,
    dumped_ops: list[str],
    flag: str = "-f",
    keep: bool = True,
    remember: bool = False,
) -> tuple[Path, str]:
    """(graph file, why) for the graph naming the most of ``dumped_ops``; GraphError when the
    folder holds no readable graph or none names a dumped op. With ``keep`` the picked graph
    is handed on (:func:`.graph.hand_on`): the job's ``load_graph`` of that file in this
    process (or one forked from it) does not read it again. With ``remember`` the pick is
    kept by its :func:`pick_key`, and the same pick again is answered unread (a single run
    asks once: its key would only cost the hashing)."""
    candidates = graph_candidates(folder)
    key = pick_key(folder, candidates, dumped_ops, flag) if remember else None
    known = known_pick(key) if key is not None else None
    if known is not None:
        return known
    if not candidates:
        raise GraphError(
            folder,
            f"{flag}: no ge_proto_*_Build.txt or graph JSON in this folder; give the graph "
            "file, or the folder GE dumped its graphs into (DUMP_GE_GRAPH)",
        )
    wanted = set(dumped_ops)
    scores: list[tuple[int, Path]] = []
    problems: list[str] = []
    best_graph: tuple[int, str, Graph] | None = None  # the one picked below, kept alone
    for path in candidates:
        try:
            graph = handed_graph(path) or load_graph(path)  # -f and -cf: the same folder
        except GraphError as exc:
            problems.append(str(exc))
            continue
        names = {sanitize_op_name(op.name) for g in graph.all_graphs for op in g.ops}
        names |= {op.name for g in graph.all_graphs for op in g.ops}
        score = len(wanted & names)
        scores.append((score, path))
        if best_graph is None or (-score, path.name) < (-best_graph[0], best_graph[1]):
            best_graph = (score, path.name, graph)
        del graph
    if not scores or max(scores)[0] == 0:
        why = f"; {len(problems)} could not be read ({problems[0]})" if problems else ""
        raise GraphError(
            folder,
            f"{flag}: none of the {len(candidates)} graphs here names an op of the dump{why}; "
            "give the graph file of this run",
        )
    scores.sort(key=lambda s: (-s[0], s[1].name))
    best, path = scores[0]
    if keep and best_graph is not None and best_graph[2].path == path:
        hand_on(best_graph[2])
    tie = [p.name for n, p in scores[1:] if n == best]
    why = (
        f"{flag}: picked {path.name} in {folder}: it names {best} of the {len(wanted)} dumped "
        f"ops (of {len(candidates)} graphs)"
    )
    if tie:
        why += f"; as many as {', '.join(tie)} (first by name taken)"
    if problems and best < len(wanted):  # the graph of the other ops may be the unreadable one
        why += f"; {len(problems)} could not be read ({problems[0]})"
    if key is not None:
        remember_pick(key, path, why)
    return path, why


def pick_key(
    folder: str | os.PathLike, candidates: list[Path], dumped_ops: list[str], flag: str
) -> tuple | None:
    """What a pick depends on: the folder, its candidates as they are now (size, time,
    inode), the flag its note names, and the dumped ops (a digest of them: 64 ranks' keys
    would otherwise hold 64 copies of 5,000 names); None when a candidate cannot be stat'ed
    (the pick then reads and reports it)."""
    import hashlib  # not for a single run's pick: ~5 ms of every start

    stamps = []
    for path in candidates:
        stamp = file_stamp(path)
        if stamp is None:
            return None
        stamps.append((path.name, stamp))
    ops = hashlib.blake2b(digest_size=16)
    for name in sorted(set(dumped_ops)):  # length-prefixed: no two lists of names alike
        ops.update(f"{len(name)}:{name}".encode("utf-8", "surrogatepass"))
    return (os.path.realpath(folder), flag, tuple(stamps), ops.digest())


def known_pick(key: tuple) -> tuple[Path, str] | None:
    """A pick made before with the same key (:func:`pick_key`), or None."""
    return _PICKS.get(key)


def remember_pick(key: tuple, path: Path, why: str) -> None:
    """Keep a pick made here or in a helper process for :func:`pick_graph` to answer again."""
    _PICKS[key] = (Path(path), why)
    while len(_PICKS) > _PICKS_KEPT:
        _PICKS.pop(next(iter(_PICKS)))
