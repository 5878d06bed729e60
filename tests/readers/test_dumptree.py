"""readers.dumptree / exception_dump / stats / dump_selection on the real dumps (exception dumps,
MindSpore statistics trees) and on multi-rank, multi-iteration trees built from generated cases."""

from __future__ import annotations

import os

import pytest
from fusion_switch.readers import protowire as pw
from fusion_switch.readers.dump import DumpError, read_dump
from fusion_switch.readers.dump_selection import select_pairs
from fusion_switch.readers.dumpdir import DumpDirError, parse_dump_name, scan_dump_dir
from fusion_switch.readers.dumptree import DumpTreeError, scan_dump_tree, select_leaves
from fusion_switch.readers.exception_dump import (
    NOT_RECORDED,
    parse_exception_name,
    read_exception_dump,
)
from fusion_switch.readers.stats import read_execution_order, read_stats_csv
from fusion_switch.synth.generator import generate_case
from real_samples import REAL, expectations, files_under
from tree_builder import build_tree

EXCEPTIONS = files_under("dumps")
STATS = [f for f in files_under("stats_dumps") if f.endswith("statistic.csv")]
ORDERS = [f for f in files_under("stats_dumps") if "execution_order" in f]


def test_the_samples_hold_11_exception_dumps_and_20_statistics_files():
    assert (len(EXCEPTIONS), len(STATS), len(ORDERS)) == (11, 20, 8)


@pytest.mark.parametrize("name", EXCEPTIONS)
def test_real_exception_dump_is_read_as_what_it_is(name):
    facts = expectations()[name]
    path = REAL / name
    parsed = parse_exception_name(path.name)
    assert [parsed.stream_id, parsed.task_id, parsed.time] == facts["file_name"]["fields"]
    assert parsed.kernel == ""
    dump = read_exception_dump(path)
    assert (dump.version, dump.dump_time) == (facts["version"], facts["dump_time"])
    assert dump.op_name == ""
    assert dump.dump_time - parsed.time == facts["dump_time_minus_name_timestamp_us"] != 0
    assert [b.size for b in dump.buffers] == [i["size"] for i in facts["inputs"]]
    assert all(b.dtype == NOT_RECORDED and b.shape is None for b in dump.buffers)
    assert "no dtype or shape recorded" in dump.describe()
    assert "1026" not in dump.describe().split("stream")[0]  # never an op name
    # the plain dump reader keeps what is on the wire: only the sizes
    assert all(t.recorded == {"size"} for t in read_dump(path).inputs)
    assert read_dump(path).file_size == facts["bytes"]


def test_exception_dumps_are_never_op_dumps():
    name = "exception_info.1026.147.1730796695373243"
    assert isinstance(parse_dump_name(name), str)  # not op type "exception_info", op "1026"
    with pytest.raises(DumpDirError, match="exception dump"):
        scan_dump_dir(REAL / "dumps/Sayout-adversial_poison")


def test_kernel_exception_names_are_recognised():
    parsed = parse_exception_name("te_add_12ab.3.7.AIV.12.1730796695373243")
    assert (parsed.kernel, parsed.stream_id, parsed.task_id) == ("te_add_12ab", 3, 7)
    assert (parsed.core_type, parsed.core_id, parsed.time) == ("AIV", 12, 1730796695373243)
    assert parse_exception_name("Conv2D.conv1.3.1.1730796695373243") is None
    assert not isinstance(parse_dump_name("Conv2D.conv1.3.1.1730796695373243"), str)


def _header(**present) -> bytes:
    w = pw.MessageWriter()
    if "version" in present:
        w.string(1, "2.0")
    if "dump_time" in present:
        w.varint(2, 1730796695373292)
    if "op_name" in present:
        w.string(6, "conv1")
    entry = pw.MessageWriter()
    for number, name in ((1, "data_type"), (2, "format"), (5, "size")):
        if name in present:
            entry.varint(number, {"data_type": 1, "format": 0, "size": 4}[name], always=True)
    if "input" in present:
        w.message(4, entry)
    return w.getvalue()


