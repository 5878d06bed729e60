"""Dump folders whose files CANN named by number: a name too long for the file system (over
255 bytes) is replaced by a number and listed in the folder's ``mapping.csv``
(``numeric_name,real_name`` rows, no header). :func:`number_files` does that to a folder any
case builder wrote, so that the oracle tests run the same cases with numeric names;
:func:`write_mapping` lists files a builder wrote under numbers itself (names too long to
write).

What msaccucmp does with such a folder (``dump_parse/dump.py``, ``dump_parse/mapping.py``,
``dump_parse/dump_utils.py``, ``dump_parse/ffts_parser.py``), which the cases exercise:

- it reads ``mapping.csv`` from the folder given (``-m``/``-g``) and no other, with
  ``csv.reader``: column 0 the numeric name, column 1 the real name; rows of another length
  are skipped;
- it looks a name up only when it is all digits (or ``<digits>.npy``); such a file is skipped
  when the folder has no mapping.csv or a mapping that does not list it, and it stops (an
  AttributeError) when mapping.csv lists nothing at all;
- the real name gives the op name and, for an FFTS+ thread or slice, the task type (the
  fourth dot field from the end) and the ``_lxslice`` tag;
- its sorts of an op's files read the name as listed: they look a numeric name up in a
  mapping that ``-f`` leaves empty, and sort it as 1 (its stamp, thread and slice alike),
  before every real name; numeric names tie, and the folder's listing order decides. An
  FFTS+ op without a cut axis picks its file by the fifth dot field of the listed name,
  which a numeric name has not (an IndexError: it stops).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

MAPPING = "mapping.csv"
FIRST_NUMBER = 1000001  # any digits do


def write_mapping(folder: str | os.PathLike, rows: dict[str, str]) -> None:
    """Add ``rows`` ({numeric name: real name}) to the folder's mapping.csv as CANN writes it."""
    with open(Path(folder) / MAPPING, "a", newline="") as listing:
        listing.writelines(f"{number},{name}\n" for number, name in rows.items())


def number_files(
    folder: str | os.PathLike,
    chosen: Callable[[str], bool] = lambda name: True,
    first: int = FIRST_NUMBER,
    real: Callable[[str], str] = lambda name: name,
) -> dict[str, str]:
    """Rename the dump files of ``folder`` whose names ``chosen`` accepts (all by default) to
    numbers, ``first`` upwards in the order of their names, and list them in the folder's
    mapping.csv under ``real(name)`` (a name too long to write a file under, say).
    Returns {numeric name: real name}."""
    folder = Path(folder)
    names = sorted(
        entry.name
        for entry in os.scandir(folder)
        if entry.is_file() and entry.name != MAPPING and chosen(entry.name)
    )
    renamed = {}
    for number, name in enumerate(names, start=first):
        os.rename(folder / name, folder / str(number))
        renamed[str(number)] = real(name)
    if renamed:
        write_mapping(folder, renamed)
    return renamed


def listed_real_names(folder: str | os.PathLike, renamed: dict[str, str]) -> list[str]:
    """The real names of the ``renamed`` files in the folder's own listing order (the order
    msaccucmp keeps among numeric names)."""
    return [renamed[name] for name in os.listdir(folder) if name in renamed]
