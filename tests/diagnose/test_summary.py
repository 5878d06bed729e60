"""summary.json: shape, ordering, strict JSON, atomic writes."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pytest
from fusion_switch.compare.engine import CompareRequest, run_compare
from fusion_switch.diagnose import summary as summary_module
from fusion_switch.diagnose.summary import write_json_atomic, write_outputs
from fusion_switch.synth.generator import generate_case
from fusion_switch.workflow.verdicts import SummaryError, load_summary


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("summary")
    case = generate_case(root / "case", n_ops=70, faults=["wrong_epsilon"], graph_text=False)
    outcome = run_compare(
        CompareRequest(
            case.on_dump, case.off_dump, case.on_graph, case.off_graph, root / "out", workers=1
        )
    )
    inputs = {
        "on_dump": str(case.on_dump),
        "off_dump": str(case.off_dump),
        "on_graph": str(case.on_graph),
        "off_graph": str(case.off_graph),
    }
    return case, outcome, write_outputs(outcome, root / "out", inputs=inputs)


def test_summary_names_suspects_most_likely_first(outputs):
    case, _outcome, out = outputs
    data = json.loads(out.summary_path.read_text())  # strict JSON: no NaN/Infinity tokens
    assert data == out.summary
    (truth,) = case.truth["faults"]
    top = data["suspects"][0]
    assert {"rule", "section", "ops", "original_ops", "evidence", "score"} <= set(top)
    assert (top["rule"], top["section"], top["ops"][0]) == (
        truth["rule"],
        truth["section"],
        truth["op"],
    )
    scores = [s["score"] for s in data["suspects"]]
    assert scores == sorted(scores, reverse=True)
    evidence = top["evidence"][0]
    assert evidence["verdict"] == "introduces"
    assert evidence["outputs"][0]["crossed"] and evidence["inputs"]
    assert data["verdict"].startswith(f"proven by replay: {truth['rule']}")
    assert top["verdict"] == "introduces" and top["replay"][0]["op"] == truth["op"]


def test_summary_records_inputs_counts_target_and_paths(outputs):
    case, outcome, out = outputs
    data = out.summary
    assert data["soc_version"] == "Ascend910B1"
    assert data["csv"] == str(outcome.csv_path) and os.path.isfile(data["csv"])
    assert data["report"] == str(out.report_path)
    assert data["inputs"]["on_graph"] == str(case.on_graph)
    assert data["inputs"]["fusion_result"] == str(case.fusion_result)  # found next to the graph
    assert any("fusion_result.json" in n for n in data["inputs"]["notes"])
    assert data["counts"]["rows"] == len(outcome.rows)
    assert data["counts"]["ops_by_verdict"]["introduces"] >= 1
    assert set(data["thresholds"]) >= {"CosineSimilarity", "RelativeEuclideanDistance"}
    assert data["thresholds"]["CosineSimilarity"] == {"limit": 0.99, "in_band": ">"}


def test_summary_lists_every_judged_op_in_execution_order(outputs):
    _case, _outcome, out = outputs
    ops = out.summary["ops"]
    assert [o["order"] for o in ops] == sorted(o["order"] for o in ops)
    faulty = next(o for o in ops if o["verdict"] == "introduces")
    assert faulty["cosine"] < 0.99 and faulty["rules"]


def test_outputs_leave_no_temporary_files(outputs):
    _case, _outcome, out = outputs
    leftovers = [p.name for p in out.summary_path.parent.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_atomic_write_keeps_the_old_file_when_interrupted(tmp_path, monkeypatch):
    target = tmp_path / "summary.json"
    write_json_atomic(target, {"suspects": []})

    def interrupted(src, dst):
        raise KeyboardInterrupt  # as if Ctrl-C arrived just before the rename

    monkeypatch.setattr(summary_module.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_json_atomic(target, {"suspects": [{"rule": "half written"}]})
    assert json.loads(target.read_text()) == {"suspects": []}
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_a_ctrl_c_between_the_reports_rename_and_the_summarys_splits_no_run(
    outputs, tmp_path, monkeypatch
):
    """The report is renamed into place first, then summary.json. A Ctrl-C that landed
    between the two left this run's report.html beside an earlier run's summary.json (a kill
    stress, issue 16); it now takes effect once both are in place."""
    import signal

    _, outcome, _ = outputs
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.json").write_text('{"verdict": "an earlier run"}')
    (out / "report.html").write_text("an earlier run")
    real = os.replace

    def then_ctrl_c(src, dst):
        real(src, dst)
        if str(dst).endswith("report.html"):
            signal.raise_signal(signal.SIGINT)  # Python runs its handler at once, here

    monkeypatch.setattr(summary_module.os, "replace", then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        write_outputs(outcome, out)
    written = json.loads((out / "summary.json").read_text())
    assert written["verdict"] != "an earlier run", "summary.json is an earlier run's"
    assert written["verdict"] in (out / "report.html").read_text()
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "summary.json"]


def test_signals_deferred_runs_the_handler_once_the_block_is_done():
    import signal

    from fusion_switch.readers.signals_held import signals_deferred

    steps = []
    with pytest.raises(KeyboardInterrupt), signals_deferred():
        signal.raise_signal(signal.SIGINT)
        steps.append("after the signal")
    assert steps == ["after the signal"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_summary_json_is_compact_utf8_that_reads_back_the_same(tmp_path):
    data = {
        "ops": [
            {"name": "层_conv1", "cos": 0.999, "kl": 4.66245183e-07, "max": 1.7976931348623157e308}
        ],
        "nothing": None,
        "small": 1e-05,
        "count": 12,
        "flag": True,
    }
    target = write_json_atomic(tmp_path / "summary.json", data)
    raw = target.read_bytes()
    assert raw.endswith(b"}\n") and b"\n" not in raw[:-1] and b", " not in raw
    assert "层_conv1".encode() in raw  # UTF-8 as it is, not \\u escapes
    assert json.loads(raw) == data  # every float reads back to the same value


def test_a_nan_or_infinity_that_reaches_the_summary_is_written_as_null(tmp_path):
    # the summary spells a missing number null (json_number maps NaN and infinities before)
    target = write_json_atomic(tmp_path / "s.json", {"a": float("nan"), "b": float("inf")})
    assert json.loads(target.read_text(encoding="utf-8")) == {"a": None, "b": None}


def test_text_that_is_not_unicode_reaches_the_summary_escaped(tmp_path):
    """A path with a byte that is not UTF-8 comes as a lone surrogate, which msgspec refuses:
    the summary is then written as ASCII JSON, read back as the same values (the path's text
    too), with NaN and infinities as null as before."""
    path = os.fsdecode(b"/data/caf\xe9/dump")
    data = {"inputs": {"on_dump": path}, "ops": [{"name": "层", "max": 1.5e-7}], "n": None}
    target = write_json_atomic(tmp_path / "summary.json", {**data, "bad": float("nan")})
    raw = target.read_bytes()
    assert raw.isascii() and b"\\udce9" in raw and raw.endswith(b"}\n")
    assert json.loads(raw) == {**data, "bad": None}
    assert os.fsencode(json.loads(raw)["inputs"]["on_dump"]) == b"/data/caf\xe9/dump"


def test_write_outputs_on_an_empty_outcome_gives_a_clear_verdict(tmp_path):
    outcome = SimpleNamespace(
        rows=[],
        on_graph=SimpleNamespace(ops=[], soc_version=None, path=None),
        csv_path=None,
        notes=[],
        errors=["x: truncated"],
        counts=None,
    )
    out = write_outputs(outcome, tmp_path)
    assert out.summary["suspects"] == []
    assert (
        "skipped a bad dump file (dump it again to compare its op): x: truncated"
        in out.summary["inputs"]["notes"]
    )
    assert load_summary(out.summary_path)[1]["verdict"].startswith("nothing compared")


def test_load_summary_rejects_other_files(tmp_path):
    path = tmp_path / "x.json"
    path.write_text("[1, 2]")
    with pytest.raises(SummaryError, match="not a fusion-switch comparison summary"):
        load_summary(path)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deep"),  # was a RecursionError
        ('{"suspects": ' + "9" * 5000 + "}", "not valid JSON"),
        ("\ufeff", "cannot read"),  # UTF-16 with its BOM
    ],
)
def test_load_summary_names_the_file_whatever_is_wrong_with_it(tmp_path, content, says):
    """Defect: a summary nested deeper than Python's recursion limit raised RecursionError out
    of `apply` instead of saying which file is not a summary."""
    path = tmp_path / "summary.json"
    if content == "\ufeff":
        path.write_text('{"suspects": []}', encoding="utf-16")
    else:
        path.write_text(content)
    with pytest.raises(SummaryError, match=says) as raised:
        load_summary(path)
    assert str(path) in str(raised.value)


def _numbers_and_strings(value, path="$"):
    """Every (path, value) of a JSON document whose key names a number."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _numbers_and_strings(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _numbers_and_strings(v, f"{path}[{i}]")
    else:
        yield path, value


