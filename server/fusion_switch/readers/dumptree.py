"""Dump trees: every leaf folder below a dump path, with where it sits in CANN's layout.

CANN writes ``{dump_path}/{time}/{device_id}/{model_name}/{model_id}/{iteration}/``; a run on
several devices (ranks) or over several iterations leaves several leaves, and a comparison must
say which one it uses (:func:`select_leaves` refuses to guess). MindSpore's statistics dumps
use ``rank_{id}/{net}/{graph_id}/{iteration}/statistic.csv``. A leaf holds tensor dump files,
a statistics CSV, or exception dumps (:mod:`.exception_dump`); ``kind`` says which.

A rank is the device id (or MindSpore's rank id) with the folders above the time folder (or
the ``rank_N`` folder) that tell the tree's ranks apart: a device id is per server, so a job
on two servers, copied into ``node0/`` and ``node1/``, has ranks ``node0/0`` and ``node1/0``
(``rank_key``). Folders every rank of the tree shares (``dump/``) are left out of it.

A step folder right above the time folder is a training step, not part of a rank: MindSpore's
Ascend O2 dump writes ``{path}/{step_id}/{time}/{device_id}/{model}/{model_id}/{iteration}/``,
msprobe's kernel dump ``{dump_path}/step{N}/{time}/{device_id}/`` with the files in the device
folder (``step``; :func:`select_leaves` never mixes two).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

from .dumpdir import MAPPING_FILE, parse_dump_name
from .exception_name import is_exception_dump_name
from .stats import STATS_FILE, is_stats_file

MAX_DEPTH = 8
_TIME_DIR = re.compile(r"^\d{14}$")
_RANK_DIR = re.compile(r"^rank_?(\d+)$")
_STEP_DIR = re.compile(r"^(?:step)?(\d+)$")  # MindSpore O2: {step_id}; msprobe: step{N}
KINDS = ("tensor", "stats", "exception")


class DumpTreeError(ValueError):
    """No dump files, or a choice the user must make; the message says what to pass."""


class NoDumpsError(DumpTreeError):
    """The folder does not exist or holds no dump files at all."""


@dataclass(frozen=True)
class DumpLeaf:
    """One leaf folder. Fields the path does not tell are None."""

    timestamp: str | None
    rank: int | None
    model: str | None
    model_id: str | None
    iteration: str | None
    path: Path
    n_files: int
    kind: str  # "tensor" | "stats" | "exception"
    # the folders between the tree's root and the time (or rank_N) folder that tell its ranks
    # apart, "/"-joined ("node0"); "" when there are none
    prefix: str = ""
    step: str | None = None  # the step folder above the time folder ("0" for step0/ or 0/)

    @property
    def rank_key(self) -> str | None:
        """The rank as ``--rank`` names it: ``0``, or ``node0/0`` under a prefix."""
        if self.rank is None:
            return None
        return f"{self.prefix}/{self.rank}" if self.prefix else str(self.rank)

    @cached_property
    def n_bytes(self) -> int:
        """Bytes in the leaf's files of its kind, counted on first use: only ``dumps`` shows
        it, and a stat per file is a syscall per dump (a round trip each on NFS)."""
        found = _leaf_of(self.path, kind=self.kind)
        return found[2] if found is not None else 0

    @property
    def label(self) -> str:
        parts = [
            f"step {self.step}" if self.step is not None else "",
            f"time {self.timestamp}" if self.timestamp else "",
            f"rank {self.rank_key}" if self.rank is not None else "",
            f"model {self.model}" if self.model else "",
            f"model id {self.model_id}" if self.model_id is not None else "",
            f"iteration {self.iteration}" if self.iteration is not None else "",
        ]
        return ", ".join(p for p in parts if p) or str(self.path)


@dataclass
class DumpTree:
    root: Path
    leaves: list[DumpLeaf] = field(default_factory=list)

    def values(self, attr: str, leaves: Iterable[DumpLeaf] | None = None) -> list:
        seen = {getattr(leaf, attr) for leaf in (self.leaves if leaves is None else leaves)}
        return sorted((v for v in seen if v is not None), key=_natural)

    @property
    def ranks(self) -> list[int]:
        """The device ids (rank ids), whatever folder they are under."""
        return self.values("rank")

    @property
    def rank_keys(self) -> list[str]:
        """The ranks as ``--rank`` names them (see ``DumpLeaf.rank_key``)."""
        return self.values("rank_key")

    @property
    def iterations(self) -> list[str]:
        return self.values("iteration")

    @property
    def steps(self) -> list[str]:
        return self.values("step")

    @property
    def kinds(self) -> list[str]:
        return [k for k in KINDS if any(leaf.kind == k for leaf in self.leaves)]


def natural_key(value) -> tuple:
    """Numbers in numeric order, each ``/``-separated part on its own (``node2/0`` before
    ``node10/0``)."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in str(value).split("/"))


