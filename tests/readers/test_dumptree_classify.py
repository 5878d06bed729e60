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


_LEAF_NAMES = st.sampled_from(
    [
        *("Conv2D.conv1.3.0.1767225600000001", "Relu.r.1.2.3", "Add.a.1.1767225600000002"),
        *("exception_info.1.2.1767225600000", "te_add.1.2.AIC.0.1767225600123", "notes.txt"),
        *("x.csv", "stats.csv", MAPPING_FILE, "Add.b.1.0.17.npy", "12345", "odd name", "a.b"),
    ]
)


@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(_LEAF_NAMES, st.integers(0, 9), st.booleans()), max_size=12))
def test_a_leaf_counts_what_classifying_each_file_counts(files):
    # _leaf_of counts the usual tensor names in one filter over the listing, the rest one by
    # one: the counts must be those of classify_file on every regular file (a folder named
    # like a dump file is not one), and the tree's sub-folders those of the listing
    import os
    import tempfile

    from fusion_switch.readers.dumptree import KINDS, _leaf_of
    from fusion_switch.readers.stats import looks_like_stats_csv

    with tempfile.TemporaryDirectory() as folder:
        for name, suffix, as_folder in files:
            path = Path(folder, f"{suffix}{name}" if suffix % 3 == 0 else name)
            if path.exists():
                continue
            if as_folder:
                path.mkdir()
            else:
                path.write_text("Op Type,Op Name,Task Id\n" if path.suffix == ".csv" else "")
        counts = dict.fromkeys(KINDS, 0)
        for entry in os.scandir(folder):
            if entry.is_file():
                found = classify_file(entry.name)
                if found == "stats?":
                    found = "stats" if looks_like_stats_csv(entry.path) else None
                if found is not None:
                    counts[found] += 1
        best = max(KINDS, key=lambda k: counts[k])
        expected = (best, counts[best], 0) if counts[best] else None
        assert _leaf_of(Path(folder)) == expected
        assert _leaf_of(Path(folder), entries=list(os.scandir(folder))) == expected
        tree_folders = sorted(
            p.path for p in os.scandir(folder) if p.is_dir() and not p.name.startswith(".")
        )
        if tree_folders:
            found_leaves = {str(leaf.path) for leaf in _tree_or_empty(folder)}
            assert found_leaves <= {folder, *tree_folders}


def _tree_or_empty(folder: str) -> list:
    from fusion_switch.readers.dumptree import DumpTreeError

    try:
        return scan_dump_tree(folder).leaves
    except DumpTreeError:
        return []
