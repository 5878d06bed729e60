"""tests/data/real is the project's copy of the real sample files: every file expectations.json
describes is there, and (in the team workspace) it is byte-identical to samples/real."""

from __future__ import annotations

import pytest
from real_samples import REAL, SHARED, expectations


def test_every_described_file_is_present():
    missing = [name for name in expectations() if not (REAL / name).is_file()]
    assert missing == []


def test_every_sample_file_is_described_or_documentation():
    extra = [
        p.relative_to(REAL).as_posix()
        for p in REAL.rglob("*")
        if p.is_file() and p.relative_to(REAL).as_posix() not in expectations()
    ]
    assert sorted(extra) == [
        "PROVENANCE.md",
        "expectations.json",
        "stats_dumps/msinsight-mnist/LICENSE-MulanPSL2-msinsight.md",
    ]


def test_copy_matches_the_shared_samples():
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} not present (only in the team workspace)")
    for original in SHARED.rglob("*"):
        if original.is_file():
            copy = REAL / original.relative_to(SHARED)
            assert copy.read_bytes() == original.read_bytes(), copy
