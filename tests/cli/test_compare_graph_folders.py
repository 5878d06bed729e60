"""Graph folders as ``-f``/``-cf`` on a graph large enough for the job's helper process (issue
16, memory): the fusion-off graph is picked in a forked helper, so this process never holds it
(it holds the fusion-on graph, which the job needs anyway). Same pick, same notes, same errors,
same outputs as with the graph files."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from fusion_switch.cli import build_parser, main
from fusion_switch.cli.compare_tree import plan_runs
from fusion_switch.compare.forked import close_ahead
from fusion_switch.readers import graph as graph_module
from fusion_switch.readers.dumpdir import scan_dump_dir
from fusion_switch.readers.graph import GraphError, drop_handed
from fusion_switch.readers.graph_folder import pick_graph
from fusion_switch.synth.generator import generate_case


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    root = tmp_path_factory.mktemp("folders")
    made = generate_case(root / "case", n_ops=40, faults=["dropped_scale"], graph_text=False)
    assert os.path.getsize(made.off_graph) > 64 << 10  # the size the job forks a helper for
    return made


def _folder(root: Path, graph: Path, side: str) -> Path:
    folder = root / f"graphs_{side}"
    folder.mkdir()
    shutil.copyfile(graph, folder / f"ge_proto_{side}_Build.json")
    unrelated = {"graph": [{"name": "u", "op": [{"name": "unrelated", "type": "Relu"}]}]}
    (folder / f"other_{side}.json").write_text(json.dumps(unrelated))
    sections = graph.parent / "fusion_result.json"  # found next to the graph, as with the file
    if sections.is_file():
        shutil.copyfile(sections, folder / sections.name)
    return folder


@pytest.fixture
def read_log(monkeypatch, tmp_path):
    """A file with one line (pid, file name) per graph read, forked children's too."""
    log = tmp_path / "reads.log"
    real = graph_module.read_graph

    def counting(path, *args, **kwargs):
        with open(log, "a") as out:
            out.write(f"{os.getpid()} {Path(path).name}\n")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(graph_module, "read_graph", counting)
    return log


@pytest.fixture
def reads(read_log):
    """The graph files this process read, sorted."""
    log = read_log

    def here() -> list[str]:
        lines = log.read_text().splitlines() if log.exists() else []
        return sorted(name for pid, name in (line.split(" ", 1) for line in lines)
                      if int(pid) == os.getpid())  # fmt: skip

    return here


def _args(case, on: Path, off: Path, out: Path, *extra: str):
    return build_parser("compare").parse_args(
        [
            *("compare", "-m", str(case.on_dump), "-g", str(case.off_dump)),
            *("-f", str(on), "-cf", str(off), "-out", str(out), "--no-progress", *extra),
        ]
    )


def test_the_fusion_off_graph_is_picked_in_a_helper_not_held_here(case, tmp_path, reads, capsys):
    on, off = _folder(tmp_path, case.on_graph, "on"), _folder(tmp_path, case.off_graph, "off")
    try:
        plan = plan_runs(_args(case, on, off, tmp_path / "out"))
        ns = plan.runs[0][1]
        assert (Path(ns.on_graph).name, Path(ns.off_graph).name) == (
            "ge_proto_on_Build.json",
            "ge_proto_off_Build.json",
        )
        # this process read the fusion-on candidates only; the fusion-off graph is not kept
        assert reads() == ["ge_proto_on_Build.json", "other_on.json"]
        assert [path.name for path in graph_module._HANDED] == ["ge_proto_on_Build.json"]
        notes = capsys.readouterr().err.splitlines()
        expected = [
            pick_graph(folder, scan_dump_dir(dump).op_names, flag, keep=False)[1]
            for folder, dump, flag in ((on, case.on_dump, "-f"), (off, case.off_dump, "-cf"))
        ]
        assert notes == [f"fusion-switch compare: note: {why}" for why in expected]
    finally:
        close_ahead()  # the picking helper, which a job would have taken on
        for folder in (on, off):
            for path in folder.iterdir():
                drop_handed(path)


