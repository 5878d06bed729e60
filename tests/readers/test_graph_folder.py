"""A graph folder given as ``-f``/``-cf``: the pick (file, counts, ties, errors) and the picked
graph handed on to the job instead of being read twice (issue 16: +1.1 s at 5,000 ops)."""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from pathlib import Path

import pytest
from fusion_switch.cli import main
from fusion_switch.readers import graph as graph_module
from fusion_switch.readers.graph import GraphError, drop_handed, hand_on, load_graph
from fusion_switch.readers.graph_folder import pick_graph
from fusion_switch.synth.generator import generate_case


def _model(*names: str) -> dict:
    return {"graph": [{"name": "g", "op": [{"name": n, "type": "Relu", "id": i} for i, n in
                                            enumerate(names)]}]}  # fmt: skip


@pytest.fixture
def folder(tmp_path):
    found = tmp_path / "graphs"
    found.mkdir()
    (found / "ge_proto_00001_a_Build.txt").write_text(
        'graph { name: "a" op { name: "x/y" type: "Relu" } op { name: "z" type: "Relu" } }\n'
    )
    (found / "b.json").write_text(json.dumps(_model("x_y", "z", "w")))
    (found / "c.json").write_text(json.dumps(_model("z", "q")))
    (found / "broken.json").write_text('{"graph": [')
    (found / "fusion_result.json").write_text("{}")
    yield found
    for path in found.iterdir():
        drop_handed(path)


class _Reads:
    """How often each graph file is really read (parsed), here or in a process forked from
    here (the fusion-off graph's helper): each read appends a line to a log file."""

    def __init__(self, log: Path) -> None:
        self.log = log

    def counts(self) -> Counter:
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        return Counter(lines)

    def __getitem__(self, name: str) -> int:
        return self.counts()[name]

    def __eq__(self, other: object) -> bool:
        return self.counts() == other

    def __repr__(self) -> str:
        return repr(self.counts())


@pytest.fixture
def reads(monkeypatch, tmp_path):
    counted = _Reads(tmp_path / "reads.log")
    real = graph_module.read_graph

    def counting(path, *args, **kwargs):
        with open(counted.log, "a") as log:
            log.write(Path(path).name + "\n")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(graph_module, "read_graph", counting)
    return counted


def test_the_pick_its_counts_ties_and_note(folder, reads):
    picked, why = pick_graph(folder, ["x_y", "z", "w", "nowhere"], "-cf")
    assert picked == folder / "b.json"
    # the graph of the op no graph names may be the one that could not be read (a review: a
    # rank's truncated graph was never mentioned once another graph named some of its ops)
    assert why.startswith(
        f"-cf: picked b.json in {folder}: it names 3 of the 4 dumped ops (of 4 graphs); "
        "1 could not be read ("
    )
    assert "broken.json:1:12: invalid JSON" in why
    picked, why = pick_graph(folder, ["x_y", "z"])  # "x/y" is dumped as x_y
    assert picked == folder / "b.json"  # 2 each; b.json comes first by name
    assert why.endswith(
        "(of 4 graphs); as many as ge_proto_00001_a_Build.txt (first by name taken)"
    )
    assert reads["broken.json"] == 2


def test_no_graph_names_a_dumped_op(folder):
    with pytest.raises(GraphError) as caught:
        pick_graph(folder, ["nothing"], "-f")
    assert "-f: none of the 4 graphs here names an op of the dump; 1 could not be read (" in str(
        caught.value
    )
    assert "broken.json:1:12: invalid JSON" in str(caught.value)


def test_the_picked_graph_is_handed_on_once(folder, reads):
    picked, _ = pick_graph(folder, ["x_y", "z", "w"])
    assert reads == {"ge_proto_00001_a_Build.txt": 1, "b.json": 1, "c.json": 1, "broken.json": 1}
    graph = load_graph(str(picked))  # the job names the file as a string
    assert reads["b.json"] == 1 and [op.name for op in graph.ops] == ["x_y", "z", "w"]
    assert graph.path == picked
    again = load_graph(picked)  # kept for one use only
    assert reads["b.json"] == 2 and again is not graph


def test_the_same_folder_for_both_sides_hands_on_both_graphs(folder, reads):
    first, _ = pick_graph(folder, ["x_y", "z", "w"], "-f")
    second, _ = pick_graph(folder, ["z", "q"], "-cf")
    assert (first.name, second.name) == ("b.json", "c.json")
    assert (reads["b.json"], reads["c.json"]) == (1, 2)  # b.json kept from the first pick
    load_graph(first), load_graph(second)
    assert (reads["b.json"], reads["c.json"]) == (1, 2)