_natural = natural_key


# CANN's usual tensor dump name, {op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}:
# parse_dump_name accepts every such name, and with five fields it is no exception dump
# (those have four or six). Issue 16: the dump tree is walked before anything else, and this
# answers for nearly every file without the three patterns and the DumpName the full check
# goes through (a 5,000-op case: 8,000 names, ~0.1 s).
_USUAL_TENSOR_NAME = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[0-9]+\.[0-9]+\.[0-9]+")


def classify_file(name: str) -> str | None:
    """ "tensor", "exception", "stats" (by name only; a .csv is checked by header) or None."""
    if _USUAL_TENSOR_NAME.fullmatch(name):
        return "tensor"
    if name == MAPPING_FILE:
        return "tensor"
    if is_exception_dump_name(name):
        return "exception"
    if name.lower().endswith(".csv"):
        return "stats?"
    if not isinstance(parse_dump_name(name), str):
        return "tensor"
    return None


def _passing(entries: list[os.DirEntry], test: str) -> list[os.DirEntry]:
    """The entries for which ``test`` (``"is_file"``, ``"is_dir"``) holds, one by one: for a
    listing where that test raised (a file system without d_type, a stat that failed), which
    leaves out only the entries whose stat fails."""
    passing = []
    for entry in entries:
        with contextlib.suppress(OSError):
            if getattr(entry, test)():
                passing.append(entry)
    return passing


def _leaf_of(
    folder: Path, kind: str | None = None, entries: list[os.DirEntry] | None = None
) -> tuple[str, int, int] | None:
    """(kind, files, bytes) when ``folder`` holds dump files of its own. Bytes are counted only
    for the files of ``kind`` when it is given (0 otherwise: no stat per file). ``entries``:
    the folder's listing, when the caller has it."""
    counts = dict.fromkeys(KINDS, 0)
    sizes = dict.fromkeys(KINDS, 0)
    if entries is None:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            return None
    try:
        files = [entry for entry in entries if entry.is_file()]
    except OSError:
        files = _passing(entries, "is_file")
    if kind is None:  # the usual tensor names counted in one C-level filter, not one by one
        by_name = {entry.name: entry for entry in files}
        rest = list(itertools.filterfalse(_USUAL_TENSOR_NAME.fullmatch, by_name))
        counts["tensor"] = len(by_name) - len(rest)
        files = [by_name[name] for name in rest]
    for entry in files:
        try:
            found = classify_file(entry.name)
            if found == "stats?":
                found = "stats" if is_stats_file(entry.path) else None
            if found is None:
                continue
            counts[found] += 1
            if found == kind:
                sizes[found] += entry.stat().st_size
        except OSError:
            continue
    best = max(KINDS, key=lambda k: counts[k])
    if not counts[best]:
        return None
    return best, counts[best], sizes[best]


