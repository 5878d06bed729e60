"""FFTS+ dump files: which op a file belongs to, and in what order msaccucmp reads an op's files.

An FFTS+ op runs as several threads (auto mode: ``.4.{context}.{thread}[.{device}]`` after the
stamp) or as slice ops ``{name}_lxslice{N}`` (manual mode), each dumping its own part of the
outputs. msaccucmp (given ``-f``) files them under one op and merges them
(:mod:`.ffts_merge`); this module says what it files them under and how it orders them, from
the names alone (numpy-free: the folder scan uses it). It orders a numeric name (one of
``mapping.csv``) as msaccucmp's sorts do, without looking it up; :func:`misplaced_parts` says
when that puts parts out of place.
"""

from __future__ import annotations

import os
import re

NORMAL, AUTO, MANUAL = 0, 1, 2
_LXSLICE_ANY = re.compile(r"_lxslice[0-9]+")
_SGT_GRAPH = re.compile(r"sgt_graph_[0-9]+")
_TASK_TYPES = ("0", "1", "2", "3", "4")
_FFTS_PLUS_TASK = "4"
# what msaccucmp's sort keys give a name they cannot read (its INVALID_* constants)
_NO_NAME, _NO_THREAD, _NO_SLICE, _NO_STAMP = 1, 2, 3, 0


def without_lxslice(name: str) -> str:
    """``name`` without its ``_lxslice<N>`` tags, as msaccucmp (given -f) reads the op names of
    graphs and dump files alike (``a_lxslice1_b`` is ``a_b``)."""
    return _LXSLICE_ANY.sub("", name) if "_lxslice" in name else name


def op_key(file_op_name: str) -> str:
    """The op a dump file is filed under, from its name's op field, as msaccucmp reads it with
    ``-f``: a name holding ``_lxslice`` loses every ``_lxslice<N>`` and keeps an
    ``sgt_graph_N_`` prefix; any other name loses that prefix (``p_sgt_graph_0_f`` is ``f``)."""
    if "_lxslice" in file_op_name:
        return without_lxslice(file_op_name)
    if "_sgt_graph" not in file_op_name:
        return file_op_name
    matches = list(_SGT_GRAPH.finditer(file_op_name))
    if matches and matches[-1].end() != len(file_op_name):
        return file_op_name[matches[-1].end() + 1 :]
    return file_op_name


def task_mode(real_name: str) -> int | str:
    """How msaccucmp reads an op whose last listed file is ``real_name``: NORMAL, AUTO (FFTS+
    threads) or MANUAL (``_lxslice`` files), from the fourth dot field from the end of a name
    of more than five fields (a task type, 4 being FFTS+). A text saying why when that field
    is no task type: msaccucmp then stops the whole comparison."""
    if real_name.endswith(".npy"):
        return NORMAL
    fields = real_name.split(".")
    if len(fields) <= 5:
        return NORMAL
    task_type = fields[-4]
    if task_type not in _TASK_TYPES:
        return (
            f"msaccucmp reads the fourth dot field from the end of this name ({task_type!r}) "
            "as a task type, which must be 0-4, and stops the whole comparison on it"
        )
    if task_type != _FFTS_PLUS_TASK:
        return NORMAL
    return MANUAL if "_lxslice" in real_name else AUTO


def _stamp(fields: list[str]) -> int:
    """The fifth dot field when it is a 16-digit stamp, else msaccucmp's 0."""
    stamp = fields[4]
    return int(stamp) if len(stamp) == 16 and stamp.isdigit() else _NO_STAMP


def _part(fields: list[str], mode: int) -> int:
    """The thread (auto: the second field from the end) or the slice (manual: the LAST
    CHARACTER of the op field, so ``_lxslice10`` counts as 0), else msaccucmp's constants."""
    if mode == AUTO:
        thread = fields[-2]
        return int(thread) if thread.isdigit() else _NO_THREAD
    last = fields[1][-1:]
    return int(last) if last.isdigit() else _NO_SLICE


