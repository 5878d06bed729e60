"""The step, rank or iteration a comparison from the editor must be told, when its dump trees
hold several: `compare` refuses to pick one silently and says "pass --step S" (or "--rank R",
"--iteration I"), which an editor user cannot type. Here: which values would work (those dumped
on both sides), and the sentence naming the editor's setting and argument. Read from the folder
layout alone (`readers.dumptree`, no dump file opened); run it off the event loop (a listing
per folder)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SETTING = {
    "step": "fusionSwitch.compare.step",
    "rank": "fusionSwitch.compare.rank",
    "iteration": "fusionSwitch.compare.iteration",
}
_FLAG = {"step": "--step", "rank": "--rank", "iteration": "--iteration"}
_WHAT = {"step": "training steps", "rank": "ranks", "iteration": "iterations"}


@dataclass(frozen=True)
class Choice:
    key: str  # "step" | "rank" | "iteration": the compare command's argument
    values: list[str]  # what works, in the trees' order


def choice_needed(
    on_dump: str | Path,
    off_dump: str | Path,
    rank: str,
    iteration: str,
    message: str,
    step: str = "",
) -> Choice | None:
    """What to ask for after a comparison failed with `message`, in the order `compare`
    chooses (`readers.dumptree.select_leaves`): a step when it names ``--step`` and none was
    given, else a rank (of that step) when it names ``--rank`` and none was given, else an
    iteration (of that step and rank) when it names ``--iteration`` and none was given. One
    value on both sides is offered too: `compare` asks because a side holds several. None when
    no value is dumped on both sides (a pick could not help), when a choice made before is
    missing, or when the trees cannot be read."""
    from ..readers.dumptree import DumpTreeError, leaves_of_rank, scan_dump_tree, step_number

    try:
        trees = scan_dump_tree(on_dump), scan_dump_tree(off_dump)
    except (DumpTreeError, OSError):
        return None
    if not step and _FLAG["step"] in message:
        values = _common(*(tree.steps for tree in trees))
        return Choice("step", values) if values else None
    sides = []  # (tree, its leaves of the step given, as `--step` reads it: 1 or step1)
    for tree in trees:
        if not step and len(tree.steps) > 1:
            return None  # a step is missing first
        wanted = step_number(step) if step else None
        sides.append((tree, [leaf for leaf in tree.leaves if not step or leaf.step == wanted]))
    if not rank and _FLAG["rank"] in message:
        values = _common(*(tree.values("rank_key", leaves) for tree, leaves in sides))
        return Choice("rank", values) if values else None
    if not iteration and _FLAG["iteration"] in message:
        found = []
        for tree, leaves in sides:
            if not rank and len(tree.values("rank_key", leaves)) > 1:
                return None  # a rank is missing first
            try:  # the rank as `compare --rank` reads it (a key, or a device id of one rank)
                of_rank = leaves_of_rank(leaves, rank, "") if rank else leaves
            except DumpTreeError:
                of_rank = []
            found.append(tree.values("iteration", of_rank))
        values = _common(*found)
        if "stats" in trees[0].kinds and values:
            values.append("all")  # statistics compare every iteration at once
        return Choice("iteration", values) if values else None
    return None


def _common(first: list, second: list) -> list[str]:
    there = {str(v) for v in second}
    return [str(v) for v in first if str(v) in there]


def editor_hint(choice: Choice) -> str:
    """What to do from the editor (its message replaces the command line's flag)."""
    what = _WHAT[choice.key]
    if len(choice.values) == 1:  # "one of 4 (iterations ...)" read oddly
        which = f"{choice.values[0]} (the only {what[:-1]} dumped on both sides)"
    else:
        which = f"one of {', '.join(choice.values)} ({what} dumped on both sides)"
    return (
        f"From the editor: set {SETTING[choice.key]} or give the compare command the argument "
        f'"{choice.key}": {which}.'
    )
