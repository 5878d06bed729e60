"""``classify_file`` answers the usual tensor dump name with one pattern (issue 16: the dump
tree is walked before anything else); for every name, drawn or found in the real dump folders
under samples/real, it must say what the full check (frozen below from revision 4231d68) says."""

from __future__ import annotations

from pathlib import Path

import pytest
from fusion_switch.readers.dumpdir import MAPPING_FILE, parse_dump_name
from fusion_switch.readers.dumptree import classify_file, scan_dump_tree
from fusion_switch.readers.exception_dump import is_exception_dump_name
from hypothesis import given, settings
from hypothesis import strategies as st

REAL_DUMPS = Path(__file__).resolve().parents[1] / "data" / "real" / "dumps"  # samples/real


def _full_check(name: str) -> str | None:
    if name == MAPPING_FILE:
        return "tensor"
    if is_exception_dump_name(name):
        return "exception"
    if name.lower().endswith(".csv"):
        return "stats?"
    if not isinstance(parse_dump_name(name), str):
        return "tensor"
    return None


def _same(name: str) -> None:
    try:
        expected = _full_check(name)
    except Exception as error:  # the full check's own failure must stay the same
        with pytest.raises(type(error)):
            classify_file(name)
        return
    assert classify_file(name) == expected, name


field = st.one_of(
    st.from_regex(r"[0-9]{1,20}", fullmatch=True),
    st.from_regex(r"[A-Za-z0-9_-]{0,8}", fullmatch=True),
    st.sampled_from(["exception_info", "npy", "csv", "1700000000000000", "٣", "", " ", "a\n"]),
)


@settings(max_examples=2000, deadline=None)
@given(st.lists(field, min_size=1, max_size=8))
def test_dotted_names_of_any_fields(fields):
    _same(".".join(fields))


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=40))
def test_any_text(name):
    _same(name)


@pytest.mark.parametrize(
    "name",
    [
        "Conv2D.conv1.3.1.1700000000000000",
        "Conv2D.conv1.3.1700000000000000",
        "exception_info.1.2.1700000000000000",
        "exception_info.1.2.3.4",
        "kernel.1.2.AIC.3.1700000000000000",
        "Add.add_1.2.3.4.5.6",
        "Add.add.1.2.3\n",
        "Add.a.b.1.2",
        "op.0.1700000000000000.npy",
        MAPPING_FILE,
        "statistic.csv",
    ],
)
def test_names_at_the_edges(name):
    _same(name)


def test_every_file_of_the_real_dump_folders():
    names = [p.name for p in REAL_DUMPS.rglob("*") if p.is_file()]
    assert names
    for name in names:
        _same(name)
    for folder in sorted(p for p in REAL_DUMPS.iterdir() if p.is_dir()):
        scan_dump_tree(folder)  # walks with the new check: no error on real trees