NUMERIC_KEYS = (
    "score",
    "share",
    "badness",
    "severity",
    "input_badness",
    "cosine",
    "red",
    "kl",
    "rmse",
    "mre",
    "limit",
)


def test_summary_numbers_are_numbers_for_scripts(outputs):
    _case, _outcome, out = outputs
    data = json.loads(out.summary_path.read_text())
    assert data["format"] == 2
    checked = 0
    for path, value in _numbers_and_strings(data):
        key = path.rsplit(".", 1)[-1]
        if key in NUMERIC_KEYS or ".metrics." in path:
            assert value is None or type(value) in (int, float), (path, value)
            checked += 1
    assert checked > 100


def test_json_number_keeps_small_values_and_never_gives_a_string():
    from fusion_switch.diagnose.attribution import json_number

    assert json_number(2.345678912345e-12) == 2.34567891e-12  # 9 significant digits
    assert json_number(-3e15) == -3e15  # no cap, sign kept
    assert json_number(float("nan")) is None
    assert json_number(float("inf")) == 1.7976931348623157e308
    assert json_number(float("-inf")) == -1.7976931348623157e308
    json.dumps([json_number(float("inf"))], allow_nan=False)  # strict JSON accepts it


def test_summary_paths_are_absolute_even_from_relative_arguments(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    outcome = SimpleNamespace(
        rows=[],
        on_graph=SimpleNamespace(ops=[], soc_version=None, path=None),
        csv_path="out/result_1.csv",
        notes=[],
        errors=[],
        counts=None,
    )
    inputs = {"on_dump": "on", "off_dump": "off", "on_graph": "g.json", "dumps_swapped": False}
    out = write_outputs(outcome, "out", inputs=inputs)
    data = out.summary
    for value in (
        data["csv"],
        data["report"],
        *(data["inputs"][k] for k in ("on_dump", "on_graph")),
    ):
        assert os.path.isabs(value), value
    assert data["inputs"]["on_dump"] == str(tmp_path / "on")
    assert data["inputs"]["dumps_swapped"] is False


@pytest.mark.parametrize(
    ("counts", "hint"),
    [
        ({"rows": 14, "no_left_dump": 14}, "check that -f is the graph of the run dumped in -m"),
        ({"rows": 10, "no_left_dump": 4, "no_right_dump": 6}, "check that -cf is the graph"),
        ({"rows": 3, "failed": 3}, "CompareFailReason"),
    ],
)
def test_nothing_compared_says_what_to_check(tmp_path, counts, hint):
    outcome = SimpleNamespace(
        rows=[],
        on_graph=SimpleNamespace(ops=[], soc_version=None, path=None),
        csv_path=None,
        notes=[],
        errors=[],
        counts=counts,
    )
    verdict = write_outputs(outcome, tmp_path).summary["verdict"]
    assert verdict.startswith("nothing compared") and hint in verdict


def test_summary_and_report_temporaries_are_locked_until_renamed(tmp_path, monkeypatch):
    """Their lock keeps another run's sweep (which sees a pid of another namespace or host
    as ended) from removing them under this one (a review)."""
    import fcntl

    from fusion_switch.diagnose import summary as summary_module

    seen = []

    def holding(handle):
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        probe = os.open(handle.name, os.O_RDONLY)
        try:  # another open file description cannot take it: held
            with pytest.raises(BlockingIOError):
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(probe)
        seen.append(os.path.basename(handle.name))

    monkeypatch.setattr(summary_module, "hold_lock", holding)
    summary_module.write_together(
        [(tmp_path / "report.html", "r"), (tmp_path / "summary.json", b"s")]
    )
    assert [name.split(".")[1] for name in seen] == ["report", "summary"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "summary.json"]