@pytest.mark.parametrize(
    "fields",
    [
        (),
        ("version",),
        ("dump_time",),
        ("op_name", "input"),
        ("version", "dump_time", "input", "size"),
        ("input", "data_type"),
        ("input", "format", "size"),
    ],
    ids=lambda f: "+".join(f) or "nothing",
)
def test_header_decoder_accepts_headers_lacking_any_field(tmp_path, fields):
    header = _header(**dict.fromkeys(fields))
    payload = b"\x00" * 4 if "size" in fields else b""
    path = tmp_path / "Add.add.1.1730796695373243"
    path.write_bytes(len(header).to_bytes(8, "little") + header + payload)
    if not header:  # 8 bytes: too short to be a dump; a byte more is a byte no tensor holds
        with pytest.raises(DumpError):
            read_dump(path)
        path.write_bytes(path.read_bytes() + b"\x00")
        with pytest.raises(DumpError, match="after its last tensor"):
            read_dump(path)
        return
    dump = read_dump(path)
    assert dump.version == ("2.0" if "version" in fields else "")
    if "input" in fields:
        (tensor,) = dump.inputs
        assert tensor.recorded == {f for f in ("data_type", "format", "size") if f in fields}
        assert tensor.has_type_and_shape == ("data_type" in fields)


@pytest.mark.parametrize("name", STATS)
def test_real_statistics_file_rows_ops_and_dtypes(name):
    facts = expectations()[name]
    stats = read_stats_csv(REAL / name)
    assert len(stats.rows) == facts["rows"]
    assert len(stats.ops) == facts["ops"]
    assert sorted({r.dtype for r in stats.rows}) == facts["dtypes"]
    io = {}
    for r in stats.rows:
        io[r.io] = io.get(r.io, 0) + 1
    assert io == facts["io"]
    assert stats.columns == facts["columns"]
    first = stats.rows[0]
    assert [first.op_type, first.op_name, first.io, str(first.slot), first.dtype] == [
        facts["first_row"][i] for i in (0, 1, 5, 6, 8)
    ]
    assert first.stats == {
        "max": float(facts["first_row"][10]),
        "min": float(facts["first_row"][11]),
        "l2norm": float(facts["first_row"][12]),
    }
    assert stats.statistics == ["max", "min", "l2norm"]


@pytest.mark.parametrize("name", ORDERS)
def test_execution_order_files_are_read(name):
    facts = expectations()[name]
    order = read_execution_order(REAL / name)
    assert len(order) + 1 == facts["rows"]  # the header row counted in the facts
    assert facts["first_row"] == ["NodeExecutionOrder-FullNameWithScope"]


@pytest.mark.parametrize("run", ["dump_data0", "dump_data1"])
def test_real_statistics_tree_leaves(run):
    tree = scan_dump_tree(REAL / "stats_dumps/msinsight-mnist" / run)
    files = [f for f in STATS if f"/{run}/" in f]
    assert len(tree.leaves) == len(files) == 10
    assert {leaf.kind for leaf in tree.leaves} == {"stats"}
    assert tree.ranks == [0]
    assert tree.iterations == ["0", "1", "2", "39"]
    got = {(leaf.model, leaf.model_id, leaf.iteration) for leaf in tree.leaves}
    want = {
        ("mnist", str(expectations()[f]["graph_id"]), str(expectations()[f]["iteration"]))
        for f in files
    }
    assert got == want
    with pytest.raises(DumpTreeError, match=r"4 iterations \(0, 1, 2, 39\); pass --iteration"):
        select_leaves(tree)
    assert len(select_leaves(tree, iteration="39")) == 3


