"""`compare` on dump trees whose ranks are not one device id each (a review of `--rank all`).

CANN writes one time folder per process start, and a device id is per server: a job on two
servers has two device 0. A rank is the folders above the time folder plus the device id
(``node0/0``, ``node1/0``); one device's dumps from several process starts are never paired by
a guess under ``--rank all``; step folders above the time folder (MindSpore O2, msprobe's
kernel dump) are never mixed; a rank missing at ``--iteration`` is said; a rank that proves a
rule is not hidden by another's status; the choices reach every output. Small generated
cases, compared through the command line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fusion_switch.synth.generator import generate_case

STATS = Path(__file__).resolve().parents[1] / "data" / "real" / "stats_dumps" / "msinsight-mnist"


def cli(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fusion_switch", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    root = tmp_path_factory.mktemp("cases")
    clean = generate_case(root / "clean", n_ops=20, faults=[], graph_text=False)
    bad = generate_case(root / "bad", n_ops=20, faults=["dropped_scale"], graph_text=False)
    return clean, bad


def _put(target: Path, source: Path) -> None:
    target.mkdir(parents=True)
    for f in source.iterdir():
        os.link(f, target / f.name)


def build(root: Path, cases, spec: list[tuple[str, str, str]]) -> Path:
    """``spec``: (side "on"|"off", path below the side with ``{leaf}`` for
    ``{model}/{model_id}/{iteration}`` or nothing for a flat device folder, "clean"|"bad")."""
    clean, bad = cases
    for side, rel, which in spec:
        case = clean if which == "clean" else bad
        source = case.on_dump if side == "on" else case.off_dump
        model, model_id = source.parents[1].name, source.parent.name
        rel = rel.replace("{leaf}", f"{model}/{model_id}/0").replace("{model}", model)
        _put(root / side / rel, source)
    return root


def compare(cases, root: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    clean, _ = cases
    return cli(
        "compare", "-m", root / "on", "-g", root / "off", "-f", clean.on_graph,
        "-cf", clean.off_graph, "-out", out, "--no-progress", *extra,
    )  # fmt: skip


def ranks(out: Path) -> dict[str, dict]:
    combined = json.loads((out / "ranks_summary.json").read_text(encoding="utf-8"))
    return {r["rank"]: r for r in combined["ranks"]}


def test_two_servers_device_0_are_two_ranks(cases, tmp_path):
    """node0/ and node1/ each hold a device 0: node0's was faulty, and only node1's newer time
    folder was compared ("rank 0", exit 0; node0's fault gone)."""
    root = build(tmp_path, cases, [
        ("on", "node0/20260101120001/0/{leaf}", "bad"),
        ("on", "node1/20260101120002/0/{leaf}", "clean"),
        ("off", "node0/20260101120003/0/{leaf}", "bad"),
        ("off", "node1/20260101120004/0/{leaf}", "clean"),
    ])  # fmt: skip
    out = tmp_path / "out"
    result = compare(cases, root, out, "--rank", "all")
    assert result.returncode == 1, result.stderr
    found = ranks(out)
    assert sorted(found) == ["node0/0", "node1/0"]
    assert (found["node0/0"]["status"], found["node1/0"]["status"]) == (1, 0)
    assert found["node0/0"]["suspects"]
    for rank in ("node0", "node1"):
        assert (out / rank / "rank_0" / "summary.json").is_file()
    assert "rank node0/0: " in result.stdout and "rank node1/0: " in result.stdout
    # one of them named: compared alone
    one = compare(cases, root, tmp_path / "one", "--rank", "node0/0")
    assert one.returncode == 1, one.stderr
    refused = compare(cases, root, tmp_path / "which", "--rank", "0")
    assert refused.returncode == 2 and "node0/0, node1/0" in refused.stderr, refused.stderr


def test_two_servers_started_in_the_same_second_are_compared(cases, tmp_path):
    """The same time folder name under node0/ and node1/: the whole run was refused."""
    root = build(tmp_path, cases, [
        ("on", "node0/20260101120001/0/{leaf}", "bad"),
        ("on", "node1/20260101120001/0/{leaf}", "clean"),
        ("off", "node0/20260101120003/0/{leaf}", "bad"),
        ("off", "node1/20260101120003/0/{leaf}", "clean"),
    ])  # fmt: skip
    out = tmp_path / "out"
    result = compare(cases, root, out, "--rank", "all")
    assert result.returncode == 1, result.stderr
    assert [(r, e["status"]) for r, e in ranks(out).items()] == [("node0/0", 1), ("node1/0", 0)]


def test_dumps_lists_the_ranks_as_compare_names_them(cases, tmp_path):
    root = build(tmp_path, cases, [
        ("on", "dump/node0/20260101120001/0/{leaf}", "clean"),
        ("on", "dump/node1/20260101120001/0/{leaf}", "clean"),
    ])  # fmt: skip
    listing = json.loads(cli("dumps", root / "on", "--format", "json").stdout)
    assert (listing["ranks"], listing["rank_keys"]) == ([0], ["node0/0", "node1/0"])
    assert [leaf["rank_key"] for leaf in listing["leaves"]] == ["node0/0", "node1/0"]
    text = cli("dumps", root / "on").stdout
    assert "ranks: node0/0, node1/0" in text and "rank node1/0" in text
    assert "--rank R|all" in text


def _notes(summary_path: Path) -> list[str]:
    return json.loads(summary_path.read_text(encoding="utf-8"))["inputs"]["notes"]


def test_what_was_chosen_in_the_trees_is_in_every_output(cases, tmp_path):
    """The notes on what was picked in the trees (here: the model folder named like the graph
    among two) reached stderr only: not summary.json, ranks_summary.json or --format json."""
    root = build(tmp_path, cases, [
        ("on", "20260101120001/0/{leaf}", "bad"),
        ("on", "20260101120001/0/other_model/7/0", "clean"),
        ("on", "20260101120001/1/{leaf}", "clean"),
        ("on", "20260101120001/1/other_model/7/0", "clean"),
        ("off", "20260101120003/0/{leaf}", "bad"),
        ("off", "20260101120003/1/{leaf}", "clean"),
    ])  # fmt: skip
    said = "model folder"
    out = tmp_path / "out"
    result = compare(cases, root, out, "--rank", "all", "--format", "json")
    assert result.returncode == 1, result.stderr
    printed = json.loads(result.stdout)
    assert any(said in note for note in printed["notes"]), printed["notes"]
    combined = json.loads((out / "ranks_summary.json").read_text(encoding="utf-8"))
    assert combined["notes"] == printed["notes"]
    for rank in ("rank_0", "rank_1"):
        assert any(said in note for note in _notes(out / rank / "summary.json")), rank
    # one rank: its summary.json and its --format json say it too
    one = compare(cases, root, tmp_path / "one", "--rank", "0", "--format", "json")
    assert one.returncode == 1, one.stderr
    assert any(said in note for note in json.loads(one.stdout)["inputs"]["notes"])
    assert any(said in note for note in _notes(tmp_path / "one" / "summary.json"))
    text = compare(cases, root, tmp_path / "text", "--rank", "all")
    assert any(said in line for line in text.stdout.splitlines() if line.startswith("note: "))


# device 0 of two processes (two servers, or a re-run), directly under the root: the fusion-off
# run started them in the other order, so "the newest of each side" paired different processes
TWO_STARTS = [
    ("on", "20260101120001/0/{leaf}", "bad"),
    ("on", "20260101120002/0/{leaf}", "clean"),
    ("off", "20260101120004/0/{leaf}", "bad"),
    ("off", "20260101120003/0/{leaf}", "clean"),
]


def test_one_device_of_several_process_starts_is_not_paired_by_a_guess(cases, tmp_path):
    root = build(tmp_path, cases, TWO_STARTS)
    out = tmp_path / "out"
    result = compare(cases, root, out, "--rank", "all")
    assert result.returncode == 2, result.stdout + result.stderr
    (entry,) = ranks(out).values()
    assert (entry["rank"], entry["status"], entry["out_dir"]) == ("0", 2, None)
    assert entry["verdict"].startswith("not compared: ")
    for said in ("20260101120001", "20260101120002", "time folder", "-m "):
        assert said in entry["verdict"], entry["verdict"]
    assert not (out / "rank_0").exists()
    # pointed at one time folder on each side, as the verdict says: compared
    picked = cli(
        "compare", "-m", root / "on" / "20260101120001", "-g", root / "off" / "20260101120004",
        "-f", cases[0].on_graph, "-cf", cases[0].off_graph, "-out", tmp_path / "picked",
        "--no-progress", "--rank", "all",
    )  # fmt: skip
    assert picked.returncode == 1, picked.stderr


def test_a_single_comparison_takes_the_newest_start_and_says_so_in_its_outputs(cases, tmp_path):
    """As documented for a re-run into the same dump path; the note was on stderr only."""
    root = build(tmp_path, cases, TWO_STARTS)
    out = tmp_path / "out"
    result = compare(cases, root, out, "--format", "json")
    assert result.returncode in (0, 1, 3), result.stderr
    assert json.loads(result.stdout)["inputs"]["on_dump"].startswith(
        str(root / "on" / "20260101120002")
    )
    said = [n for n in _notes(out / "summary.json") if "newest" in n]
    assert len(said) == 2, _notes(out / "summary.json")
    assert "20260101120001, 20260101120002" in said[0] and "20260101120002" in said[0]


def test_a_statistics_dump_never_replaces_the_tensor_dump_beside_it(cases, tmp_path):
    """A newer statistics dump of the same devices was taken as "the newest time folder" and
    compared as a tensor dump."""
    root = build(tmp_path, cases, [
        ("on", "20260101120001/0/{leaf}", "bad"),
        ("on", "20260101120001/1/{leaf}", "bad"),
        ("off", "20260101120003/0/{leaf}", "clean"),
        ("off", "20260101120003/1/{leaf}", "clean"),
    ])  # fmt: skip
    stats = STATS / "dump_data0" / "rank_0" / "mnist" / "0" / "0" / "statistic.csv"
    for rank in (0, 1):
        later = root / "on" / "20260101120009" / str(rank) / "net" / "2" / "0"
        later.mkdir(parents=True)
        shutil.copyfile(stats, later / "statistic.csv")
    out = tmp_path / "out"
    result = compare(cases, root, out, "--rank", "all")
    assert result.returncode == 1, result.stdout + result.stderr
    assert [(r, e["status"]) for r, e in ranks(out).items()] == [("0", 1), ("1", 1)]
    for rank in ("rank_0", "rank_1"):
        assert any(
            "statistics dump folder(s) left out" in n for n in _notes(out / rank / "summary.json")
        )


def test_a_rank_without_the_graphs_model_folder_stops_no_other_rank(cases, tmp_path):
    """Rank 1's model folders were built a minute later (another name): every rank stopped."""
    clean, _ = cases
    model_on = clean.on_dump.parents[1].name
    model_off = clean.off_dump.parents[1].name
    root = build(tmp_path, cases, [
        ("on", "20260101120001/0/{leaf}", "bad"),
        ("on", "20260101120001/0/ge_default_20260101120005_9/9/0", "clean"),
        ("on", f"20260101120001/1/{model_on}_later/2/0", "clean"),
        ("on", "20260101120001/1/ge_default_20260101120105_9/9/0", "clean"),
        ("off", "20260101120003/0/{leaf}", "bad"),
        ("off", "20260101120003/0/ge_default_20260101120004_9/9/0", "clean"),
        ("off", f"20260101120003/1/{model_off}_later/1/0", "clean"),
        ("off", "20260101120003/1/ge_default_20260101120104_9/9/0", "clean"),
    ])  # fmt: skip
    out = tmp_path / "out"
    result = compare(cases, root, out, "--rank", "all")
    found = ranks(out)
    assert found["0"]["status"] == 1 and found["0"]["suspects"], result.stderr
    assert found["1"]["status"] == 2 and found["1"]["out_dir"] is None
    assert "none is named like the graph" in found["1"]["verdict"]
    assert f"{model_on}_later" in found["1"]["verdict"]
    assert result.returncode == 1, "rank 0 proves a rule: a failed rank does not hide it"


def test_a_rank_that_proves_a_rule_is_not_hidden_by_a_rank_not_compared(cases, tmp_path):
    """The run's exit status was the largest rank's: rank 1 dumped with fusion on only (3)
    turned rank 0's proven rule (1) into "evidence missing"."""
    root = build(tmp_path, cases, [
        ("on", "20260101120001/0/{leaf}", "bad"),
        ("on", "20260101120001/1/{leaf}", "clean"),
        ("off", "20260101120003/0/{leaf}", "bad"),
    ])  # fmt: skip
    out = tmp_path / "out"
    result = compare(cases, root, out, "--rank", "all")
    assert result.returncode == 1, result.stdout + result.stderr
    combined = json.loads((out / "ranks_summary.json").read_text(encoding="utf-8"))
    assert combined["exit_status"] == 1
    assert [(r["rank"], r["status"]) for r in combined["ranks"]] == [("0", 1), ("1", 3)]
    assert "rank 1: not compared" in result.stdout


@pytest.mark.parametrize(
    ("statuses", "combined"),
    [
        ([0, 0], 0),
        ([0, 3], 3),
        ([3, 2, 0], 2),
        ([1, 3], 1),
        ([2, 1], 1),
        ([0, 1, 2, 3], 1),
        ([], 0),
    ],
)
def test_the_ranks_statuses_combine_in_the_single_runs_order(statuses, combined):
    from fusion_switch.diagnose.exit_status import ranks_exit_status

    assert ranks_exit_status(statuses) == combined


def test_a_rank_without_the_iteration_asked_for_is_said_not_compared(cases, tmp_path):
    """Rank 2 (faulty) dumped one step ahead: `--iteration 5` showed ranks 0 and 1, exit 0,
    without a word of rank 2."""
    root = build(tmp_path, cases, [
        ("on", "20260101120001/0/{model}/2/5", "clean"),
        ("on", "20260101120001/1/{model}/2/5", "clean"),
        ("on", "20260101120001/2/{model}/2/6", "bad"),
        ("off", "20260101120003/0/{model}/1/5", "clean"),
        ("off", "20260101120003/1/{model}/1/5", "clean"),
        ("off", "20260101120003/2/{model}/1/6", "bad"),
    ])  # fmt: skip
    out = tmp_path / "out"
    result = compare(cases, root, out, "--rank", "all", "--iteration", "5")
    assert result.returncode == 3, result.stdout + result.stderr
    found = ranks(out)
    assert [(r, e["status"]) for r, e in found.items()] == [("0", 0), ("1", 0), ("2", 3)]
    assert "no dump at iteration 5" in found["2"]["verdict"]
    assert "iterations there: 6" in found["2"]["verdict"]
    assert "rank 2: not compared" in result.stdout


# MindSpore's Ascend O2 dump: {path}/{step_id}/{time}/{device_id}/{model}/{model_id}/{iteration}
O2_STEPS = [
    ("on", "0/20260101120001/0/{leaf}", "clean"),
    ("on", "1/20260101120009/0/{leaf}", "bad"),
    ("off", "3/20260101120003/0/{leaf}", "bad"),
    ("off", "5/20260101120004/0/{leaf}", "clean"),
]


def test_step_folders_are_never_mixed(cases, tmp_path):
    """Fusion-on step 1 was compared with fusion-off step 5 (the step folders were not read:
    device 0's newest time folder on each side) and a rule was "proven" (exit 1)."""
    root = build(tmp_path, cases, O2_STEPS)
    result = compare(cases, root, tmp_path / "out")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "holds 2 steps (0, 1" in result.stderr and "--step S" in result.stderr
    assert not (tmp_path / "out" / "summary.json").exists()
    one = compare(cases, root, tmp_path / "one", "--step", "1")
    assert one.returncode == 2 and "no step 1 here; steps found: 3, 5" in one.stderr, one.stderr
    # one step on each side, not the same: refused too
    other = build(tmp_path / "other", cases, [O2_STEPS[1], O2_STEPS[2]])
    differ = compare(cases, other, tmp_path / "differ")
    assert differ.returncode == 2, differ.stdout + differ.stderr
    assert "-m holds step 1 and -g step 3" in differ.stderr


def test_the_same_step_is_compared_on_both_sides(cases, tmp_path):
    root = build(tmp_path, cases, [
        ("on", "0/20260101120001/0/{leaf}", "bad"),
        ("on", "1/20260101120002/0/{leaf}", "clean"),
        ("on", "1/20260101120002/1/{leaf}", "clean"),
        ("off", "0/20260101120003/0/{leaf}", "bad"),
        ("off", "1/20260101120004/0/{leaf}", "clean"),
        ("off", "1/20260101120004/1/{leaf}", "clean"),
    ])  # fmt: skip
    faulty = compare(cases, root, tmp_path / "s0", "--step", "0", "--format", "json")
    assert faulty.returncode == 1, faulty.stderr
    assert "/0/20260101120001/" in json.loads(faulty.stdout)["inputs"]["on_dump"]
    out = tmp_path / "all"
    every = compare(cases, root, out, "--step", "0", "--rank", "all")
    assert every.returncode == 1, every.stdout + every.stderr
    found = ranks(out)
    assert [(r, e["status"]) for r, e in found.items()] == [("0", 1), ("1", 3)]
    assert "no dump at step 0" in found["1"]["verdict"]
    clean = compare(cases, root, tmp_path / "s1", "--step", "1", "--rank", "all")
    assert clean.returncode == 0, clean.stdout + clean.stderr


def test_msprobe_kernel_dump_devices_are_ranks(cases, tmp_path):
    """msprobe's kernel dump, {dump_path}/step{N}/{time}/{device_id}/{files}: the device ids
    were read as iterations."""
    root = build(tmp_path, cases, [
        ("on", "step0/20260101120001/0", "clean"),
        ("on", "step0/20260101120001/1", "bad"),
        ("off", "step0/20260101120003/0", "clean"),
        ("off", "step0/20260101120003/1", "bad"),
    ])  # fmt: skip
    listing = json.loads(cli("dumps", root / "on", "--format", "json").stdout)
    assert (listing["rank_keys"], listing["iterations"], listing["steps"]) == (
        ["0", "1"],
        [],
        ["0"],
    )
    out = tmp_path / "out"
    result = compare(cases, root, out, "--rank", "all")
    assert result.returncode == 1, result.stdout + result.stderr
    assert [(r, e["status"]) for r, e in ranks(out).items()] == [("0", 0), ("1", 1)]


def test_ranks_summary_json_replaces_a_planted_link_instead_of_writing_through_it(cases, tmp_path):
    root = build(tmp_path, cases, [
        ("on", "20260101120001/0/{leaf}", "clean"),
        ("off", "20260101120003/0/{leaf}", "clean"),
    ])  # fmt: skip
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    (out / "ranks_summary.json").symlink_to(victim)
    result = compare(cases, root, out, "--rank", "all")
    assert result.returncode == 0, result.stdout + result.stderr
    assert victim.read_text() == "keep me\n"
    assert not (out / "ranks_summary.json").is_symlink()
    assert ranks(out)["0"]["status"] == 0
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]


