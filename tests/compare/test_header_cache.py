"""The measuring processes' cache of fusion-off dump headers (issue 16): a small file is read
whole and its bytes stay with its header, so the cache is bounded by the bytes it holds as well
as by the number of files; a file used again soon after is not read again."""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest
from fusion_switch.compare import workers
from fusion_switch.compare.workers import GroupComparer
from fusion_switch.readers.dump import SMALL_FILE_BYTES, DumpError
from fusion_switch.readers.dump_write import TensorSpec, write_dump


def _comparer() -> GroupComparer:
    """A comparer with only what ``_header`` uses (no job: the cache alone is under test)."""
    comparer = GroupComparer.__new__(GroupComparer)
    comparer._headers = OrderedDict()
    comparer._header_bytes = 0
    comparer.errors = []
    comparer._reported = set()
    comparer._merged = {}  # no FFTS+ op's merged dump here
    return comparer


def _dumps(folder: Path, count: int, elements: int) -> list[Path]:
    values = np.arange(elements, dtype=np.float32)
    return [
        write_dump(folder / f"Conv.op{i}.0.0.{i}", f"op{i}", outputs=[TensorSpec(values + i)])
        for i in range(count)
    ]


def _held(comparer: GroupComparer) -> int:
    return sum(
        len(cached._content)
        for cached in comparer._headers.values()
        if getattr(cached, "_content", None) is not None
    )


def test_the_cache_holds_at_most_its_budget_of_file_bytes(tmp_path):
    paths = _dumps(tmp_path, 48, 25_000)  # ~100 KB each, read whole: ~4.8 MB in all
    assert all(p.stat().st_size <= SMALL_FILE_BYTES for p in paths)
    comparer = _comparer()
    for path in paths:
        comparer._header(path)
        assert comparer._header_bytes == _held(comparer) <= workers._HEADER_CACHE_BYTES
    assert 10 <= len(comparer._headers) < len(paths)
    assert list(comparer._headers)[-1] == paths[-1]  # the newest stay, the oldest went


def test_a_file_used_again_soon_is_not_read_again(tmp_path, monkeypatch):
    paths = _dumps(tmp_path, 12, 25_000)
    comparer = _comparer()
    first = comparer._header(paths[0])
    for path in paths[1:11]:  # ten others in between: ~1 MB, within the budget
        comparer._header(path)

    def no_read(path):
        raise AssertionError(f"{path} read again")

    monkeypatch.setattr(workers, "read_dump", no_read)
    assert comparer._header(paths[0]) is first


def test_a_file_larger_than_the_budget_stays_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(workers, "_HEADER_CACHE_BYTES", 50_000)
    paths = _dumps(tmp_path, 3, 25_000)
    comparer = _comparer()
    for path in paths:
        newest = comparer._header(path)
        assert list(comparer._headers.values()) == [newest]
        assert comparer._header_bytes == len(newest._content)


def test_files_read_in_parts_and_errors_count_as_files_only(tmp_path, monkeypatch):
    monkeypatch.setattr(workers, "_HEADER_CACHE_SIZE", 3)
    large = _dumps(tmp_path, 4, SMALL_FILE_BYTES // 4 + 1000)  # over SMALL_FILE_BYTES
    bad = tmp_path / "Conv.bad.0.0.99"
    bad.write_bytes(b"\x01" * 16)
    comparer = _comparer()
    for path in large:
        assert comparer._header(path)._content is None
    with pytest.raises(DumpError):
        comparer._header(bad)
    assert comparer._header_bytes == 0
    assert list(comparer._headers) == [*large[-2:], bad]
