"""The rank or iteration a comparison from the editor must be told, when its dump trees hold
several: `compare` refuses to pick one silently and says "pass --rank R" (or "--iteration I"),
which an editor user cannot type. Here: which values would work (those dumped on both sides),
and the sentence naming the editor's setting and argument. Read from the folder layout alone
(`readers.dumptree`, no dump file opened); run it off the event loop (a listing per folder)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SETTING = {"rank": "fusionSwitch.compare.rank", "iteration": "fusionSwitch.compare.iteration"}
_FLAG = {"rank": "--rank", "iteration": "--iteration"}


@dataclass(frozen=True)
class Choice:
    key: str  # "rank" | "iteration": the compare command's argument
    values: list[str]  # what works, in the trees' order


def choice_needed(
    on_dump: str | Path, off_dump: str | Path, rank: str, iteration: str, message: str
) -> Choice | None:
    """What to ask for after a comparison failed with `message`: a rank when it names
    ``--rank`` and none was given, else an iteration when it names ``--iteration`` and none was
    given; None when no value is dumped on both sides (a pick could not help) or the trees
    cannot be read."""
    from ..readers.dumptree import DumpTreeError, leaves_of_rank, scan_dump_tree

    try:
        trees = scan_dump_tree(on_dump), scan_dump_tree(off_dump)
    except (DumpTreeError, OSError):
        return None
    if not rank and _FLAG["rank"] in message:
        values = _common(*(tree.rank_keys for tree in trees))
        return Choice("rank", values) if len(values) > 1 else None
    if not iteration and _FLAG["iteration"] in message:
        sides = []
        for tree in trees:
            try:  # the rank as `compare --rank` reads it (a key, or a device id of one rank)
                leaves = leaves_of_rank(tree.leaves, rank, "") if rank else tree.leaves
            except DumpTreeError:
                leaves = []
            if not rank and len(tree.rank_keys) > 1:
                return None  # a rank is missing first
            sides.append(tree.values("iteration", leaves))
        values = _common(*sides)
        if "stats" in trees[0].kinds and values:
            values.append("all")  # statistics compare every iteration at once
        return Choice("iteration", values) if len(values) > 1 else None
    return None


def _common(first: list, second: list) -> list[str]:
    there = {str(v) for v in second}
    return [str(v) for v in first if str(v) in there]


def editor_hint(choice: Choice) -> str:
    """What to do from the editor (its message replaces the command line's flag)."""
    values = ", ".join(choice.values)
    what = "ranks" if choice.key == "rank" else "iterations"
    return (
        f"From the editor: set {SETTING[choice.key]} or give the compare command the argument "
        f'"{choice.key}": one of {values} ({what} dumped on both sides).'
    )