def _place(root: Path, leaf: Path) -> dict:
    """timestamp/rank/model/model_id/iteration/prefix from the leaf's path (None where
    unknown). The folders above the root are read where they really are (a root given as a
    link to a leaf still has its time and rank); those below it by the names the tree shows: a
    rank folder linked to another place was read by its target's name, so ``2 -> .../5`` was
    compared as rank 5 and ``2 -> .../device_two`` not at all (a review, issue 16). The prefix
    is read below the root only: where the user points is theirs to choose."""
    top = root.resolve().parts
    parts = [*top, *leaf.relative_to(root).parts]
    root_depth = len(top)
    out: dict = dict.fromkeys(("timestamp", "rank", "model", "model_id", "iteration", "step"))
    below = parts[root_depth:]
    # MindSpore: .../rank_{id}/{net}/{graph_id}/{iteration}
    at = len(parts) - 4
    m = _RANK_DIR.match(parts[at]) if at >= 0 else None
    if m:
        out.update(rank=int(m.group(1)), model=parts[at + 1])
        out.update(model_id=parts[at + 2], iteration=parts[at + 3])
        out["prefix"] = "/".join(parts[root_depth:at])
        return out
    # CANN: .../{time}/{device_id}/{model}/{model_id}/{iteration}, read from the leaf upward
    at = len(parts) - 5
    if at >= 0 and _TIME_DIR.match(parts[at]):
        out.update(timestamp=parts[at], rank=_int(parts[at + 1]))
        out.update(model=parts[at + 2], model_id=parts[at + 3])
        out.update(iteration=parts[at + 4])
        out.update(_above_time(parts, at, root_depth))
        return out
    # msprobe's kernel dump: .../{time}/{device_id}/ holds the files (a review: its device ids
    # were read as iterations)
    at = len(parts) - 2
    if at >= 0 and _TIME_DIR.match(parts[at]) and parts[-1].isdigit():
        out.update(timestamp=parts[at], rank=int(parts[-1]))
        out.update(_above_time(parts, at, root_depth))
        return out
    # no time folder: name only what the folders below the root say, digits where digits go
    names = ["iteration", "model_id", "model", "rank"]
    for name, part in zip(names, reversed(below), strict=False):
        if name == "model":
            out[name] = part
        elif part.isdigit():
            out[name] = int(part) if name == "rank" else part
        else:
            break
    if out["rank"] is not None:
        out["prefix"] = "/".join(below[:-4])
    return out


def _above_time(parts: list[str], at: int, root_depth: int) -> dict:
    """The prefix and step of a leaf whose time folder is ``parts[at]``: the folders below the
    root above it, the one right above it a step when named like one (``0``, ``step0``)."""
    above = parts[root_depth:at] if at > root_depth else []
    step = _STEP_DIR.match(above[-1]) if above else None
    if step:
        return {"prefix": "/".join(above[:-1]), "step": step.group(1)}
    return {"prefix": "/".join(above)}


def _int(text: str) -> int | None:
    return int(text) if text.isdigit() else None


def scan_dump_tree(path: str | os.PathLike) -> DumpTree:
    """Every leaf below ``path`` (``path`` itself when it holds the files). DumpTreeError when
    there is none, naming the folder and what was expected."""
    root = Path(path)
    if not root.is_dir():
        what = "does not exist" if not root.exists() else "is a file, not a folder"
        raise NoDumpsError(f"{root}: {what}; give the dump folder (or a folder above it)")
    tree = DumpTree(root=root)
    stack = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            entries: list[os.DirEntry] | None = list(os.scandir(folder))  # listed once for both
        except OSError:
            entries = None
        found = _leaf_of(folder, entries=entries) if entries is not None else None
        if found is not None:
            kind, n_files, _ = found
            tree.leaves.append(
                DumpLeaf(path=folder, n_files=n_files, kind=kind, **_place(root, folder))
            )
        if depth < MAX_DEPTH and entries is not None:
            try:
                folders = [e for e in entries if e.is_dir()]
            except OSError:
                folders = _passing(entries, "is_dir")
            subs = [Path(e.path) for e in folders if e.name[:1] != "."]
            stack.extend((s, depth + 1) for s in sorted(subs, reverse=True))
    if not tree.leaves:
        raise NoDumpsError(
            f"{root}: no dump files here or in the {MAX_DEPTH} folder levels below (expected "
            f"tensor dumps like Conv2D.conv1.3.1700000000000000, {STATS_FILE}, or "
            "exception_info.* files)"
        )
    tree.leaves = _distinguishing_prefixes(tree.leaves)
    tree.leaves.sort(key=lambda leaf: leaf.path.parts)
    return tree


def _distinguishing_prefixes(leaves: list[DumpLeaf]) -> list[DumpLeaf]:
    """The leaves with the folders every ranked leaf's prefix starts with left out: a tree
    whose dumps all sit under ``dump/`` has rank ``0``, as one whose dumps sit at its root, and
    the other run's tree need not be laid out alike."""
    prefixes = [leaf.prefix.split("/") for leaf in leaves if leaf.rank is not None and leaf.prefix]
    if len(prefixes) < sum(leaf.rank is not None for leaf in leaves) or not prefixes:
        return leaves  # a ranked leaf without a prefix: none is shared by all
    shared = 0
    for names in zip(*prefixes, strict=False):
        if len(set(names)) > 1:
            break
        shared += 1
    if not shared:
        return leaves
    return [
        replace(leaf, prefix="/".join(leaf.prefix.split("/")[shared:]))
        if leaf.rank is not None
        else leaf
        for leaf in leaves
    ]


