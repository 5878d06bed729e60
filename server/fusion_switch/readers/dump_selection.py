"""Which leaf folders a comparison uses, on each side, for the ranks and iteration asked for.

A tree with several ranks or iterations is never reduced silently: without
``--rank``/``--iteration`` the choice is refused with the list of what is there. Leaves of the
kind compared (tensor or statistics dumps) are taken before anything else: a statistics dump
beside a tensor dump is left out, and said. Several models are matched to the graph's name.

CANN writes one time folder per process start, so one rank's dumps in several time folders are
a re-run into the same dump path, or different processes with the same device id (two
servers' device 0 copied into one folder): which one pairs with the other run's is not known.
Under ``--rank all`` such a rank is not compared (the list of time folders and how to pick one
say why); a single comparison takes the newest, as documented for a re-run, and says so. A rank
that cannot be compared (that, or no model folder named like the graph) is reported alone: the
others are compared.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .dumptree import (
    DumpLeaf,
    DumpTree,
    DumpTreeError,
    natural_key,
    scan_dump_tree,
    select_leaves,
    step_number,
)

UNUSABLE = 2  # a rank's input cannot be compared as it is: the user must choose (exit 2)
MISSING = 3  # a rank has no dump to compare on a side: evidence missing (exit 3)
_KIND_NAMES = {"tensor": "tensor", "stats": "statistics", "exception": "exception"}


@dataclass
class LeafPair:
    label: str  # "rank 0", "rank node0/0", or "" when the trees have no ranks to tell apart
    rank: str | None  # the rank key (``DumpLeaf.rank_key``)
    on: list[DumpLeaf]
    off: list[DumpLeaf]

    @property
    def folder(self) -> str:
        """Its results' folder below ``-out`` under ``--rank all``: ``rank_0``,
        ``node0/rank_0``."""
        return rank_folder(str(self.rank))


def rank_folder(rank: str) -> str:
    *prefix, device = rank.split("/")
    return "/".join([*prefix, f"rank_{device}"])


@dataclass(frozen=True)
class NotCompared:
    """A rank (or a dump folder outside any rank) ``--rank all`` does not compare, and why:
    ``status`` 3 when a side has nothing to compare, 2 when what is there cannot be compared
    without the user's choice."""

    rank: str
    why: str
    status: int = MISSING


class RankRefused(DumpTreeError):
    """One rank's leaves cannot be reduced to one per side without a guess."""


@dataclass
class Selection:
    kind: str  # "tensor" | "stats"
    pairs: list[LeafPair]
    notes: list[str] = field(default_factory=list)
    trees: tuple[DumpTree, ...] = ()  # (fusion-on, fusion-off) as scanned
    # --rank all: the ranks (and dump folders outside any rank folder) not compared, and why;
    # the run reports each of them (``notes`` are about the ranks compared)
    unpaired: list[NotCompared] = field(default_factory=list)


def _one(
    leaves: list[DumpLeaf], flag: str, root, graph_name, notes: list[str], every_rank: bool
) -> DumpLeaf:
    """Reduce one side's leaves for one rank to a single leaf (tensor dumps). ``graph_name``:
    the graph's name, or a function giving it (read only when several models need it).
    RankRefused when that needs a guess: several models none named like the graph, several
    process starts under ``--rank all`` (``every_rank``), several model ids."""
    if len(leaves) == 1:
        return leaves[0]
    models = {leaf.model for leaf in leaves}
    if len(models) > 1:
        if callable(graph_name):
            graph_name = graph_name()
        if graph_name and graph_name in models:
            leaves = [leaf for leaf in leaves if leaf.model == graph_name]
            notes.append(f"{flag}: model folder {graph_name!r} matches the graph name")
        else:
            names = ", ".join(sorted(map(str, models)))
            raise RankRefused(
                f"{flag} {root}: {_of_rank(leaves)}{len(models)} models ({names}) and none is "
                "named like the graph; give the leaf folder of the model to compare"
            )
    times = sorted({leaf.timestamp or "" for leaf in leaves})
    if len(times) > 1:
        newest = times[-1]
        starts = f"{len(times)} process starts (time folders {', '.join(times)})"
        rank = leaves[0].rank_key
        if every_rank:
            at = _time_folder(next(x for x in leaves if (x.timestamp or "") == newest))
            raise RankRefused(
                f"{flag} {root}: rank {rank} has dumps of {starts}: CANN writes a time folder "
                "per process start, so these are re-runs or different processes with the same "
                "device id (two servers' device 0), and which one pairs with the other run's "
                f"is not known; point {flag} at the time folder to compare (e.g. {flag} {at}), "
                "or move the others out of the tree"
            )
        leaves = [leaf for leaf in leaves if (leaf.timestamp or "") == newest]
        notes.append(
            f"{flag}: rank {rank} has dumps of {starts}: the newest, {newest}, is compared (a "
            f"re-run into the same dump path); if they are different processes (two servers' "
            f"device 0), point {flag} at the time folder to compare"
        )
    ids = sorted({str(leaf.model_id) for leaf in leaves})
    if len(leaves) > 1:
        raise RankRefused(
            f"{flag} {root}: {len(leaves)} dump folders remain for {leaves[0].label} "
            f"(model ids {', '.join(ids)}); give the leaf folder to compare"
        )
    return leaves[0]