def test_exception_dump_folder_is_one_exception_leaf():
    tree = scan_dump_tree(REAL / "dumps")
    (leaf,) = tree.leaves
    assert (leaf.kind, leaf.n_files, leaf.n_bytes) == ("exception", 11, 47157)


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    root = tmp_path_factory.mktemp("trees")
    clean = generate_case(root / "clean", n_ops=20, faults=[], graph_text=False)
    bad = generate_case(root / "bad", n_ops=20, faults=["dropped_scale"], graph_text=False)
    return root, clean, bad


def test_multi_rank_multi_iteration_tree(cases, tmp_path):
    _, clean, bad = cases
    model = clean.on_dump.parents[1].name
    tree_root = build_tree(
        tmp_path / "on",
        {(0, 0): clean.on_dump, (0, 1): clean.on_dump, (3, 0): bad.on_dump, (3, 1): bad.on_dump},
        model,
    )
    tree = scan_dump_tree(tree_root)
    assert tree.ranks == [0, 3] and tree.iterations == ["0", "1"]
    leaf = tree.leaves[0]
    assert (leaf.timestamp, leaf.rank, leaf.model, leaf.model_id, leaf.iteration, leaf.kind) == (
        "20260101120002",
        0,
        model,
        "1",
        "0",
        "tensor",
    )
    assert leaf.n_files == len(list(clean.on_dump.iterdir()))
    assert leaf.n_bytes == sum(f.stat().st_size for f in clean.on_dump.iterdir())
    with pytest.raises(DumpTreeError) as info:
        select_leaves(tree, flag="-m")
    assert "2 ranks (device ids 0, 3)" in str(info.value)
    assert "--rank R" in str(info.value) and "--rank all" in str(info.value)
    with pytest.raises(DumpTreeError, match=r"2 iterations \(0, 1\); pass --iteration I"):
        select_leaves(tree, rank=3)
    with pytest.raises(DumpTreeError, match=r"no rank 1 here; ranks .* 0, 3"):
        select_leaves(tree, rank=1)
    (picked,) = select_leaves(tree, rank=3, iteration=1)
    assert (picked.rank, picked.iteration) == (3, "1")


def test_pairs_across_sides_never_mix_ranks(cases, tmp_path):
    _, clean, bad = cases
    model_on = clean.on_dump.parents[1].name
    model_off = clean.off_dump.parents[1].name
    on = build_tree(tmp_path / "on", {(1, 0): clean.on_dump, (3, 0): bad.on_dump}, model_on)
    off = build_tree(tmp_path / "off", {(1, 0): clean.off_dump, (3, 0): clean.off_dump}, model_off)
    pairs = select_pairs(on, off, rank="all").pairs
    assert [(p.rank, p.on[0].rank, p.off[0].rank) for p in pairs] == [("1", 1, 1), ("3", 3, 3)]
    (only,) = select_pairs(on, off, rank=3).pairs
    assert (only.on[0].rank, only.off[0].rank) == (3, 3)
    one_rank = build_tree(tmp_path / "off1", {(1, 0): clean.off_dump}, model_off)
    with pytest.raises(DumpTreeError, match=r"-m .* holds 2 ranks"):
        select_pairs(on, one_rank)


def test_several_process_starts_of_a_rank_are_reduced_only_for_a_single_comparison(cases, tmp_path):
    """Two runs dumped into one path. A single comparison takes the newest time folder of the
    rank and says so; ``--rank all`` refuses each such rank (CANN writes a time folder per
    process start: a re-run, or another server's device with the same id, cannot be told
    apart), naming the time folders, and compares the others."""
    _, clean, _ = cases
    model_on = clean.on_dump.parents[1].name
    model_off = clean.off_dump.parents[1].name
    on = tmp_path / "on"
    for time in ("20260101120000", "20260101130000"):
        build_tree(on, {(0, 0): clean.on_dump, (1, 0): clean.on_dump}, model_on, time=time)
    build_tree(on, {(2, 0): clean.on_dump}, model_on, time="20260101140000")
    off_ranks = {(r, 0): clean.off_dump for r in (0, 1, 2)}
    off = build_tree(tmp_path / "off", off_ranks, model_off)
    selection = select_pairs(on, off, rank="all")
    assert [(p.rank, p.on[0].timestamp) for p in selection.pairs] == [("2", "20260101140000")]
    assert [(n.rank, n.status) for n in selection.unpaired] == [("0", 2), ("1", 2)]
    for refused in selection.unpaired:
        assert "2 process starts (time folders 20260101120000, 20260101130000)" in refused.why
        assert str(on / "20260101130000") in refused.why
    (single,) = select_pairs(on, off, rank="1").pairs
    assert single.on[0].timestamp == "20260101130000"
    notes = select_pairs(on, off, rank="1").notes
    assert notes == [
        "-m: rank 1 has dumps of 2 process starts (time folders 20260101120000, "
        "20260101130000): the newest, 20260101130000, is compared (a re-run into the same "
        "dump path); if they are different processes (two servers' device 0), point -m at "
        "the time folder to compare"
    ]