def _fmt(values: list) -> str:
    return ", ".join(str(v) for v in values)


def select_leaves(
    tree: DumpTree,
    rank: str | int | None = None,
    iteration: str | None = None,
    flag: str = "",
    step: str | None = None,
) -> list[DumpLeaf]:
    """The leaves to compare for ``step``/``rank``/``iteration`` ("all" for every rank or
    iteration). When the tree holds several steps, ranks or iterations and none is given,
    DumpTreeError lists them and names the flags to pass: never a silent pick. ``rank`` is a
    rank key (``node0/0``), or a device id that only one rank of the tree has."""
    leaves = list(tree.leaves)
    where = f"{flag} {tree.root}" if flag else str(tree.root)
    steps = tree.values("step", leaves)
    if step is not None:
        wanted = step_number(step)
        leaves = [leaf for leaf in leaves if leaf.step == wanted]
        if not leaves:
            found = _fmt(steps) if steps else "none (no step folder above a time folder)"
            raise DumpTreeError(f"{where}: no step {wanted} here; steps found: {found}")
    elif len(steps) > 1:
        raise DumpTreeError(
            f"{where}: holds {len(steps)} steps ({_fmt(steps)}: the step folders above the time "
            "folders); pass --step S to compare one of them, the same step on both sides "
            "(weights and inputs differ from one training step to the next)"
        )
    ranks = tree.values("rank_key", leaves)
    if rank is not None and str(rank) != "all":
        leaves = leaves_of_rank(leaves, str(rank), where)
    elif rank is None and len(ranks) > 1:
        raise DumpTreeError(
            f"{where}: holds {len(ranks)} ranks ({_ranks_text(ranks)}); pass --rank R to "
            "compare one of them, or --rank all to compare each rank with the same rank"
        )
    iterations = tree.values("iteration", leaves)
    if iteration is not None and str(iteration) != "all":
        leaves = [leaf for leaf in leaves if str(leaf.iteration) == str(iteration)]
        if not leaves:
            raise DumpTreeError(
                f"{where}: no iteration {iteration} here; iterations found: "
                f"{_fmt(iterations) or 'none'}"
            )
    elif iteration is None and len(iterations) > 1:
        raise DumpTreeError(
            f"{where}: holds {len(iterations)} iterations ({_fmt(iterations)}); pass "
            "--iteration I to compare one of them (statistics dumps: --iteration all for every one)"
        )
    return leaves


def _ranks_text(ranks: list[str]) -> str:
    if all(r.isdigit() for r in ranks):
        return f"device ids {_fmt(ranks)}"
    return f"{_fmt(ranks)}: the folders above the time folder, then the device id"


def leaves_of_rank(leaves: list[DumpLeaf], rank: str, where: str) -> list[DumpLeaf]:
    """The leaves of ``rank``: its rank key, or a device id one rank alone has. DumpTreeError
    when none has it, or when the device id is that of several ranks (two servers' device 0:
    never one of them by a guess)."""
    exact = [leaf for leaf in leaves if leaf.rank_key == rank]
    if exact:
        return exact
    by_id = [leaf for leaf in leaves if str(leaf.rank) == rank]
    keys = DumpTree(Path(), by_id).values("rank_key")
    if len(keys) > 1:
        raise DumpTreeError(
            f"{where}: device id {rank} is that of {len(keys)} ranks ({_fmt(keys)}: one per "
            f"server or folder); pass --rank with the one to compare, e.g. --rank {keys[0]}"
        )
    if not by_id:
        found = DumpTree(Path(), leaves).values("rank_key")
        raise DumpTreeError(f"{where}: no rank {rank} here; ranks found: {_fmt(found) or 'none'}")
    return by_id


def step_number(step: str | int) -> str:
    """``--step``'s value as leaves hold it: ``3`` for ``3`` or ``step3``."""
    text = str(step)
    found = _STEP_DIR.match(text)
    return found.group(1) if found else text