def test_the_same_pick_again_reads_no_graph(folder, reads):
    """``--rank all`` picks each rank's graph from the same folder, and the ranks of one model
    dump the same ops: every candidate was read again for every rank (64 ranks of an LLM: 64
    times). The same folder, unchanged, and the same dumped ops give the same pick unread
    when it is asked to be remembered (a single run's pick is not: it asks once)."""
    first = pick_graph(folder, ["x_y", "z", "w"], "-cf", keep=False, remember=True)
    once = reads.counts()
    assert once["b.json"] == 1 and once["c.json"] == 1
    assert pick_graph(folder, ["w", "z", "x_y"], "-cf", keep=False, remember=True) == first
    assert reads.counts() == once
    # other dumped ops (another pipeline stage), or a candidate changed: read again
    assert pick_graph(folder, ["z", "q"], "-cf", keep=False, remember=True)[0].name == "c.json"
    assert (reads["b.json"], reads["c.json"]) == (2, 2)
    changed = folder / "b.json"
    changed.write_text(json.dumps(_model("x_y", "z", "w", "v")))
    stat = changed.stat()
    os.utime(changed, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    again = pick_graph(folder, ["x_y", "z", "w"], "-cf", keep=False, remember=True)
    assert again[0] == first[0] and (reads["b.json"], reads["c.json"]) == (3, 3)
    # the note is the pick's own, for its flag
    assert pick_graph(folder, ["x_y", "z", "w"], "-f", keep=False, remember=True)[1].startswith(
        "-f: picked"
    )


def test_a_pick_for_several_runs_keeps_nothing(folder, reads):
    picked, _ = pick_graph(folder, ["x_y", "z", "w"], keep=False)
    assert not graph_module._HANDED
    load_graph(picked)
    assert reads["b.json"] == 2


def test_a_graph_changed_after_the_pick_is_read_again(folder, reads):
    picked, _ = pick_graph(folder, ["x_y", "z", "w"])
    picked.write_text(json.dumps(_model("x_y", "z", "w", "new")))
    stat = picked.stat()
    os.utime(picked, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert [op.name for op in load_graph(picked).ops] == ["x_y", "z", "w", "new"]
    assert reads["b.json"] == 2


def test_only_two_graphs_are_kept(folder, reads):
    graphs = [load_graph(folder / name) for name in ("b.json", "c.json")]
    graphs.append(load_graph(folder / "ge_proto_00001_a_Build.txt"))
    for graph in graphs:
        hand_on(graph)
    assert len(graph_module._HANDED) == 2
    load_graph(folder / "b.json")  # the oldest was let go
    assert reads["b.json"] == 2


def test_compare_with_graph_folders_reads_each_graph_once(tmp_path, reads):
    """The command line: each candidate is read once, by the pick; the job does not read the
    fusion-on graph again. The fusion-off graphs (over 64 KB here, as a real model's) are
    picked in a helper process, so this one never holds them (issue 16: memory); that helper
    goes on to digest the picked one as the job's helper (it was read there a second time)."""
    case = generate_case(tmp_path / "case", n_ops=12, faults=["dropped_scale"], graph_text=False)
    folders = {}
    for side, graph in (("on", case.on_graph), ("off", case.off_graph)):
        folders[side] = tmp_path / f"graphs_{side}"
        folders[side].mkdir()
        shutil.copyfile(graph, folders[side] / f"ge_proto_{side}_Build.json")
        (folders[side] / f"other_{side}.json").write_text(json.dumps(_model("unrelated")))
    status = main(
        [
            *("compare", "-m", str(case.on_dump), "-g", str(case.off_dump)),
            *("-f", str(folders["on"]), "-cf", str(folders["off"])),
            *("-out", str(tmp_path / "out"), "--no-progress", "--no-replay", "--workers", "1"),
        ]
    )
    assert status in (0, 1)
    assert list((tmp_path / "out").glob("result_*.csv"))
    assert reads == {
        "ge_proto_on_Build.json": 1,
        "other_on.json": 1,
        "ge_proto_off_Build.json": 1,
        "other_off.json": 1,
    }
    assert not graph_module._HANDED  # nothing left behind in this process