def _proto_fields(text: str, message: str) -> dict[int, str]:
    import re

    body = re.search(rf"message {message}\s*{{(.*?)\n}}", text, re.S).group(1)
    return {
        int(m.group(2)): m.group(1)
        for m in re.finditer(r"^\s*(?:repeated\s+)?\w+\s+(\w+)\s*=\s*(\d+);", body, re.M)
    }


def test_decoder_field_numbers_agree_with_the_real_dump_proto():
    """cann_config/dump_data.proto (oam-tools' copy of the dump schema) against the decoder."""
    from fusion_switch.readers import dump as dump_module

    text = (REAL / "cann_config/dump_data.proto").read_text()
    assert expectations()["cann_config/dump_data.proto"]["bytes"] == len(text.encode())
    assert _proto_fields(text, "OpInput") == dump_module._INPUT_FIELDS
    output = _proto_fields(text, "OpOutput")
    # field 11 is "offset" in this copy and "arg_index" in the newest dump_task.proto
    assert {n: v for n, v in output.items() if n != 11} == {
        n: v for n, v in dump_module._OUTPUT_FIELDS.items() if n != 11
    }
    assert output[11] == "offset" and dump_module._OUTPUT_FIELDS[11] == "arg_index"
    top = _proto_fields(text, "DumpData")
    assert {n: top[n] for n in dump_module._STRING_FIELDS} == dump_module._STRING_FIELDS
    assert {n: top[n] for n in dump_module._ENTRY_KINDS} == {
        3: "output",
        4: "input",
        5: "buffer",
        8: "space",
    }
    assert top[2] == "dump_time" and top[7] == "attr"


def test_several_models_are_matched_to_the_graph_name(cases, tmp_path):
    _, clean, _ = cases
    on = tmp_path / "on"
    build_tree(on, {(0, 0): clean.on_dump}, "resnet50")
    build_tree(on, {(0, 0): clean.on_dump}, "bert")
    off = build_tree(tmp_path / "off", {(0, 0): clean.off_dump}, "resnet50")
    asked = []

    def name():
        asked.append(1)
        return "bert"

    selection = select_pairs(on, off, graph_names=(name, lambda: "resnet50"))
    (pair,) = selection.pairs
    assert pair.on[0].model == "bert" and asked == [1]
    assert any("model folder 'bert' matches the graph name" in n for n in selection.notes)
    with pytest.raises(DumpTreeError, match=r"2 models \(bert, resnet50\) and none is named"):
        select_pairs(on, off, graph_names=(lambda: "gpt", lambda: None))
    single = select_pairs(off, off, graph_names=(name, name))  # one leaf: the name is not read
    assert len(single.pairs) == 1 and asked == [1]


class _CountingEntry:
    """A DirEntry that counts its stat() calls (one syscall each on network file systems)."""

    calls = 0

    def __init__(self, entry):
        self._entry = entry
        self.name, self.path = entry.name, entry.path

    def is_file(self):
        return self._entry.is_file()

    def is_dir(self):
        return self._entry.is_dir()

    def stat(self):
        _CountingEntry.calls += 1
        return self._entry.stat()


