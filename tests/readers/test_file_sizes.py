"""File sizes stat'ed without the GIL (readers/_files.c) and DumpDir's prefetch of them."""

import os
import pickle
import sys
from pathlib import Path

import pytest
from fusion_switch.readers import dumpdir
from fusion_switch.readers.dumpdir import sanitize_op_name, scan_dump_dir
from hypothesis import given
from hypothesis import strategies as st

_files = pytest.importorskip("fusion_switch.readers._files", reason="C extension not built")

NAMES = {  # file name -> bytes; two files of conv1_BiasAdd: the newer one (…9) is the latest
    "Conv2D.conv1_BiasAdd.3.1700000000000009": 300,
    "Conv2D.conv1_BiasAdd.4.1700000000000002": 20,
    "Relu.relu.5.1700000000000003": 7,
    "Add.add_1.6.1700000000000004": 0,
}


def _folder(tmp_path: Path) -> Path:
    for name, size in NAMES.items():
        (tmp_path / name).write_bytes(b"x" * size)
    return tmp_path


def test_sizes_are_what_os_stat_gives(tmp_path):
    folder = _folder(tmp_path)
    paths = [str(folder / name) for name in NAMES]
    assert _files.sizes(paths) == [os.stat(p).st_size for p in paths]
    # bytes and PathLike as os.fsencode takes them; -1 where stat fails
    assert _files.sizes([os.fsencode(paths[0]), Path(paths[2]), str(folder / "gone")]) == [
        300,
        7,
        -1,
    ]
    assert _files.sizes(()) == []


@pytest.mark.skipif(sys.platform != "linux", reason="a name that is not UTF-8 needs Linux")
def test_a_name_that_is_not_utf8_is_encoded_as_os_fsencode_does(tmp_path):
    raw = os.fsencode(str(tmp_path)) + b"/Relu.r\xff.1.1700000000000001"
    with open(raw, "wb") as handle:
        handle.write(b"12345")
    assert _files.sizes([os.fsdecode(raw)]) == [5]


def test_bad_arguments_raise_as_os_stat_would(tmp_path):
    with pytest.raises(TypeError):
        _files.sizes(5)
    with pytest.raises(TypeError):
        _files.sizes([str(tmp_path), 3])
    with pytest.raises(ValueError, match="null"):
        _files.sizes(["a\0b"])


def test_prefetched_sizes_are_the_ones_stat_gives_and_need_no_stat(tmp_path):
    folder = _folder(tmp_path)
    plain = scan_dump_dir(folder)
    expected = {name: plain.latest_bytes(name) for name in plain.op_names}
    assert expected == {"conv1_BiasAdd": 300, "relu": 7, "add_1": 0}

    prefetched = scan_dump_dir(folder)
    assert prefetched.prefetch_latest_sizes()
    assert not prefetched.prefetch_latest_sizes()  # one prefetch per folder
    assert prefetched.latest_bytes("relu") == expected["relu"]  # the prefetch is taken here
    for name in NAMES:  # a stat now would see other sizes: the answers are the prefetch's
        (folder / name).write_bytes(b"y" * 1000)
    assert {name: prefetched.latest_bytes(name) for name in prefetched.op_names} == expected
    # the graph's spelling of a name finds its file as before (stat'ed now), a missing op is 0
    assert prefetched.latest_bytes("conv1/BiasAdd") == 1000
    assert prefetched.latest_bytes("missing") == 0


def test_a_file_gone_since_the_listing_counts_zero_as_without_the_prefetch(tmp_path):
    folder = _folder(tmp_path)
    dump_dir = scan_dump_dir(folder)
    (folder / "Relu.relu.5.1700000000000003").unlink()
    dump_dir.prefetch_latest_sizes()
    assert dump_dir.latest_bytes("relu") == 0 and dump_dir.latest_bytes("conv1_BiasAdd") == 300


def test_a_failing_prefetch_falls_back_to_stat_silently(tmp_path, monkeypatch, capfd):
    folder = _folder(tmp_path)
    dump_dir = scan_dump_dir(folder)

    def broken(paths):
        raise ValueError("embedded null byte")

    monkeypatch.setattr(dumpdir._files, "sizes", broken)
    assert dump_dir.prefetch_latest_sizes()
    assert dump_dir.latest_bytes("conv1_BiasAdd") == 300
    assert capfd.readouterr().err == ""  # no thread traceback


def test_a_folder_with_a_prefetch_under_way_pickles_without_its_thread(tmp_path):
    dump_dir = scan_dump_dir(_folder(tmp_path))
    dump_dir.prefetch_latest_sizes()
    copy = pickle.loads(pickle.dumps(dump_dir))
    assert copy == dump_dir and copy._prefetch is None
    assert copy.latest_bytes("conv1_BiasAdd") == 300 and dump_dir.latest_bytes("relu") == 7


@given(st.text(alphabet=st.sampled_from("ab/.\\ _-é\t"), max_size=12))
def test_sanitize_fast_path_equals_the_translation(name):
    assert sanitize_op_name(name) == name.translate(dumpdir._SANITIZE)


@pytest.mark.parametrize("prefetch", [False, True], ids=["stat", "prefetch"])
def test_an_ffts_plus_op_counts_every_file_its_merge_holds(tmp_path, prefetch):
    """The memory plan counted an FFTS+ op's newest thread file, where its merged dump holds
    the bytes of all of them in memory."""
    for thread, size in ((0, 100), (1, 250)):
        (tmp_path / f"Relu.r.3.1.{1700000000000000 + thread}.4.7.{thread}.0").write_bytes(
            b"x" * size
        )
    dump_dir = scan_dump_dir(tmp_path)
    if prefetch:
        assert dump_dir.prefetch_latest_sizes()
    assert dump_dir.latest_bytes("r") == 350
