"""`fusion-switch dumps DIR` on the real exception and statistics dumps and on generated
multi-rank trees; compare on statistics trees and on multi-rank / multi-iteration trees."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fusion_switch.synth.generator import generate_case

REAL = Path(__file__).resolve().parents[1] / "data" / "real"
FACTS = json.loads((REAL / "expectations.json").read_text(encoding="utf-8"))["files"]
STATS = REAL / "stats_dumps" / "msinsight-mnist"


def cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fusion_switch", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


def build_tree(root: Path, leaves: dict[tuple[int, int], Path], model: str) -> Path:
    for (rank, iteration), source in leaves.items():
        target = root / "20260101120002" / str(rank) / model / "1" / str(iteration)
        target.mkdir(parents=True)
        for f in source.iterdir():
            shutil.copyfile(f, target / f.name)
    return root


def test_dumps_lists_the_real_exception_dumps_file_by_file():
    result = cli("dumps", str(REAL / "dumps"), "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["kinds"] == ["exception"] and data["files"] == 11
    (leaf,) = data["leaves"]
    names = sorted(n.split("/")[-1] for n in FACTS if n.startswith("dumps/"))
    assert [f["file"] for f in leaf["exception_files"]] == names
    for item in leaf["exception_files"]:
        facts = FACTS[f"dumps/Sayout-adversial_poison/{item['file']}"]
        assert item["buffers"] == [i["size"] for i in facts["inputs"]]
        assert (item["stream_id"], item["task_id"], item["time"]) == tuple(
            facts["file_name"]["fields"]
        )
        assert item["dump_time"] == facts["dump_time"]
        assert item["op_name"] is None and item["dtypes"] == ["no dtype or shape recorded"]
    assert leaf["ops"] == 0  # "exception_info" is no op type and "1026" no op name
    text = cli("dumps", str(REAL / "dumps")).stdout
    assert "[exception dumps]" in text and "no dtype or shape recorded" in text
    assert "DT_UNDEFINED" not in text and "NCHW" not in text


@pytest.mark.parametrize("run", ["dump_data0", "dump_data1"])
def test_dumps_lists_a_real_statistics_tree(run):
    result = cli("dumps", str(STATS / run), "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["kinds"] == ["stats"]
    assert (data["ranks"], data["models"]) == ([0], ["mnist"])
    assert (data["model_ids"], data["iterations"]) == (["0", "1", "2", "3"], ["0", "1", "2", "39"])
    for leaf in data["leaves"]:
        name = f"stats_dumps/msinsight-mnist/{run}/rank_0/mnist/{leaf['model_id']}/"
        facts = FACTS[name + f"{leaf['iteration']}/statistic.csv"]
        assert (leaf["rows"], leaf["ops"], leaf["io"]) == (facts["rows"], facts["ops"], facts["io"])
        assert leaf["dtypes"] == facts["dtypes"] and leaf["bytes"] == facts["bytes"]
        assert "tensor metrics and replay need tensor dumps" in leaf["note"]


def test_dumps_on_a_folder_without_dumps_exits_2(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    result = cli("dumps", str(tmp_path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert str(tmp_path) in result.stderr and "no dump files" in result.stderr


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    root = tmp_path_factory.mktemp("ranks")
    clean = generate_case(root / "clean", n_ops=20, faults=[], graph_text=True)
    bad = generate_case(root / "bad", n_ops=20, faults=["dropped_scale"], graph_text=True)
    model_on, model_off = clean.on_dump.parents[1].name, clean.off_dump.parents[1].name
    on = build_tree(
        root / "on",
        {(0, 0): clean.on_dump, (0, 1): clean.on_dump, (1, 0): bad.on_dump, (1, 1): bad.on_dump},
        model_on,
    )
    off = build_tree(
        root / "off",
        {(r, i): clean.off_dump for r in (0, 1) for i in (0, 1)},
        model_off,
    )
    return root, clean, on, off


def test_dumps_lists_ranks_iterations_ops_dtypes_and_bytes(trees):
    _, clean, on, _ = trees
    data = json.loads(cli("dumps", str(on), "--format", "json").stdout)
    assert (data["ranks"], data["iterations"]) == ([0, 1], ["0", "1"])
    assert data["timestamps"] == ["20260101120002"]
    files = list(clean.on_dump.iterdir())
    for leaf in data["leaves"]:
        assert leaf["kind"] == "tensor" and leaf["files"] == len(files)
        assert leaf["bytes"] == sum(f.stat().st_size for f in files)
        assert leaf["ops"] == len(files) and "DT_FLOAT16" in leaf["dtypes"]
    text = cli("dumps", str(on)).stdout
    assert "ranks (device ids): 0, 1" in text and "--rank R|all and --iteration I" in text


def compare(case, on, off, out, *extra):
    return cli(
        "compare", "-m", str(on), "-g", str(off), "-f", str(case.on_graph),
        "-cf", str(case.off_graph), "-out", str(out), "--no-progress", *extra,
    )  # fmt: skip


def test_compare_stops_before_comparing_when_ranks_are_not_named(trees, tmp_path):
    _, clean, on, off = trees
    result = compare(clean, on, off, tmp_path / "out")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "holds 2 ranks (device ids 0, 1)" in result.stderr
    assert "--rank R" in result.stderr and "--rank all" in result.stderr
    assert not (tmp_path / "out" / "summary.json").exists()
    result = compare(clean, on, off, tmp_path / "out", "--rank", "1")
    assert result.returncode == 2 and "2 iterations (0, 1); pass --iteration I" in result.stderr


def test_compare_one_rank_and_iteration_uses_that_leaf_on_both_sides(trees, tmp_path):
    _, clean, on, off = trees
    result = compare(clean, on, off, tmp_path / "out", "--rank", "1", "--iteration", "0")
    assert result.returncode == 1, result.stderr  # rank 1 holds the faulty run
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["inputs"]["on_dump"].endswith("/1/" + on_leaf_tail(clean, "0"))
    assert "/20260101120002/1/" in summary["inputs"]["off_dump"]
    assert summary["suspects"][0]["rule"]
    clean_rank = compare(clean, on, off, tmp_path / "out0", "--rank", "0", "--iteration", "1")
    assert clean_rank.returncode == 0, clean_rank.stderr + clean_rank.stdout


def on_leaf_tail(case, iteration: str) -> str:
    return f"{case.on_dump.parents[1].name}/1/{iteration}"


def test_compare_rank_all_reports_per_rank(trees, tmp_path):
    _, clean, on, off = trees
    out = tmp_path / "out"
    result = compare(clean, on, off, out, "--rank", "all", "--iteration", "1")
    assert result.returncode == 1, result.stderr
    combined = json.loads((out / "ranks_summary.json").read_text())
    assert [(r["rank"], r["status"]) for r in combined["ranks"]] == [("0", 0), ("1", 1)]
    assert combined["ranks"][1]["suspects"]
    for rank in (0, 1):
        assert (out / f"rank_{rank}" / "summary.json").is_file()
    assert "rank 0: " in result.stdout and "rank 1: " in result.stdout


def test_compare_picks_the_graph_from_a_folder(trees, tmp_path):
    _, clean, on, off = trees
    folder = tmp_path / "graphs"
    folder.mkdir()
    shutil.copyfile(clean.on_graph_txt, folder / "ge_proto_00002_graph_2_Build.txt")
    shutil.copyfile(clean.off_graph_txt, folder / "ge_proto_00001_graph_1_Build.txt")
    (folder / "ge_proto_00003_unrelated_Build.txt").write_text('graph { name: "other" }\n')
    result = cli(
        "compare", "-m", str(on), "-g", str(off), "-f", str(folder), "-cf", str(folder),
        "-out", str(tmp_path / "out"), "--no-progress", "--rank", "0", "--iteration", "0",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "-f: picked ge_proto_00002_graph_2_Build.txt" in result.stderr
    assert "-cf: picked ge_proto_00001_graph_1_Build.txt" in result.stderr


def test_compare_two_real_statistics_trees(tmp_path):
    out = tmp_path / "out"
    base = ["compare", "-m", str(STATS / "dump_data0"), "-g", str(STATS / "dump_data1")]
    refused = cli(*base, "-out", str(out))
    assert refused.returncode == 2 and "4 iterations (0, 1, 2, 39)" in refused.stderr
    result = cli(*base, "-out", str(out), "--iteration", "39")
    assert result.returncode in (0, 1), result.stderr
    summary = json.loads((out / "stats_summary.json").read_text())
    rows = sum(
        FACTS[f"stats_dumps/msinsight-mnist/dump_data0/rank_0/mnist/{g}/39/statistic.csv"]["rows"]
        for g in (1, 2, 3)
    )
    assert summary["counts"]["compared"] == rows
    assert summary["statistics"] == ["max", "min", "l2norm"]
    assert any("need tensor dumps" in n for n in summary["notes"])
    assert "need tensor dumps" in result.stdout
    assert (out / "stats_compare.csv").is_file()


def test_compare_refuses_exception_dumps(tmp_path):
    result = cli(
        "compare", "-m", str(REAL / "dumps"), "-g", str(STATS / "dump_data1"),
        "-out", str(tmp_path / "out"),
    )  # fmt: skip
    assert result.returncode == 2 and "only exception dumps" in result.stderr


@pytest.mark.parametrize(
    "damage",
    ["empty", "utf16", "cut-mid-row", "bad-number"],
)
def test_a_damaged_statistics_file_is_said_and_the_rest_compared(tmp_path, damage):
    """A review: an empty, UTF-16 or cut statistic.csv was left out without a word (the leaf
    read as "only in -g", the first divergence moved to another graph), a row cut short
    became a tensor, and one number that is none stopped the whole comparison (exit 2, no
    summary). Each bad file is now a note naming it, the others are compared, and with no
    divergence found the run says evidence is missing (exit 3)."""
    import shutil

    trees = tmp_path / "trees"
    shutil.copytree(STATS, trees, symlinks=True)
    bad = trees / "dump_data0" / "rank_0" / "mnist" / "0" / "2" / "statistic.csv"
    text = bad.read_text(encoding="utf-8")
    if damage == "empty":
        bad.write_bytes(b"")
    elif damage == "utf16":
        bad.write_bytes(text.encode("utf-16"))
    elif damage == "cut-mid-row":
        lines = text.splitlines(keepends=True)
        bad.write_text("".join(lines[:3]) + lines[3][: len(lines[3]) // 3], encoding="utf-8")
    else:
        header, first, *rest = text.splitlines(keepends=True)
        first = first.replace("2.82149", "2.8.2149", 1)  # its Max Value
        bad.write_text(header + first + "".join(rest), encoding="utf-8")
    out = tmp_path / "out"
    base = ["compare", "-m", str(trees / "dump_data0"), "-g", str(trees / "dump_data1")]
    result = cli(*base, "-out", str(out), "--iteration", "2")
    assert "Traceback" not in result.stderr
    summary = json.loads((out / "stats_summary.json").read_text())
    assert any(str(bad) in note for note in summary["notes"]), summary["notes"]
    assert not any("only in -g" in note for note in summary["notes"]), summary["notes"]
    assert result.returncode in (1, 3), (result.returncode, result.stderr)
    if summary["first_divergence"] is None:
        assert result.returncode == 3


def test_more_bad_files_than_are_listed_are_counted(tmp_path):
    """A review: `dumps` listed 5 problems of 11 bad files and never said there were more."""
    leaf = tmp_path / "leaf"
    leaf.mkdir()
    for i in range(11):
        (leaf / f"Add.add{i}.1.1.17000000000000{i:02d}").write_bytes(b"\x05" * 20)
    result = cli("dumps", str(leaf), "--format", "json")
    listing = json.loads(result.stdout)
    (found,) = [leaf for leaf in listing["leaves"]] if "leaves" in listing else [listing]
    problems = found.get("problems", [])
    assert len(problems) == 6 and "6 more bad file(s)" in problems[-1], problems


@pytest.mark.parametrize("damage", ["empty", "utf16"])
def test_dumps_says_a_damaged_statistics_file(tmp_path, damage):
    """Left by the last round: `compare` says a damaged statistic.csv, but `dumps` skipped it
    without a word (its header no longer reads as statistics), listing the leaf as 0 rows."""
    trees = tmp_path / "trees"
    shutil.copytree(STATS / "dump_data0", trees, symlinks=True)
    bad = trees / "rank_0" / "mnist" / "0" / "2" / "statistic.csv"
    text = bad.read_text(encoding="utf-8")
    bad.write_bytes(b"" if damage == "empty" else text.encode("utf-16"))
    result = cli("dumps", str(trees), "--format", "json")
    assert result.returncode == 0, result.stderr
    (leaf,) = [
        leaf
        for leaf in json.loads(result.stdout)["leaves"]
        if (leaf["model_id"], leaf["iteration"]) == ("0", "2")
    ]
    assert any(str(bad) in problem for problem in leaf.get("problems", [])), leaf
    text_out = cli("dumps", str(trees)).stdout
    assert f"problem: {bad}" in text_out or str(bad) in text_out


def test_a_ranks_top_suspect_carries_its_label():
    """A review: ranks_summary.json's suspects kept rule, section and score only, and the
    ranks' table printed a heuristic guess or a rule CANN will not switch off as a proof."""
    import argparse

    from fusion_switch.cli import compare_tree

    summary = {
        "verdict": "most likely (heuristic, not proven by replay): R",
        "suspects": [
            {"rule": "R", "section": "GraphFusion", "score": 1.0, "verdict": "heuristic",
             "cannot_switch_off": True},
        ],
    }  # fmt: skip
    ns = argparse.Namespace(out_dir="/tmp/rank0")
    result = compare_tree._rank_result("rank 0", ns, 1, summary)
    (top,) = result["suspects"]
    assert top["verdict"] == "heuristic" and top["cannot_switch_off"] is True
    label = compare_tree._label(top)
    assert "heuristic" in label and "cannot be switched off" in label


def test_statistics_outputs_replace_a_planted_link_never_write_through_it(tmp_path):
    """A review: stats_compare.csv and stats_summary.json were written with open() and
    write_text(), through a link planted in the output folder, over the file it points at;
    summary.json and the CSV of tensor dumps replace such a link (README, DESIGN 2.5)."""
    out = tmp_path / "out"
    out.mkdir()
    victims = []
    for name in ("stats_compare.csv", "stats_summary.json"):
        victim = tmp_path / f"victim-{name}"
        victim.write_text("keep me\n")
        (out / name).symlink_to(victim)
        victims.append(victim)
    base = ["compare", "-m", str(STATS / "dump_data0"), "-g", str(STATS / "dump_data1")]
    result = cli(*base, "-out", str(out), "--iteration", "39")
    assert result.returncode in (0, 1), result.stderr
    assert [v.read_text() for v in victims] == ["keep me\n", "keep me\n"]
    assert not (out / "stats_summary.json").is_symlink()
    assert json.loads((out / "stats_summary.json").read_text())["statistics"]
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]