def _of_rank(leaves: list[DumpLeaf]) -> str:
    rank = leaves[0].rank_key
    return f"rank {rank} holds " if rank is not None else "holds "


def _time_folder(leaf: DumpLeaf) -> Path:
    """The time folder ``leaf`` is in (the leaf itself when none is named like its time)."""
    path = Path(os.path.abspath(leaf.path))
    return next((f for f in (path, *path.parents) if f.name == leaf.timestamp), leaf.path)


def _missing(rank: str, side: str, root, tree: DumpTree, kind: str, iteration, step) -> str:
    """Why ``rank``, in both trees, has no leaf chosen under ``side``."""
    leaves = DumpTree(tree.root, [leaf for leaf in tree.leaves if leaf.rank_key == rank])
    if not leaves.leaves:
        return f"rank {rank} has no {_KIND_NAMES[kind]} dumps under {side} {root}"
    asked, found = [], []
    if step is not None:
        asked.append(f"step {step_number(step)}")
        found.append(f"steps there: {', '.join(leaves.steps) or 'none'}")
    if iteration is not None:
        asked.append(f"iteration {iteration}")
        found.append(f"iterations there: {', '.join(leaves.iterations) or 'none'}")
    return (
        f"rank {rank} has no dump at {' and '.join(asked) or 'what was asked'} under {side} "
        f"{root} ({'; '.join(found)})"
    )


def _same_step(on: list[str], off: list[str], notes: list[str]) -> None:
    """One step each side (several are refused unless --step names one): the same, or
    DumpTreeError. A step is a training step: its weights and inputs are another step's, and
    the fusion comparison of two steps blames fusion for training (a review: fusion-on step 1
    was compared with fusion-off step 5, and a rule "proven")."""
    if on and off and on != off:
        raise DumpTreeError(
            f"-m holds step {', '.join(on)} and -g step {', '.join(off)} (the step folders above "
            "the time folders): weights and inputs differ from one training step to the next; "
            "dump both runs at the same step, or pass --step S for a step both hold (to compare "
            "these anyway, point -m and -g at the step folders themselves)"
        )
    if bool(on) != bool(off):
        side, steps, other = ("-m", on, "-g") if on else ("-g", off, "-m")
        notes.append(
            f"{side} holds step {', '.join(steps)} and {other} no step folder: make sure {other} "
            "was dumped at the same step"
        )


def _of_kind(tree: DumpTree, kind: str, flag: str, notes: list[str]) -> DumpTree:
    """``tree`` with only its leaves of ``kind``: a statistics dump beside a tensor dump is
    another dump of the run, never the one compared because it is newer (a review: it was),
    and said."""
    others = [leaf for leaf in tree.leaves if leaf.kind != kind]
    if not others:
        return tree
    counts: dict[str, int] = {}
    for leaf in others:
        counts[leaf.kind] = counts.get(leaf.kind, 0) + 1
    what = ", ".join(f"{n} {_KIND_NAMES.get(k, k)}" for k, n in counts.items())
    notes.append(
        f"{flag}: {what} dump folder(s) left out: {_KIND_NAMES[kind]} dumps are compared (point "
        f"{flag} at the others to compare them alone)"
    )
    return DumpTree(tree.root, [leaf for leaf in tree.leaves if leaf.kind == kind])