def _stats_leaf(root: Path, rel: str, source: str) -> None:
    """``source``: a real MindSpore statistic.csv, ``dump_data0/rank_0/mnist/{graph}/{it}``."""
    (root / rel).mkdir(parents=True)
    shutil.copyfile(STATS / source / "statistic.csv", root / rel / "statistic.csv")


A, B = "dump_data0/rank_0/mnist/0/0", "dump_data0/rank_0/mnist/0/1"  # one graph, two iterations


def _stats_compare(root: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return cli(
        "compare", "-m", root / "on", "-g", root / "off", "-out", out, "--no-progress", *extra
    )


def test_statistics_of_two_servers_are_compared_server_by_server(tmp_path):
    """node0's and node1's device 0 were one rank, and the second fusion-off statistics file
    replaced the first: node0's fusion-on statistics were compared with node1's fusion-off
    ones ("drift: 57 tensors", exit 1)."""
    for side, times in (
        ("on", ("20260101120001", "20260101120002")),
        ("off", ("20260101120003", "20260101120004")),
    ):
        _stats_leaf(tmp_path / side, f"node0/{times[0]}/0/net/1/0", A)
        _stats_leaf(tmp_path / side, f"node1/{times[1]}/0/net/1/0", B)
    out = tmp_path / "out"
    result = _stats_compare(tmp_path, out, "--rank", "all", "--format", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    summary = json.loads(result.stdout)
    assert summary["first_divergence"] is None and not summary["counts"].get("drift")


def test_two_statistics_folders_of_one_graph_and_iteration_are_not_compared(tmp_path):
    """One rank's statistics of a graph and iteration in two time folders (two processes, or
    a re-run): one silently replaced the other."""
    _stats_leaf(tmp_path / "on", "20260101120001/0/net/1/0", A)
    _stats_leaf(tmp_path / "on", "20260101120001/0/net/2/0", A)
    _stats_leaf(tmp_path / "off", "20260101120003/0/net/1/0", A)
    _stats_leaf(tmp_path / "off", "20260101120004/0/net/1/0", B)
    _stats_leaf(tmp_path / "off", "20260101120003/0/net/2/0", A)
    out = tmp_path / "out"
    result = _stats_compare(tmp_path, out, "--format", "json")
    assert result.returncode == 3, result.stdout + result.stderr
    summary = json.loads(result.stdout)
    said = [n for n in summary["notes"] if "not compared" in n and "graph 1" in n]
    assert said and "20260101120003, 20260101120004" in said[0], summary["notes"]
    assert summary["counts"]["compared"] > 0  # graph 2 is compared
    assert summary["first_divergence"] is None


def test_a_statistics_rank_on_one_side_only_is_said(tmp_path):
    _stats_leaf(tmp_path / "on", "20260101120001/0/net/1/0", A)
    _stats_leaf(tmp_path / "on", "20260101120001/1/net/1/0", A)
    _stats_leaf(tmp_path / "off", "20260101120003/0/net/1/0", A)
    out = tmp_path / "out"
    result = _stats_compare(tmp_path, out, "--rank", "all", "--format", "json")
    assert result.returncode == 3, result.stdout + result.stderr
    notes = json.loads(result.stdout)["notes"]
    assert any("rank 1 has dumps under -m" in n and "not compared" in n for n in notes), notes


def test_a_rank_compared_side_by_side_says_what_was_chosen_once(cases, tmp_path):
    """Each rank's process chooses again in its leaf: a note it sees too (two iterations) was
    written twice into its summary.json, unlike the same rank compared in turn."""
    root = build(tmp_path, cases, [
        ("on", "20260101120001/0/{model}/2/0", "clean"),
        ("on", "20260101120001/1/{model}/2/0", "clean"),
        ("off", "20260101120003/0/{model}/1/1", "clean"),
        ("off", "20260101120003/1/{model}/1/1", "clean"),
    ])  # fmt: skip
    for way, workers in (("turn", "1"), ("side", "2")):
        out = tmp_path / way
        result = compare(cases, root, out, "--rank", "all", "--workers", workers)
        assert result.returncode == 0, result.stdout + result.stderr
        for rank in ("rank_0", "rank_1"):
            said = [n for n in _notes(out / rank / "summary.json") if "iteration 1" in n]
            assert len(said) == 1, (way, _notes(out / rank / "summary.json"))