def order_key(listed_name: str, real_name: str, mode: int) -> tuple[int, int]:
    """msaccucmp's order of an FFTS+ op's files: its two stable sorts, by the stamp and then
    by the thread or slice, as one key (the listing order breaks ties). A numeric name (one
    of ``mapping.csv``) gets 1 from both, as its lookup there finds nothing. Raises
    ValueError for a name of fewer than five fields, where msaccucmp fails."""
    if listed_name.isdigit():
        return (_NO_NAME, _NO_NAME)
    fields = real_name.split(".")
    if len(fields) < 5:
        raise ValueError(
            f"{real_name} has no fifth dot field, by which msaccucmp orders an FFTS+ op's "
            "files: it stops the whole comparison on it"
        )
    return (_part(fields, mode), _stamp(fields))


def ffts_stamp(listed_name: str, real_name: str) -> int:
    """The stamp msaccucmp reads from an FFTS+ name: its fifth dot field when it has 16 digits
    (0 otherwise; 1 for a numeric name)."""
    if listed_name.isdigit():
        return _NO_NAME
    fields = real_name.split(".")
    return _stamp(fields) if len(fields) > 4 else _NO_STAMP


def merged_path(first_location: str) -> str:
    """The path msaccucmp gives a merged tensor (its messages name it): the first file's path
    cut after its fourth dot, then ``*``."""
    return ".".join([*os.fspath(first_location).split(".")[:4], "*"])


class ShortName(ValueError):
    """A file whose name as listed has no fifth dot field, msaccucmp's sort key: ``position``
    is its place among the files given."""

    def __init__(self, message: str, position: int) -> None:
        super().__init__(message)
        self.position = position


def fallback_order(locations: list[str]) -> list[int]:
    """Where msaccucmp finds no cut axis it compares one file unmerged: the last of the files
    stable-sorted by their fifth dot field as text. Their positions in that order. Raises
    :class:`ShortName` for a name as listed of fewer than five fields (a numeric one of
    ``mapping.csv``: the sort does not look it up), on which msaccucmp stops."""
    names = [os.path.basename(location) for location in locations]
    for position, name in enumerate(names):
        if len(name.split(".")) < 5:
            what = " (a numeric name of mapping.csv, which it does not look up)"
            raise ShortName(
                f"msaccucmp picks the one file it compares of an FFTS+ op without a cut axis "
                f"by the fifth dot field of the names as listed; {name}"
                f"{what if name.isdigit() else ''} has none, and it stops the whole comparison "
                "on it",
                position,
            )
    return sorted(range(len(names)), key=lambda i: names[i].split(".")[4])


def misplaced_parts(listed_names: list[str], real_names: list[str], mode: int) -> str | None:
    """Why msaccucmp joins an FFTS+ op's parts out of place, when it does: the files in its
    order (their names as the folder lists them, and their real names) include numeric names
    of ``mapping.csv``, which its sort does not look up (each sorts as thread or slice 1 of
    stamp 1; ties keep the folder's listing order), and the real names give another order.
    None when they give this one, or give none (a real name msaccucmp could not order)."""
    if not any(name.isdigit() for name in listed_names):
        return None
    try:
        keys = [order_key(name, name, mode) for name in real_names]
    except ValueError:
        return None
    wanted = sorted(range(len(keys)), key=keys.__getitem__)
    if wanted == list(range(len(keys))):
        return None
    unit = "thread" if mode == AUTO else "slice"
    parts = [_part_shown(name, mode) for name in real_names]
    numbers = ", ".join(name for name in listed_names if name.isdigit())
    return (
        f"msaccucmp orders an FFTS+ op's files by their names as listed, and does not look "
        f"its numeric names ({numbers}) up in mapping.csv: they sort as {unit} 1 of stamp 1, "
        f"in the folder's listing order, so it joins the {unit}s {', '.join(parts)} where "
        f"their real names give {', '.join(parts[i] for i in wanted)}: its tensor holds "
        "parts out of place"
    )


def _part_shown(real_name: str, mode: int) -> str:
    """The thread (auto) or the ``_lxslice`` number (manual) a real name gives, as text."""
    fields = real_name.split(".")
    if mode == AUTO:
        return fields[-2]
    found = _LXSLICE_ANY.findall(fields[1]) if len(fields) > 1 else []
    return found[-1][len("_lxslice") :] if found else "?"
