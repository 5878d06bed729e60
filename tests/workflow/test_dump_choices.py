"""What the editor offers when a comparison needs a step, a rank or an iteration named: the
values both dump trees hold, from the folder layout alone (`workflow.dump_choices`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fusion_switch.workflow.dump_choices import Choice, choice_needed, editor_hint

NAME = "Conv2D.conv1.3.1.1700000000000000"


def tree(root: Path, leaves: list[tuple[int, str]]) -> Path:
    """A dump tree {time}/{rank}/{model}/{model id}/{iteration}/ with one dump file per leaf."""
    for rank, iteration in leaves:
        leaf = root / "20260101120000" / str(rank) / "ge_default_1" / "1" / iteration
        leaf.mkdir(parents=True, exist_ok=True)
        (leaf / NAME).write_bytes(b"")
    return root


RANK_MESSAGE = "-m x: holds 2 ranks (device ids 0, 1); pass --rank R to compare one of them"
ITERATION_MESSAGE = "-m x: holds 2 iterations (0, 1); pass --iteration I to compare one of them"


@pytest.mark.parametrize(
    ("on", "off", "rank", "iteration", "message", "expected"),
    [
        # ranks on both sides only (rank 2 is on one side: --rank 2 would fail)
        (
            [(0, "0"), (1, "0"), (2, "0")],
            [(0, "0"), (1, "0")],
            "",
            "",
            RANK_MESSAGE,
            ("rank", ["0", "1"]),
        ),
        # a rank given: the iterations of that rank on both sides
        (
            [(0, "0"), (0, "1"), (1, "5")],
            [(0, "0"), (0, "1"), (0, "2")],
            "0",
            "",
            ITERATION_MESSAGE,
            ("iteration", ["0", "1"]),
        ),
        # one rank: its iterations
        (
            [(0, "3"), (0, "10")],
            [(0, "3"), (0, "10")],
            "",
            "",
            ITERATION_MESSAGE,
            ("iteration", ["3", "10"]),
        ),
        # the child's error is about something else: nothing to pick
        ([(0, "0"), (1, "0")], [(0, "0"), (1, "0")], "", "", "-cf g.json: no such file", None),
        # already given: nothing to pick
        ([(0, "0"), (1, "0")], [(0, "0"), (1, "0")], "1", "", RANK_MESSAGE, None),
        # one rank on both sides (-m holds two, so compare asks): that one, with the setting
        # named (a review: only a choice of two or more was offered, and the editor then
        # showed "pass --rank R" with no pick and no setting)
        ([(0, "0"), (1, "0")], [(1, "0")], "", "", RANK_MESSAGE, ("rank", ["1"])),
        ([(0, "3"), (0, "4")], [(0, "4")], "", "", ITERATION_MESSAGE, ("iteration", ["4"])),
        # no rank on both sides: nothing that would work
        ([(0, "0"), (1, "0")], [(2, "0"), (3, "0")], "", "", RANK_MESSAGE, None),
    ],
)
def test_the_values_on_both_sides(tmp_path, on, off, rank, iteration, message, expected) -> None:
    found = choice_needed(
        tree(tmp_path / "on", on), tree(tmp_path / "off", off), rank, iteration, message
    )
    assert (None if found is None else (found.key, found.values)) == expected


def test_a_missing_folder_offers_nothing(tmp_path: Path) -> None:
    assert choice_needed(tmp_path / "no", tmp_path / "none", "", "", RANK_MESSAGE) is None


def test_the_hint_names_the_setting_and_the_argument() -> None:
    hint = editor_hint(Choice("rank", ["0", "1"]))
    assert "fusionSwitch.compare.rank" in hint and '"rank"' in hint and "0, 1" in hint
    hint = editor_hint(Choice("iteration", ["3", "10"]))
    assert "fusionSwitch.compare.iteration" in hint and '"iteration"' in hint
    hint = editor_hint(Choice("step", ["1"]))
    assert '"step": 1 (the only training step dumped on both sides)' in hint, hint


def test_two_servers_device_zero_are_two_ranks_to_pick(tmp_path: Path) -> None:
    """A reread of the round's merges: a rank is its folders above the time folder and its
    device id (`node0/0`), as `--rank` takes it; the pick offered the device ids, here one "0"
    that `--rank` refuses for naming two ranks, and matched a given rank against the device id
    only, so `node1/0`'s iterations were never offered."""
    for side in ("on", "off"):
        for node, iteration in (("node0", "3"), ("node1", "3"), ("node1", "4")):
            tree(tmp_path / side / node, [(0, iteration)])
    on, off = tmp_path / "on", tmp_path / "off"
    ranks = choice_needed(on, off, "", "", RANK_MESSAGE)
    assert ranks is not None and (ranks.key, ranks.values) == ("rank", ["node0/0", "node1/0"])
    iterations = choice_needed(on, off, "node1/0", "", ITERATION_MESSAGE)
    assert iterations is not None and iterations.values == ["3", "4"]


STEP_MESSAGE = (
    "-m x: holds 2 steps (0, 1: the step folders above the time folders); pass --step S to "
    "compare one of them, the same step on both sides"
)


def stepped(root: Path, leaves: list[tuple[str, int, str]]) -> Path:
    """MindSpore's Ascend O2 layout, {step}/{time}/{rank}/{model}/{model id}/{iteration}/."""
    for step, rank, iteration in leaves:
        tree(root / step, [(rank, iteration)])
    return root


def test_a_step_is_asked_first_then_the_rank_of_that_step(tmp_path: Path) -> None:
    """Steps are chosen before ranks (`select_leaves`): the steps on both sides are offered
    (step 2 is on one side only), and once a step is given (`1` or `step1`, as `--step` takes
    it), the ranks and iterations offered are that step's (iteration 9 is step 0's)."""
    both = [("0", 0, "0"), ("0", 1, "9"), ("1", 0, "0"), ("1", 1, "4"), ("1", 1, "5")]
    on = stepped(tmp_path / "on", [*both, ("2", 0, "0")])
    off = stepped(tmp_path / "off", both)
    found = choice_needed(on, off, "", "", STEP_MESSAGE)
    assert found is not None and (found.key, found.values) == ("step", ["0", "1"])
    assert choice_needed(on, off, "", "", STEP_MESSAGE, step="1") is None  # already given
    ranks = choice_needed(on, off, "", "", RANK_MESSAGE, step="1")
    assert ranks is not None and (ranks.key, ranks.values) == ("rank", ["0", "1"])
    iterations = choice_needed(on, off, "1", "", ITERATION_MESSAGE, step="step1")
    assert iterations is not None and iterations.values == ["4", "5"]
    # one step on both sides: offered as well (-m holds two)
    found = choice_needed(
        stepped(tmp_path / "on1", both), stepped(tmp_path / "off1", both[2:]), "", "", STEP_MESSAGE
    )
    assert found is not None and (found.key, found.values) == ("step", ["1"])
    # while a step is missing, no rank or iteration of all steps together is offered
    assert choice_needed(on, off, "", "", RANK_MESSAGE) is None
    assert choice_needed(on, off, "1", "", ITERATION_MESSAGE) is None


def test_the_step_hint_names_its_setting_and_argument() -> None:
    hint = editor_hint(Choice("step", ["0", "1"]))
    assert "fusionSwitch.compare.step" in hint and '"step"' in hint and "0, 1" in hint
    assert "steps dumped on both sides" in hint