def test_a_bad_fusion_off_folder_is_reported_as_before(case, tmp_path, capsys):
    on, off = _folder(tmp_path, case.on_graph, "on"), tmp_path / "broken"
    off.mkdir()
    (off / "model.json").write_text('{"graph": [' + " " * (70 << 10) + "\n  ]x")
    try:
        status = main(["compare", *_args_list(case, on, off, tmp_path / "out")])
        assert status == 2
        error = capsys.readouterr().err.splitlines()[-1]
        with pytest.raises(GraphError) as here:  # the same pick in this process
            pick_graph(off, scan_dump_dir(case.off_dump).op_names, "-cf", keep=False)
        assert error == f"fusion-switch compare: error: {here.value}"
        assert "model.json:2:4: invalid JSON: Expecting ',' delimiter" in error
    finally:
        for path in on.iterdir():
            drop_handed(path)


def _args_list(case, on, off, out) -> list[str]:
    return [
        *("-m", str(case.on_dump), "-g", str(case.off_dump), "-f", str(on), "-cf", str(off)),
        *("-out", str(out), "--no-progress", "--no-replay", "--workers", "2"),
    ]


def test_graph_folders_give_the_outputs_of_the_graph_files(case, tmp_path, capsys):
    on, off = _folder(tmp_path, case.on_graph, "on"), _folder(tmp_path, case.off_graph, "off")
    outputs = {}
    for label, graphs in (("files", (case.on_graph, case.off_graph)), ("folders", (on, off))):
        out = tmp_path / label
        status = main(["compare", *_args_list(case, *graphs, out)])
        capsys.readouterr()
        (csv,) = out.glob("result_*.csv")
        summary = json.loads((out / "summary.json").read_text())
        outputs[label] = (status, csv.read_bytes(), summary["verdict"], summary["suspects"])
    assert outputs["files"] == outputs["folders"]


@pytest.mark.parametrize("replay", [False, True], ids=["no-replay", "replay"])
def test_a_fusion_off_graph_picked_from_a_folder_is_read_once(case, tmp_path, read_log, replay):
    """The helper that picks the fusion-off graph from its folder goes on to digest it (and,
    with the replay, stays with it for the replay), as the helper of a graph file does: the
    job's own helper read the picked file again, and without a helper kept with the graph
    the replay read it a third time (issue 16: ~0.25 s of a 5,000-op run's wall)."""
    on, off = _folder(tmp_path, case.on_graph, "on"), _folder(tmp_path, case.off_graph, "off")
    extra = [] if replay else ["--no-replay"]
    outputs = {}
    try:
        for label, graphs in (("files", (case.on_graph, case.off_graph)), ("folders", (on, off))):
            out = tmp_path / label
            read_log.unlink(missing_ok=True)
            status = main(["compare", *_args_list(case, *graphs, out)[:-3], *extra])
            (csv,) = out.glob("result_*.csv")
            summary = json.loads((out / "summary.json").read_text())
            outputs[label] = (status, csv.read_bytes(), summary["verdict"], summary["suspects"])
            names = [line.split(" ", 1)[1] for line in read_log.read_text().splitlines()]
            off_name = Path(graphs[1]).name if label == "files" else "ge_proto_off_Build.json"
            assert names.count(off_name) == 1, (label, names)
    finally:
        for folder in (on, off):
            for path in folder.iterdir():
                drop_handed(path)
    assert outputs["files"] == outputs["folders"]


@pytest.mark.parametrize("replay", [False, True], ids=["no-replay", "replay"])
def test_a_job_that_fails_after_the_pick_leaves_no_helper(case, tmp_path, replay, monkeypatch):
    """The picking helper goes on as the job's digest helper (kept for the replay when it
    runs): a job that stops before taking it (here a metric name it refuses) ends it."""
    import multiprocessing

    from fusion_switch.cli import compare_ahead
    from fusion_switch.compare import forked

    started = []
    real = compare_ahead.pick_fusion_off_graph_ahead

    def recording(*a, **k):
        call = real(*a, **k)
        started.append(call)
        return call

    monkeypatch.setattr(compare_ahead, "pick_fusion_off_graph_ahead", recording)
    on, off = _folder(tmp_path, case.on_graph, "on"), _folder(tmp_path, case.off_graph, "off")
    extra = [] if replay else ["--no-replay"]
    try:
        args = [*_args_list(case, on, off, tmp_path / "out")[:-3], *extra, "-alg", "NoSuchMetric"]
        assert main(["compare", *args]) == 2
        assert len(started) == 1 and started[0] is not None  # the helper ran
        assert not forked._AHEAD
        assert multiprocessing.active_children() == []
    finally:
        for folder in (on, off):
            for path in folder.iterdir():
                drop_handed(path)