def select_pairs(
    on_path, off_path, rank=None, iteration=None, graph_names=(None, None), step=None
) -> Selection:
    """The leaf pairs to compare. DumpTreeError (exit 2 in the CLI) says what to pass."""
    on_tree, off_tree = scan_dump_tree(on_path), scan_dump_tree(off_path)
    kinds = {_kind(on_tree, "-m"), _kind(off_tree, "-g")}
    if len(kinds) > 1:
        raise DumpTreeError(
            f"-m {on_path} holds {_kind(on_tree, '-m')} dumps and -g {off_path} holds "
            f"{_kind(off_tree, '-g')} dumps; compare tensor dumps with tensor dumps, statistics "
            "with statistics"
        )
    kind = kinds.pop()
    notes: list[str] = []
    every_rank = str(rank) == "all"
    on_kind = _of_kind(on_tree, kind, "-m", notes)
    off_kind = _of_kind(off_tree, kind, "-g", notes)
    on = select_leaves(on_kind, rank, iteration, "-m", step)
    off = select_leaves(off_kind, rank, iteration, "-g", step)
    _same_step(on_kind.values("step", on), off_kind.values("step", off), notes)
    steps = (on_tree.values("iteration", on), off_tree.values("iteration", off))
    if iteration is None and all(len(found) == 1 for found in steps) and steps[0] != steps[1]:
        notes.append(  # a review: two steps were compared without a word
            f"-m holds iteration {steps[0][0]} and -g iteration {steps[1][0]}: the two runs "
            "are compared at different steps, whose weights and inputs differ in training "
            "(dump both runs at the same step)"
        )
    ranks_on = on_tree.values("rank_key", on)
    ranks_off = off_tree.values("rank_key", off)
    unpaired: list[NotCompared] = []
    if every_rank:
        # the ranks of the whole trees, whatever the kind, iteration or step: a rank the
        # choice leaves without a dump is said, never dropped (a review: rank 2, dumped one
        # iteration ahead, vanished from --iteration 5's results)
        missing: dict[str, list[str]] = {}
        sides = (
            ("-m", on_path, on_tree, on_kind, ranks_on, "-g", off_path, off_tree),
            ("-g", off_path, off_tree, off_kind, ranks_off, "-m", on_path, on_tree),
        )
        for side, root, tree, of_kind, chosen, other_side, other_root, other in sides:
            for r in tree.rank_keys:
                if r not in other.rank_keys:
                    why = f"rank {r} has dumps under {side} {root}, none under {other_side} "
                    missing.setdefault(r, []).append(why + str(other_root))
                elif r not in chosen:
                    missing.setdefault(r, []).append(
                        _missing(r, side, root, of_kind, kind, iteration, step)
                    )
        for r, whys in sorted(missing.items(), key=lambda item: natural_key(item[0])):
            unpaired.append(NotCompared(r, "; ".join(whys)))
        for side, root, leaves in (("-m", on_path, on), ("-g", off_path, off)):
            for leaf in (leaf for leaf in leaves if leaf.rank is None):
                why = (
                    f"{side} {leaf.path} is not in a rank folder (a device id, or rank_N) under "
                    f"{root}"
                )
                unpaired.append(NotCompared(str(leaf.path), why))
        common = [r for r in ranks_on if r in ranks_off]
        if not common:
            raise DumpTreeError(
                f"--rank all: no rank is on both sides (-m has {ranks_on or 'none'}, -g has "
                f"{ranks_off or 'none'})"
            )
        groups = [
            (r, [x for x in on if x.rank_key == r], [x for x in off if x.rank_key == r])
            for r in common
        ]
    else:
        if rank is None and ranks_on and ranks_off and ranks_on != ranks_off:
            # one rank each (select_leaves refuses several): compared as given, as msaccucmp
            # does (a review: "pass --rank R" was refused whatever R)
            notes.append(
                f"-m is rank {ranks_on[0]} and -g rank {ranks_off[0]}: another device's dumps, "
                "compared as given; pass the same device's folders on both sides if that was "
                "not meant"
            )
        groups = [(ranks_on[0] if len(ranks_on) == 1 else None, on, off)]
    pairs = []
    reductions: dict[str, list[str]] = {}  # a reduction's note: the ranks it was made for
    for r, on_leaves, off_leaves in groups:
        if kind == "tensor":
            made: list[str] = []
            try:
                on_leaves = [_one(on_leaves, "-m", on_path, graph_names[0], made, every_rank)]
                off_leaves = [_one(off_leaves, "-g", off_path, graph_names[1], made, every_rank)]
            except RankRefused as refused:
                if not every_rank:
                    raise
                # this rank alone is not compared; the others are (a review: one rank's model
                # folders stopped every rank)
                unpaired.append(NotCompared(str(r), str(refused), UNUSABLE))
                continue
            for note in made:
                reductions.setdefault(note, []).append(str(r))
        pairs.append(LeafPair(f"rank {r}" if r is not None else "", r, on_leaves, off_leaves))
    for note, ranks in reductions.items():  # once, not once per rank of --rank all
        alike = len(ranks) == len(pairs)
        notes.append(note if alike else f"{note} (rank {', '.join(ranks)})")
    return Selection(kind, pairs, notes, (on_tree, off_tree), unpaired)


def _kind(tree: DumpTree, flag: str) -> str:
    kinds = tree.kinds
    if kinds == ["exception"]:
        raise DumpTreeError(
            f"{flag} {tree.root}: holds only exception dumps (a failing kernel's buffers, no op "
            "name, dtype or shape recorded): nothing to compare; list them with "
            "fusion-switch dumps, and dump the run with dump_mode all for a comparison"
        )
    return "tensor" if "tensor" in kinds else "stats"