def test_scanning_a_tree_stats_no_dump_file_until_its_size_is_asked(cases, monkeypatch):
    """The comparison never uses a leaf's byte count; a stat per file costs a syscall per dump
    (thousands, each a round trip on NFS) before the first progress line."""
    _, clean, _ = cases
    real_scandir = os.scandir
    monkeypatch.setattr(
        "fusion_switch.readers.dumptree.os.scandir",
        lambda path: [_CountingEntry(e) for e in real_scandir(path)],
    )
    _CountingEntry.calls = 0
    (leaf,) = scan_dump_tree(clean.on_dump).leaves
    assert _CountingEntry.calls == 0
    assert leaf.n_files == len(list(clean.on_dump.iterdir()))
    assert leaf.n_bytes == sum(f.stat().st_size for f in clean.on_dump.iterdir())
    assert _CountingEntry.calls == leaf.n_files


def _leaf(folder) -> None:
    folder.mkdir(parents=True)
    (folder / "Conv2D.conv1.3.1.1700000000000000").write_bytes(b"")


@pytest.mark.parametrize("target", ["20260101130000/5/net/1/0", "device_two/net/1/0"])
def test_a_linked_rank_folder_is_the_rank_its_link_names(tmp_path, target):
    """``2 -> store/.../5`` was compared as rank 5, ``2 -> store/device_two`` not at all: the
    folders below the tree's root were read by their targets' names (a review, issue 16)."""
    root = tmp_path / "on" / "20260101120000"
    _leaf(root / "0" / "net" / "1" / "0")
    store = tmp_path / "store"
    _leaf(store / target)
    linked = store / target.split("/net/")[0]
    (root / "2").symlink_to(linked, target_is_directory=True)
    tree = scan_dump_tree(tmp_path / "on")
    assert sorted(leaf.rank for leaf in tree.leaves) == [0, 2]


def test_a_root_linked_to_a_leaf_keeps_the_time_and_rank_above_it(tmp_path):
    leaf = tmp_path / "dump" / "20260101120000" / "3" / "net" / "1" / "0"
    _leaf(leaf)
    (tmp_path / "here").symlink_to(leaf, target_is_directory=True)
    [found] = scan_dump_tree(tmp_path / "here").leaves
    assert (found.timestamp, found.rank, found.model) == ("20260101120000", 3, "net")


def test_one_rank_on_each_side_is_compared_with_a_note_when_they_differ(cases, tmp_path):
    """A review: fusion on dumped on device 0, fusion off on device 1, one leaf each. msaccucmp
    compares them; we refused with "pass --rank R", which no value of --rank satisfies."""
    _, clean, _ = cases
    on = build_tree(tmp_path / "on", {(0, 0): clean.on_dump}, clean.on_dump.parents[1].name)
    off = build_tree(tmp_path / "off", {(1, 0): clean.off_dump}, clean.off_dump.parents[1].name)
    selection = select_pairs(on, off)
    (pair,) = selection.pairs
    assert (pair.on[0].rank, pair.off[0].rank) == (0, 1)
    assert any("rank 0" in n and "rank 1" in n and "device" in n for n in selection.notes)


def test_one_iteration_on_each_side_is_compared_with_a_note_when_they_differ(cases, tmp_path):
    """A review: fusion on at iteration 7, fusion off at iteration 0, compared silently."""
    _, clean, _ = cases
    on = build_tree(tmp_path / "on", {(0, 7): clean.on_dump}, clean.on_dump.parents[1].name)
    off = build_tree(tmp_path / "off", {(0, 0): clean.off_dump}, clean.off_dump.parents[1].name)
    selection = select_pairs(on, off)
    said = [n for n in selection.notes if "iteration 7" in n and "iteration 0" in n]
    assert said, selection.notes
    alike = select_pairs(on, build_tree(tmp_path / "off7", {(0, 7): clean.off_dump}, "m"))
    assert not [n for n in alike.notes if "iteration" in n], alike.notes
