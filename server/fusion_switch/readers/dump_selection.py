"""Which leaf folders a comparison uses, on each side, for the ranks and iteration asked for.

A tree with several ranks (device ids) or iterations is never reduced silently: without
``--rank``/``--iteration`` the choice is refused with the list of what is there. Several dump
times for one rank and iteration (a run repeated into the same dump path) are reduced to the
newest, and said so; several models are matched to the graph's name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .dumptree import DumpLeaf, DumpTree, DumpTreeError, scan_dump_tree, select_leaves


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


@dataclass
class Selection:
    kind: str  # "tensor" | "stats"
    pairs: list[LeafPair]
    notes: list[str] = field(default_factory=list)
    trees: tuple[DumpTree, ...] = ()  # (fusion-on, fusion-off) as scanned
    # --rank all: (rank, why) of each rank dumped on one side only, and of dump folders that
    # are not under a rank folder; not compared, which the run reports per rank
    unpaired: list[tuple[str, str]] = field(default_factory=list)


def _one(leaves: list[DumpLeaf], flag: str, root, graph_name, notes: list[str]):
    """Reduce one side's leaves for one rank to a single leaf (tensor dumps). ``graph_name``:
    the graph's name, or a function giving it (read only when several models need it)."""
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
            raise DumpTreeError(
                f"{flag} {root}: holds {len(models)} models ({', '.join(sorted(map(str, models)))})"
                " and none is named like the graph; give the leaf folder of the model to compare"
            )
    times = sorted({leaf.timestamp or "" for leaf in leaves})
    if len(times) > 1:
        newest = times[-1]
        leaves = [leaf for leaf in leaves if (leaf.timestamp or "") == newest]
        notes.append(f"{flag}: newest dump time {newest} of {len(times)} ({', '.join(times)})")
    ids = sorted({str(leaf.model_id) for leaf in leaves})
    if len(leaves) > 1:
        raise DumpTreeError(
            f"{flag} {root}: {len(leaves)} dump folders remain for {leaves[0].label} "
            f"(model ids {', '.join(ids)}); give the leaf folder to compare"
        )
    return leaves[0]


def select_pairs(
    on_path, off_path, rank=None, iteration=None, graph_names=(None, None)
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
    on = select_leaves(on_tree, rank, iteration, "-m")
    off = select_leaves(off_tree, rank, iteration, "-g")
    notes: list[str] = []
    steps = (on_tree.values("iteration", on), off_tree.values("iteration", off))
    if iteration is None and all(len(found) == 1 for found in steps) and steps[0] != steps[1]:
        notes.append(  # a review: two steps were compared without a word
            f"-m holds iteration {steps[0][0]} and -g iteration {steps[1][0]}: the two runs "
            "are compared at different steps, whose weights and inputs differ in training "
            "(dump both runs at the same step)"
        )
    ranks_on = on_tree.values("rank_key", on)
    ranks_off = off_tree.values("rank_key", off)
    unpaired: list[tuple[str, str]] = []
    if str(rank) == "all":
        common = [r for r in ranks_on if r in ranks_off]
        sides = (("-m", on_path, ranks_on, "-g", off_path, ranks_off),)
        sides += (("-g", off_path, ranks_off, "-m", on_path, ranks_on),)
        for side, root, mine, other_side, other_root, other in sides:
            for r in (r for r in mine if r not in other):
                why = f"rank {r} has dumps under {side} {root}, none under {other_side} "
                why += str(other_root)
                unpaired.append((str(r), why))
                notes.append(f"{why}: not compared")
        for side, root, leaves in (("-m", on_path, on), ("-g", off_path, off)):
            for leaf in (leaf for leaf in leaves if leaf.rank is None):
                why = (
                    f"{side} {leaf.path} is not in a rank folder (a device id, or rank_N) under "
                    f"{root}"
                )
                unpaired.append((str(leaf.path), why))
                notes.append(f"{why}: not compared")
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
            on_leaves = [_one(on_leaves, "-m", on_path, graph_names[0], made)]
            off_leaves = [_one(off_leaves, "-g", off_path, graph_names[1], made)]
            for note in made:
                reductions.setdefault(note, []).append(str(r))
        pairs.append(LeafPair(f"rank {r}" if r is not None else "", r, on_leaves, off_leaves))
    for note, ranks in reductions.items():  # once, not once per rank of --rank all
        alike = len(ranks) == len(groups)
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
