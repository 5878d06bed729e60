"""`fusion-switch compare` run as a user runs it: a subprocess with msaccucmp's flags."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fusion_switch.synth.generator import generate_case


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fusion_switch", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    return generate_case(
        tmp_path_factory.mktemp("cli") / "case", n_ops=70, faults=["dropped_scale"]
    )


def flags(case, out, *, long=False) -> list[str]:
    on_root = case.root / "fusion_on" / "dump"  # a folder above the leaf is accepted
    if long:
        return [
            "--my_dump_path",
            str(on_root),
            "--golden_dump_path",
            str(case.off_dump),
            "--fusion_rule_file",
            str(case.on_graph),
            "--close_fusion_rule_file",
            str(case.off_graph_txt),
            "--output",
            str(out),
        ]
    return [
        "-m",
        str(on_root),
        "-g",
        str(case.off_dump),
        "-f",
        str(case.on_graph),
        "-cf",
        str(case.off_graph),
        "-out",
        str(out),
    ]


def test_compare_prints_the_verdict_and_writes_three_files(case, tmp_path):
    result = cli("compare", *flags(case, tmp_path))
    assert result.returncode == 1, result.stderr  # 1 = suspects found
    out = result.stdout
    assert (
        "verdict: proven by replay: AConv2dMulFusion (GraphFusion) introduces the error at b1_conv2"
        in out
    )
    assert "AConv2dMulFusion                         introduces   b1_conv2" in out
    assert "op b1_conv2 (Conv2D) <- b1_conv2, b1_scale2" in out
    assert "RelativeEuclideanDistance 7 >= 0.05" in out
    assert f"report:  {tmp_path / 'report.html'}" in out
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names[:2] == ["report.html", "result_" + names[1][len("result_") :]]
    assert names[1].endswith(".csv") and names[2] == "summary.json"
    # not a terminal: progress comes as plain lines on stderr, never on stdout
    assert "compare: " in result.stderr and "\r" not in result.stderr
    assert "compare:" not in out


def test_long_msaccucmp_flags_and_text_graphs_work(case, tmp_path):
    result = cli("compare", *flags(case, tmp_path, long=True), "--format", "json", "--no-progress")
    assert result.returncode == 1, result.stderr
    data = json.loads(result.stdout)
    assert data["suspects"][0]["rule"] == "AConv2dMulFusion"
    assert data["summary"] == str(tmp_path / "summary.json")
    assert "ops" not in data  # the per-op list stays in the file
    assert result.stderr == ""


def test_swapped_dumps_are_detected(case, tmp_path):
    result = cli(
        "compare",
        "-m",
        str(case.off_dump),
        "-g",
        str(case.on_dump),
        "-f",
        str(case.on_graph),
        "-cf",
        str(case.off_graph),
        "-out",
        str(tmp_path),
        "--format",
        "json",
    )
    assert result.returncode == 1, result.stderr
    data = json.loads(result.stdout)
    assert data["suspects"][0]["rule"] == "AConv2dMulFusion"
    assert any("other way round" in note for note in data["inputs"]["notes"])
    assert data["inputs"]["dumps_swapped"] is True
    assert data["inputs"]["on_dump"].startswith(str(case.on_dump))


def test_thresholds_change_only_the_heuristic_not_the_replay(case, tmp_path):
    # the replay proves the dropped scale whatever the row thresholds say
    proven = cli("compare", *flags(case, tmp_path), "--threshold", "red=off", "--format", "json")
    top = json.loads(proven.stdout)["suspects"][0]
    assert (top["rule"], top["verdict"], top["ops"]) == (
        "AConv2dMulFusion",
        "introduces",
        ["b1_conv2"],
    )
    # ignore the metrics the dropped scale shows up in: the heuristic has nothing to blame it on
    result = cli(
        "compare",
        *flags(case, tmp_path),
        "--no-replay",
        "--threshold",
        "red=off",
        "--threshold",
        "mre=off",
        "--threshold",
        "rmse=off",
        "--format",
        "json",
    )
    data = json.loads(result.stdout)
    assert all(
        s["rule"] != "AConv2dMulFusion" or s["ops"] != ["b1_conv2"] for s in data["suspects"][:1]
    )
    assert "RelativeEuclideanDistance" not in data["thresholds"]


def test_clean_case_exits_zero(tmp_path):
    clean = generate_case(tmp_path / "case", n_ops=30, faults=[], graph_text=False)
    result = cli(
        "compare",
        "-m",
        str(clean.on_dump),
        "-g",
        str(clean.off_dump),
        "-f",
        str(clean.on_graph),
        "-cf",
        str(clean.off_graph),
        "-out",
        str(tmp_path / "o"),
    )
    assert result.returncode == 0, result.stderr
    assert "verdict: no fused op introduces error" in result.stdout


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"-f": "missing.json"}, "-f missing.json: no such file"),
        ({"-m": "no/such/dir"}, "-m no/such/dir: no such folder"),
        ({"--threshold": "speed=1"}, "bad threshold 'speed=1'"),
        ({"-alg": "42"}, "algorithm"),
    ],
)
def test_bad_inputs_exit_2_with_a_clear_message(case, tmp_path, change, message):
    args = flags(case, tmp_path)
    for flag, value in change.items():
        if flag in args:
            args[args.index(flag) + 1] = value
        else:
            args += [flag, value]
    result = cli("compare", *args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "summary.json").exists()


def test_a_graph_that_is_not_json_is_reported(case, tmp_path):
    bad = tmp_path / "graph.json"
    bad.write_text('{"graph": [')
    args = flags(case, tmp_path / "o")
    args[args.index("-f") + 1] = str(bad)
    result = cli("compare", *args)
    assert result.returncode == 2 and str(bad) in result.stderr
    assert "Traceback" not in result.stderr


def test_ctrl_c_stops_cleanly_without_a_report(tmp_path):
    big = generate_case(tmp_path / "case", n_ops=400, faults=["wrong_axis"], graph_text=False)
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fusion_switch",
            "compare",
            "-m",
            str(big.on_dump),
            "-g",
            str(big.off_dump),
            "-f",
            str(big.on_graph),
            "-cf",
            str(big.off_graph),
            "-out",
            str(out),
            "--workers",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # a pause after each progress line, so that Ctrl-C lands before the comparison ends:
        # 400 ops are compared within milliseconds (CI once saw the CSV finished first)
        env=dict(os.environ, FUSION_SWITCH_COMPARE_DELAY="0.5"),
    )
    assert proc.stderr is not None
    first = proc.stderr.readline()  # the first progress line, before anything is read
    assert first == "compare: looking for the dump files...\n", first
    started = proc.stderr.readline()  # the comparison has started
    assert started == "compare: reading the graphs and the dump folders...\n", started
    counted = proc.stderr.readline()  # the graphs are read: the op count is known
    assert counted.startswith("compare: 0/"), counted
    os.kill(proc.pid, signal.SIGINT)
    started = time.monotonic()
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, (stdout, stderr)
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert time.monotonic() - started < 30
    leftovers = sorted(p.name for p in out.iterdir()) if out.exists() else []
    assert leftovers == [], leftovers  # no summary, no report, no half CSV


def test_progress_is_a_bar_redrawn_in_place_on_a_terminal(case, tmp_path):
    import pty

    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "fusion_switch", "compare", *flags(case, tmp_path)],
            stdout=subprocess.PIPE,
            stderr=follower,
            text=True,
        )
        stdout, _ = proc.communicate(timeout=120)
        os.close(follower)
        follower = -1
        chunks = []
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        shown = b"".join(chunks).decode()
    finally:
        if follower != -1:
            os.close(follower)
        os.close(leader)
    assert proc.returncode == 1
    assert "\r[" in shown and "100.0%" in shown and "ops" in shown
    assert "verdict:" in stdout and "\r" not in stdout


def test_a_graph_from_another_model_compares_nothing_and_says_so(case, tmp_path):
    other = Path(__file__).resolve().parents[1] / "data" / "graphs" / "msit_tdnn_test.om.json"
    args = flags(case, tmp_path)
    args[args.index("-f") + 1] = str(other)
    result = cli("compare", *args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "verdict: nothing compared: no fusion-on output could be paired" in result.stdout
    assert (tmp_path / "summary.json").is_file()  # what was found is still written down


# --- the notes under the counts ------------------------------------------------------------------

SWAP = "The dump folders were given the other way round: ..."
ON_FOUND = "fusion-on dumps: dump files are in /d/on/leaf"
ON_PICKED = "fusion-on dumps: picked '1' in /d/on: newest"
OFF_FOUND = "fusion-off dumps: dump files are in /d/off/leaf"


def bad(n: int) -> str:
    return f"skipped a bad dump file (dump it again to compare its op): /d/on/leaf/f{n}: cut"


@pytest.mark.parametrize(
    ("notes", "shown", "dropped"),
    [
        # bad files after the dump folders, all of them, whatever the order they came in
        (
            [bad(1), ON_FOUND, ON_PICKED, bad(2), OFF_FOUND, SWAP],
            [SWAP, ON_PICKED, OFF_FOUND, bad(1), bad(2)],
            0,
        ),
        # the off side's folder note first: sides still in on, off order; pairing never shown
        (
            [OFF_FOUND, "pairing: 3 tensors by position", ON_FOUND],
            [ON_FOUND, OFF_FOUND],
            0,
        ),
        ([bad(n) for n in range(9)], [bad(n) for n in range(6)], 3),
        ([ON_FOUND, *[bad(n) for n in range(6)], SWAP], [SWAP, ON_FOUND, *map(bad, range(4))], 2),
        ([], [], 0),
    ],
)
def test_condensed_notes_are_grouped_in_a_stable_order(notes, shown, dropped):
    from fusion_switch.cli.verdict_text import condensed_notes

    assert condensed_notes(notes) == (shown, dropped)


def test_bad_file_notes_are_recognised_by_the_summary_wording():
    from fusion_switch.cli.verdict_text import BAD_FILE_PREFIX
    from fusion_switch.diagnose.summary import BAD_FILE_NOTE

    assert BAD_FILE_PREFIX == BAD_FILE_NOTE


def test_a_path_that_is_not_utf8_gives_every_output(case, tmp_path):
    """Defect: a folder named with a byte that is not UTF-8 (a GBK or Latin-1 name on a UTF-8
    system: Python reads it as a lone surrogate) ended the run with an internal error after the
    CSV: neither report.html nor summary.json was written and no verdict printed. The summary
    keeps such a path as JSON's \\udcXX escape, which Python reads back as the same path; the
    report shows it escaped; stdout prints its bytes as they are."""
    import shutil

    from fusion_switch.workflow.verdicts import load_summary

    odd = tmp_path / os.fsdecode(b"caf\xe9")
    shutil.copytree(case.root, odd / "case")
    moved = {name: odd / "case" / Path(path).relative_to(case.root) for name, path in (
        ("on", case.root / "fusion_on" / "dump"), ("off", case.off_dump),
        ("f", case.on_graph), ("cf", case.off_graph))}  # fmt: skip
    out = odd / "out"
    args = ["-m", moved["on"], "-g", moved["off"], "-f", moved["f"], "-cf", moved["cf"]]
    result = subprocess.run(
        [sys.executable, "-m", "fusion_switch", "compare", *map(str, args), "-out", str(out)],
        capture_output=True,
        timeout=120,
        env={**os.environ, "LC_ALL": "C.UTF-8", "PYTHONUTF8": "1"},
    )
    assert result.returncode == 1, result.stderr.decode(errors="replace")
    assert b"internal error" not in result.stderr
    assert b"verdict: proven by replay: AConv2dMulFusion" in result.stdout
    assert b"report:  " + os.fsencode(out / "report.html") in result.stdout
    _, summary = load_summary(out / "summary.json")
    given = summary["inputs"]["on_dump"]  # the leaf below the folder given, byte for byte
    assert given.startswith(str(moved["on"])) and os.path.isdir(given)
    assert os.path.isfile(summary["csv"]) and summary["verdict"].startswith("proven by replay")
    assert "caf\\udce9" in (out / "report.html").read_text(encoding="utf-8")


def test_the_verdict_does_not_say_the_inputs_agree_when_they_differ():
    """Defect: for an op that amplifies (its inputs already out of band with fusion off), the
    printed verdict said "inputs agree with fusion off (worst badness 2 <= 1)"; an infinite
    badness printed as 1.8e+308."""
    import io

    from fusion_switch.cli.verdict_text import print_verdict
    from fusion_switch.diagnose.attribution import attribute
    from fusion_switch.diagnose.summary import build_summary

    sys.path.insert(0, str(Path(__file__).parents[1] / "diagnose"))
    try:
        from test_attribution import GOOD, bad, chain_graph, rows_for
    finally:
        sys.path.pop(0)
    drift = bad(CosineSimilarity=0.98, RelativeEuclideanDistance=0.06)
    rows = [
        *rows_for("a", [GOOD], [drift]),
        *rows_for("b", [drift], [bad(CosineSimilarity=0.5, RelativeEuclideanDistance=0.9)]),
    ]
    summary = build_summary(attribute(rows, chain_graph()), inputs={}, report_path="/r/r.html")
    out = io.StringIO()
    print_verdict(summary, out)
    text = out.getvalue()
    assert "inputs agree with fusion off (worst badness 0.02 <= 1)" in text  # a: introduces
    assert "inputs already differ from fusion off (worst badness 2 > 1)" in text  # b amplifies
    assert text.count("<= 1)") == 1
    evidence = next(e for s in summary["suspects"] for e in s["evidence"] if e["op"] == "b")
    evidence["inputs"][0]["badness"] = 1.7976931348623157e308  # infinite, as JSON holds it
    out = io.StringIO()
    print_verdict(summary, out)
    assert "(worst badness inf > 1)" in out.getvalue()


def test_the_verdict_says_how_many_notes_were_left_out():
    import io

    from fusion_switch.cli.verdict_text import print_verdict

    summary = {
        "verdict": "no fused op introduces error",
        "report": "/r/report.html",
        "inputs": {"notes": [ON_FOUND, *[bad(n) for n in range(8)]]},
    }
    out = io.StringIO()
    print_verdict(summary, out)
    lines = [line for line in out.getvalue().splitlines() if line.startswith("note: ")]
    assert lines[0] == f"note: {ON_FOUND}"
    assert lines[1:6] == [f"note: {bad(n)}" for n in range(5)]
    assert lines[6:] == ["note: ... 3 more in summary.json"]
