"""``-alg``: the metric names msaccucmp knows, in its index order, and which ones a user chose.

A mistyped entry is skipped with a warning naming the closest names (or refused when nothing is
left), never silently dropped.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

ALGORITHMS: tuple[str, ...] = (
    "CosineSimilarity",
    "MaxAbsoluteError",
    "AccumulatedRelativeError",
    "RelativeEuclideanDistance",
    "KullbackLeiblerDivergence",
    "StandardDeviation",
    "MeanAbsoluteError",
    "RootMeanSquareError",
    "MaxRelativeError",
    "MeanRelativeError",
)
"""All metrics in msaccucmp's index order (``-alg 0`` is CosineSimilarity)."""

BOOL_ALGORITHMS = frozenset({"CosineSimilarity", "RelativeEuclideanDistance"})
"""The only metrics msaccucmp evaluates when both tensors are bool."""

POSITION = {name: index for index, name in enumerate(ALGORITHMS)}
"""A metric's index in :data:`ALGORITHMS` (where the kernel returns it)."""

_INDEX = re.compile(r"^[0-9]$")


class AlgorithmSelectionError(ValueError):
    """``-alg`` named nothing we can compute."""


def parse_algorithms(
    selection: str | Sequence[int | str] | None, warnings: list[str] | None = None
) -> list[str]:
    """The metric names ``-alg`` selects, in the order given, as msaccucmp resolves them.

    Accepts ``None``/``"all"`` (every metric in index order), a comma-separated string of
    single-digit indexes and/or names, or a list of ints/strings (``-alg 0 3`` style). Unknown
    entries are skipped with a warning appended to ``warnings`` (naming the closest algorithm);
    an empty result raises :class:`AlgorithmSelectionError`.
    """
    if selection is None:
        return list(ALGORITHMS)
    text = selection if isinstance(selection, str) else ",".join(str(item) for item in selection)
    if text.lower() == "all":
        return list(ALGORITHMS)
    chosen: list[str] = []
    unknown: list[str] = []
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        if _INDEX.match(item):
            name = ALGORITHMS[int(item)]
        elif item in ALGORITHMS:
            name = item
        else:
            unknown.append(item)
            continue
        if name not in chosen:
            chosen.append(name)
    if not chosen and not unknown:
        raise AlgorithmSelectionError(f"-alg: no algorithm selected. {_VALID}.")
    if not chosen:
        raise AlgorithmSelectionError(
            " ".join(_unknown_algorithm(item) for item in unknown) + f" {_VALID}."
        )
    if warnings is not None:
        warnings += [f"{_unknown_algorithm(item, skipped=True)} {_VALID}." for item in unknown]
    return chosen


_VALID = f"Valid: 0..9 or {', '.join(ALGORITHMS)} (or all)"


def _unknown_algorithm(item: str, skipped: bool = False) -> str:
    """``-alg ITEM: unknown algorithm`` with the closest name(s) when there are any."""
    head = f"-alg {item}: unknown algorithm" + (", skipped" if skipped else "")
    if item.isdigit():
        return f"{head} (indexes go from 0 to {len(ALGORITHMS) - 1})."
    close = closest_algorithms(item)
    if not close:
        return f"{head}."
    names = close[0] if len(close) == 1 else f"{', '.join(close[:-1])} or {close[-1]}"
    return f"{head}; did you mean {names}?"


_MAX_SUGGESTIONS = 4


def _initials(name: str) -> str:
    return "".join(char for char in name if char.isupper()).lower()


def _is_subsequence(short: str, long: str) -> bool:
    letters = iter(long)
    return all(char in letters for char in short)


def closest_algorithms(item: str) -> list[str]:
    """The algorithm names a mistyped ``-alg`` entry most likely means, best first: the same
    name in another case; the name's initials (``rmse``; ``mae`` is both Max- and
    MeanAbsoluteError) or their start (``kl``); names containing the entry (``Cosine``);
    names spelled alike (``CosineSimilarty``); names with the entry's letters in order and
    the same first letter (``std``). Empty when nothing is close enough, or too much is
    (``Error``)."""
    key = item.lower()
    lowered = {name.lower(): name for name in ALGORITHMS}
    if key in lowered:
        return [lowered[key]]
    for candidates in (
        [name for name in ALGORITHMS if _initials(name) == key],
        [name for name in ALGORITHMS if len(key) >= 2 and _initials(name).startswith(key)],
        [name for name in ALGORITHMS if len(key) >= 3 and key in name.lower()],
        [lowered[name] for name in difflib.get_close_matches(key, list(lowered), n=2)],
    ):
        if 0 < len(candidates) <= _MAX_SUGGESTIONS:
            return candidates
    spelled = [
        name
        for low, name in lowered.items()
        if len(key) >= 2 and low[0] == key[0] and _is_subsequence(key, low)
    ]
    return spelled if len(spelled) <= _MAX_SUGGESTIONS else []
