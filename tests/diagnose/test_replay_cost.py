"""What makes the replay cheap must not change what it finds (issue 16).

The replay reuses what the comparison already built (the indexed dump folders), its evidence
cache evicts without scanning, and its rounding and score have fast paths that must give the
very same bits as the general formulas they stand in for.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time

import numpy as np
import psutil
import pytest
from fusion_switch.compare import forked
from fusion_switch.compare.engine import CompareRequest, run_compare
from fusion_switch.diagnose import evidence, noise, replay, replay_background
from fusion_switch.diagnose.evidence import EvidenceStore
from fusion_switch.diagnose.replay_background import BackgroundReplay
from fusion_switch.diagnose.replay_job import replay_outcome
from fusion_switch.readers import dumpdir
from fusion_switch.synth.generator import generate_case
from hypothesis import given, settings
from hypothesis import strategies as st
from rounding_reference import normal_range


@pytest.fixture(scope="module")
def small_case(tmp_path_factory):
    root = tmp_path_factory.mktemp("cost")
    return generate_case(root / "case", n_ops=70, faults=["dropped_scale"], graph_text=False)


@pytest.fixture(scope="module")
def outcome(small_case, tmp_path_factory):
    case = small_case
    request = CompareRequest(
        case.on_dump, case.off_dump, case.on_graph, case.off_graph, tmp_path_factory.mktemp("o")
    )
    return run_compare(request)


def test_replay_uses_the_dump_folders_the_comparison_indexed(outcome, monkeypatch):
    expected = replay_outcome(outcome, None, [], workers=1)

    def no_second_scan(*_args, **_kwargs):
        raise AssertionError("the replay indexed a dump folder again")

    monkeypatch.setattr(dumpdir, "_index_folder", no_second_scan)
    again = replay_outcome(outcome, None, [], workers=1)
    assert again is not None
    assert [r.to_json() for r in again.results] == [r.to_json() for r in expected.results]
    assert again.files_read == expected.files_read > 0


def test_replay_reads_dump_files_by_their_text(small_case, tmp_path, monkeypatch):
    """No Path per dump file (joined from its folder, hashed, turned back into text): ~5% of
    the replay at 5,000 ops (issue 16, nineteenth round). The report is the same."""
    case = small_case
    request = CompareRequest(case.on_dump, case.off_dump, case.on_graph, case.off_graph, tmp_path)
    fresh = run_compare(request)  # its dump names have made no Path yet
    made = []
    joined = dumpdir._joined

    def counting(location):
        made.append(location)
        return joined(location)

    monkeypatch.setattr(dumpdir, "_joined", counting)
    by_text = replay_outcome(fresh, None, [], workers=1)
    assert made == []
    monkeypatch.undo()
    expected = replay_outcome(fresh, None, [], workers=1)
    assert [r.to_json() for r in by_text.results] == [r.to_json() for r in expected.results]
    assert by_text.files_read == expected.files_read > 0


def test_replay_without_indexed_folders_scans_them(outcome, monkeypatch):
    """Outcomes from elsewhere (older callers) carry only the folder paths."""
    expected = replay_outcome(outcome, None, [], workers=1)
    monkeypatch.setattr(outcome, "on_dumps", None)
    monkeypatch.setattr(outcome, "off_dumps", None)
    again = replay_outcome(outcome, None, [], workers=1)
    assert [r.to_json() for r in again.results] == [r.to_json() for r in expected.results]


def test_evicting_a_file_drops_its_arrays_and_only_those(outcome, monkeypatch):
    monkeypatch.setattr(evidence, "_CACHE_FILES", 3)
    store = EvidenceStore(outcome.on_dumps, outcome.off_dumps)
    names = [n for n in outcome.on_dumps.op_names if n in store.dirs["on"]][:5]
    readable = []
    for name in names:
        try:
            store.tensor("on", name, "output", 0)
            readable.append(name)
        except evidence.MissingEvidence:
            continue
    assert len(readable) == 5
    kept = {key[1] for key in store._files}
    assert kept == set(readable[-3:])
    assert {key[1] for key in store._arrays} == kept  # arrays of evicted files are gone
    assert store.files_read == {str(outcome.on_dumps.latest(n)) for n in readable}


# ----------------------------------------------------------------------------- exact fast paths

ROUNDED = sorted(noise._MANTISSA_BITS)
any_float = st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True, width=64)


@st.composite
def ties_and_edges(draw, bits: int):
    """Values exactly halfway between two neighbours of ``bits`` significant bits (where the
    rounding direction matters), next to them, and near the ends of the normal ranges."""
    odd = draw(st.integers(1 << bits, (1 << (bits + 1)) - 1)) | 1
    exponent = draw(st.integers(-1074 + bits + 1, 1023 - bits - 1))
    value = math.ldexp(odd, exponent)  # odd at bits + 1 bits: a tie at bits bits
    nudge = draw(st.sampled_from([0, 1, -1]))
    value = np.nextafter(value, math.inf * nudge) if nudge else value
    edge = draw(
        st.sampled_from([value, 2.0**-126, 2.0**-14, 65504.0, 65520.0, 3.4028234663852886e38])
    )
    return float(edge) * draw(st.sampled_from([1.0, -1.0]))


def frexp(values: np.ndarray, dtype: str) -> np.ndarray:
    """The rounding formula to ``dtype`` (subnormal grid included), the oracle of round_to."""
    return noise._round_frexp(values, noise._MANTISSA_BITS[dtype], noise._SMALLEST_NORMAL[dtype])


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(a.view(np.uint64), b.view(np.uint64))


@pytest.mark.parametrize("dtype", ROUNDED)
@given(data=st.data())
def test_round_to_gives_the_bits_of_the_frexp_formula(dtype, data):
    bits = noise._MANTISSA_BITS[dtype]
    element = st.one_of(any_float, ties_and_edges(bits))
    values = np.asarray(data.draw(st.lists(element, max_size=40)), dtype=np.float64)
    assert same_bits(noise.round_to(values, dtype), frexp(values, dtype))
    for value in values:  # one at a time: each takes the path its own range allows
        single = np.array([value])
        assert same_bits(noise.round_to(single, dtype), frexp(single, dtype))


@pytest.mark.parametrize("dtype", ROUNDED)
@given(data=st.data())
def test_round_to_on_normal_values_keeps_the_bits(dtype, data):
    """Arrays entirely in the normal range (with zeros, as after a ReLU): the fast paths."""
    bits = noise._MANTISSA_BITS[dtype]
    low, high = (2.0**-14, 65504.0) if dtype == "DT_FLOAT16" else (2.0**-126, 1e38)
    magnitude = st.floats(low, high) | ties_and_edges(bits).filter(lambda v: low <= abs(v) <= high)
    signed = st.tuples(magnitude, st.sampled_from([1.0, -1.0, 0.0])).map(lambda p: p[0] * p[1])
    values = np.asarray(data.draw(st.lists(signed, min_size=1, max_size=60)), dtype=np.float64)
    assert same_bits(noise.round_to(values, dtype), frexp(values, dtype))


def _old_round_float16(values: np.ndarray) -> np.ndarray:
    """Rounding to fp16 before it went through the bit operations only: a numpy cast when every
    value is 0 or in the normal fp16 range, the bit operations otherwise."""
    if normal_range(values, 2.0**-14, noise.FP16_MAX):
        return values.astype(np.float16).astype(np.float64)
    return noise._round_bits(values, 11, 2.0**-14)


fp16_element = st.one_of(
    any_float,
    ties_and_edges(11),
    st.floats(-70000.0, 70000.0),
    st.floats(-(2.0**-13), 2.0**-13),  # around the fp16 subnormals
    st.sampled_from([0.0, -0.0, 2.0**-14, 2.0**-24, 65504.0, 65519.99, 65520.0]),
)


@settings(max_examples=400, deadline=None)
@given(values=st.lists(fp16_element, max_size=40), sign=st.sampled_from([1.0, -1.0]))
def test_rounding_to_fp16_gives_the_bits_it_gave_with_the_cast(values, sign):
    x = np.asarray(values, dtype=np.float64) * sign
    assert same_bits(noise.round_to(x, "DT_FLOAT16"), _old_round_float16(x))
    with np.errstate(over="ignore", invalid="ignore"):
        cast = x.astype(np.float16).astype(np.float64)
    stored = np.isfinite(cast)  # float16 holds the value: the cast stores it, subnormals too
    assert same_bits(noise.round_to(x, "DT_FLOAT16")[stored], cast[stored])
    normal = x[np.isfinite(x) & ((np.abs(x) >= 2.0**-14) & (np.abs(x) <= 65504.0) | (x == 0))]
    assert same_bits(noise.round_to(normal, "DT_FLOAT16"), _old_round_float16(normal))


def test_round_to_keeps_the_fp16_precision_beyond_its_range_and_its_grid_below_its_normals():
    values = np.array([70000.3, -1e6 / 3, 2.0**-20 / 3, 0.0, 1.0])
    expected = noise._round_frexp(values, 11, 2.0**-14)
    assert same_bits(noise.round_to(values, "DT_FLOAT16"), expected)
    assert np.isfinite(noise.round_to(values, "DT_FLOAT16")).all()
    # 2^-20 / 3 is 5.33 quanta of 2^-24: 5 quanta, as a float16 cast stores it (it was kept
    # to 11 significant bits, which no float16 holds: a review's false proof)
    assert noise.round_to(values, "DT_FLOAT16")[2] == 5 * 2.0**-24


pair = st.lists(st.tuples(any_float, any_float), max_size=30)


@given(pairs=pair, dtype=st.sampled_from([*ROUNDED, "DT_DOUBLE"]))
def test_score_gives_the_number_of_the_masked_formula(pairs, dtype):
    real = np.array([a for a, _ in pairs], dtype=np.float64)
    replay = np.array([b for _, b in pairs], dtype=np.float64)
    expected = noise._score_masked(real, replay, dtype) if real.size else 0.0
    got = noise.score(real, replay, dtype)
    assert got == expected or (math.isnan(got) and math.isnan(expected))


@given(
    values=st.lists(st.floats(-1e300, 1e300), min_size=1, max_size=30),
    noise_scale=st.floats(0, 1e-3),
)
def test_score_of_finite_tensors_equals_the_masked_formula(values, noise_scale):
    real = np.array(values)
    replay = real * (1 + noise_scale)
    assert noise.score(real, replay, "DT_FLOAT") == noise._score_masked(real, replay, "DT_FLOAT")


# ----------------------------------------------------------------------------- spread over cores


def _json(report) -> list[dict]:
    return [r.to_json() for r in report.results]


def _children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def test_the_background_replay_gives_the_report_the_replay_gives_here(outcome):
    before = _children()  # other tests' long-lived processes
    here = replay_outcome(outcome, None, [])
    notes: list[str] = []
    background = BackgroundReplay(outcome, None).start()
    try:
        report = background.result(notes)
    finally:
        background.close()
    assert _json(report) == _json(here)
    assert (report.files_read, report.unreadable) == (here.files_read, here.unreadable)
    assert report.noise.samples == here.noise.samples
    assert _children() <= before  # the child and its workers are gone


def test_a_child_that_dies_is_replaced_by_the_replay_here(outcome, monkeypatch):
    monkeypatch.setattr(replay_background, "_child", lambda *args: os._exit(1))
    background = BackgroundReplay(outcome, None).start()
    try:
        report = background.result([])
    finally:
        background.close()
    assert _json(report) == _json(replay_outcome(outcome, None, []))


def test_an_error_in_the_child_is_raised_here_as_without_it(outcome, monkeypatch):
    def broken(*_args, **_kwargs):
        raise RuntimeError("kernel registry exploded")

    monkeypatch.setattr(replay_background, "replay_outcome", broken)
    before = _children()
    background = BackgroundReplay(outcome, None).start()
    with pytest.raises(RuntimeError, match="exploded"):
        background.result([])
    background.close()
    assert _children() <= before


class _InProcess:
    """A stand-in pool that runs every chunk here, in order."""

    def __init__(self, *_args, **_kwargs) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *_exc) -> None:
        return None

    def map(self, fn, items):
        return [fn(i) for i in items]


@pytest.fixture(scope="module")
def larger(tmp_path_factory):
    root = tmp_path_factory.mktemp("larger")
    case = generate_case(root / "case", n_ops=250, faults=["wrong_epsilon"], graph_text=False)
    request = CompareRequest(
        case.on_dump, case.off_dump, case.on_graph, case.off_graph, root / "out"
    )
    return run_compare(request)


@pytest.mark.parametrize("workers", [2, 3])
def test_measuring_chunks_in_workers_gives_what_measuring_them_here_gives(
    larger, monkeypatch, workers
):
    spread = replay_outcome(larger, None, [], workers=workers)
    monkeypatch.setattr(replay, "ProcessPoolExecutor", _InProcess)
    here = replay_outcome(larger, None, [], workers=workers)
    assert len(spread.results) >= replay._MIN_PARALLEL_OPS
    assert _json(spread) == _json(here)
    assert spread.noise.samples == here.noise.samples
    assert spread.files_read == here.files_read


def test_the_report_does_not_depend_on_the_number_of_workers(larger):
    """The noise floor was sampled per chunk and the chunks were one per worker (one per core by
    default), so `--workers 1` and the default, or two machines, gave different floors and
    file counts for the same dumps. A verdict must not depend on the machine."""
    one = replay_outcome(larger, None, [], workers=1)
    for workers in (2, 3):
        spread = replay_outcome(larger, None, [], workers=workers)
        assert spread.noise.samples == one.noise.samples
        assert (spread.files_read, spread.unreadable) == (one.files_read, one.unreadable)
        assert _json(spread) == _json(one)


WRITE_AFTER_PRINT = """
import sys
from pathlib import Path
from fusion_switch.compare import forked
from fusion_switch.compare.engine import CompareRequest, run_compare
from fusion_switch.diagnose.summary import write_outputs

paths = [Path(p) for p in sys.argv[1:6]]
outcome = run_compare(CompareRequest(*paths))
print("printed once before the replay")  # stdout is a pipe: this stays in the buffer
write_outputs(outcome, paths[4] / "diagnose")
"""


def test_what_the_caller_printed_before_the_replay_is_printed_once(small_case, tmp_path):
    case = small_case
    paths = [case.on_dump, case.off_dump, case.on_graph, case.off_graph, tmp_path]
    done = subprocess.run(
        [sys.executable, "-c", WRITE_AFTER_PRINT, *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("printed once before the replay") == 1
    assert (tmp_path / "diagnose" / "summary.json").is_file()


def test_one_worker_replays_in_this_process_alone(outcome, monkeypatch):
    """`compare --workers 1` (and each rank of `--rank all`) forks nothing for the replay."""
    started = []
    monkeypatch.setattr(forked.multiprocessing, "get_context", lambda *a: started.append(a))
    monkeypatch.setattr(replay.multiprocessing, "get_context", lambda *a: started.append(a))
    background = BackgroundReplay(outcome, None, workers=1).start()
    try:
        report = background.result([])
    finally:
        background.close()
    assert started == []
    assert _json(report) == _json(replay_outcome(outcome, None, []))


def test_the_command_line_gives_the_replay_its_worker_count(small_case, tmp_path, monkeypatch):
    from fusion_switch.cli import main

    seen = []
    real = replay_background.BackgroundReplay.__init__

    def recording(self, outcome, table, workers=None, processes=None, **more):
        seen.append(workers)
        real(self, outcome, table, workers, processes, **more)

    monkeypatch.setattr(replay_background.BackgroundReplay, "__init__", recording)
    case = small_case
    arguments = [
        *("compare", "-m", str(case.on_dump), "-g", str(case.off_dump)),
        *("-f", str(case.on_graph), "-cf", str(case.off_graph), "--no-progress"),
    ]
    assert main([*arguments, "-out", str(tmp_path / "a"), "--workers", "1"]) == 1
    assert main([*arguments, "-out", str(tmp_path / "b")]) == 1
    assert seen == [1, None]


# ----------------------------------------------------------------------------- beside the compare


@pytest.mark.parametrize("workers", [2, 3])
def test_fewer_processes_than_chunks_give_the_same_report(larger, workers):
    """The chunks decide what is found (the noise floor is sampled per chunk), not how many
    processes measure them: the replay that runs beside the comparison uses fewer."""
    spread = replay_outcome(larger, None, [], workers=workers)
    for processes in (1, 2):
        fewer = replay_outcome(larger, None, [], workers=workers, processes=processes)
        assert _json(fewer) == _json(spread)
        assert fewer.noise.samples == spread.noise.samples
        assert (fewer.files_read, fewer.unreadable) == (spread.files_read, spread.unreadable)


def test_one_process_measures_every_chunk_without_forking(larger, monkeypatch):
    started = []
    monkeypatch.setattr(replay.multiprocessing, "get_context", lambda *a: started.append(a))
    report = replay_outcome(larger, None, [], workers=2, processes=1)
    assert started == []
    assert report is not None and report.files_read > 0


def _compare_arguments(case, out) -> list[str]:
    return [
        *("compare", "-m", str(case.on_dump), "-g", str(case.off_dump)),
        *("-f", str(case.on_graph), "-cf", str(case.off_graph), "--no-progress"),
        *("-out", str(out)),
    ]


def test_the_command_line_starts_the_replay_before_the_tensors_are_compared(
    small_case, tmp_path, monkeypatch
):
    """Without the fusion-off helper to run it in (test_replay_host.py), the replay's child is
    forked from the comparing process, before the comparison's thread goes on."""
    from fusion_switch.cli import main
    from fusion_switch.compare import engine, forked

    monkeypatch.setattr(forked, "GRAPH_FORK_BYTES", 1 << 40)  # no helper: read here

    events: list[str] = []
    real_start, real_measure = BackgroundReplay.start, engine.measure

    def start(self):
        time.sleep(0.3)  # a slow fork: the comparison must wait for it, not race ahead
        events.append(f"replay started, {self.processes} process(es)")
        return real_start(self)

    def measure(*args, **kwargs):
        events.append("tensors compared")
        yield from real_measure(*args, **kwargs)

    monkeypatch.setattr(BackgroundReplay, "start", start)
    monkeypatch.setattr(engine, "measure", measure)
    before = _children()
    assert main([*_compare_arguments(small_case, tmp_path / "o"), "--workers", "2"]) == 1
    assert events == ["replay started, 1 process(es)", "tensors compared"]
    assert _children() <= before  # the replay child is gone


def test_the_replay_started_beside_the_compare_writes_what_the_late_one_writes(
    small_case, tmp_path
):
    """summary.json and report.html of `compare` (replay started after `discover`) are those
    of the comparison's outcome given to write_outputs afterwards, timings aside."""
    from fusion_switch.cli import main
    from fusion_switch.diagnose.summary import write_outputs

    case = small_case
    assert main([*_compare_arguments(case, tmp_path / "early"), "--workers", "2"]) == 1
    request = CompareRequest(
        case.on_dump, case.off_dump, case.on_graph, case.off_graph, tmp_path / "late", workers=2
    )
    outcome = run_compare(request)
    inputs = {
        "on_dump": os.fspath(outcome.on_dump_dir),
        "off_dump": os.fspath(outcome.off_dump_dir),
        "on_graph": os.fspath(outcome.on_graph.path),
        "off_graph": os.fspath(outcome.off_graph.path),
        "dumps_swapped": False,
    }
    write_outputs(outcome, tmp_path / "late", inputs=inputs, workers=2)
    for name in ("summary.json", "report.html"):
        early = _masked((tmp_path / "early" / name).read_text(), tmp_path / "early")
        late = _masked((tmp_path / "late" / name).read_text(), tmp_path / "late")
        assert early == late, name
    assert '"replayed":' in (tmp_path / "early" / "summary.json").read_text()


def _masked(text: str, folder) -> str:
    import re

    text = text.replace(str(folder), "OUT")
    text = re.sub(r"\d{14}", "STAMP", text)
    return re.sub(r'"(seconds|elapsed\w*)": ?[^,}\n]+', "T", text)


def test_a_comparison_that_fails_after_discover_ends_the_early_replay(
    small_case, tmp_path, monkeypatch
):
    from fusion_switch.cli import main
    from fusion_switch.compare import engine

    def broken(*_args, **_kwargs):
        raise engine.CompareInputError("the measure stage failed")
        yield  # a generator, as the real one

    monkeypatch.setattr(engine, "measure", broken)
    started = []
    real_start = BackgroundReplay.start
    monkeypatch.setattr(
        BackgroundReplay, "start", lambda self: started.append(1) or real_start(self)
    )
    before = _children()
    assert main([*_compare_arguments(small_case, tmp_path / "o"), "--workers", "2"]) == 2
    assert started == [1]
    assert _children() <= before
    assert not (tmp_path / "o" / "summary.json").exists()


def test_the_inputs_discover_found_replay_as_the_finished_outcome(small_case, outcome, tmp_path):
    from fusion_switch.compare.engine import discover
    from fusion_switch.diagnose.replay_background import ReplaySource

    case = small_case
    found = discover(
        CompareRequest(case.on_dump, case.off_dump, case.on_graph, case.off_graph, tmp_path)
    )
    source = ReplaySource.of(found)
    assert (source.on_dump_dir, source.off_dump_dir) == (outcome.on_dump_dir, outcome.off_dump_dir)
    early = replay_outcome(source, None, [], workers=2, processes=1)
    assert _json(early) == _json(replay_outcome(outcome, None, [], workers=2))


def test_cached_arrays_stay_within_the_byte_budget(outcome, monkeypatch):
    """Issue 16: real activations are tens of MB as float64, and 24 files' worth of them held
    1.7 GB at 3.7 GB of dumps; the arrays kept are bounded by bytes as well as by files."""
    budget = 64 << 10
    monkeypatch.setattr(evidence, "_CACHE_BYTES", budget)
    store = EvidenceStore(outcome.on_dumps, outcome.off_dumps)
    sizes = []
    for name in [n for n in outcome.on_dumps.op_names if n in store.dirs["on"]][:40]:
        try:
            sizes.append(store.tensor("on", name, "output", 0).nbytes)
        except evidence.MissingEvidence:
            continue
        kept = sum(a.nbytes for arrays in store._arrays.values() for a in arrays.values())
        assert kept <= budget
        assert kept == store._array_bytes
    assert sum(sizes) > 4 * budget  # the budget was reached, again and again
    assert any(store._arrays.values())  # small ones are still kept


def test_an_array_larger_than_the_budget_is_kept_alone_until_the_next_one(outcome, monkeypatch):
    """The localisation scores each variant against the same fused output: the last array read
    stays, even over the budget, and alone (a review of issue 16's tenth round: on 100 MB
    activations a flagged op re-read its output for each of up to 32 variants)."""
    monkeypatch.setattr(evidence, "_CACHE_BYTES", 8)
    store = EvidenceStore(outcome.on_dumps, outcome.off_dumps)
    names = [n for n in outcome.on_dumps.op_names if n in store.dirs["on"]][:2]
    first = store.tensor("on", names[0], "output", 0)
    assert first.nbytes > 8
    assert store.tensor("on", names[0], "output", 0) is first  # kept
    second = store.tensor("on", names[1], "output", 0)
    assert store._arrays == {("on", names[1]): {("output", 0): second}}
    assert store._array_bytes == second.nbytes
    values = first.copy()
    del first  # nobody holds it now: read again
    again = store.tensor("on", names[0], "output", 0)
    assert np.array_equal(again, values)  # read again, the same values
    assert store._arrays == {("on", names[0]): {("output", 0): again}}


def test_an_array_a_caller_still_holds_is_handed_out_again_not_decoded_again(outcome, monkeypatch):
    """Issue 16, fortieth round: on real activations the cache holds one array, and a
    sub-graph's plan holds its inputs while the in-place look reads them again: a third of a
    real-sized replay's decoding was of arrays alive in the same process, each decoded beside
    itself (26 MB more at the peak). One still held anywhere is the one handed out."""
    monkeypatch.setattr(evidence, "_CACHE_BYTES", 8)  # every array is dropped by the next
    decoded = []
    real_host_array = evidence.host_array
    monkeypatch.setattr(
        evidence, "host_array", lambda dump, t: decoded.append(t) or real_host_array(dump, t)
    )
    store = EvidenceStore(outcome.on_dumps, outcome.off_dumps)
    names = [n for n in outcome.on_dumps.op_names if n in store.dirs["on"]][:2]
    held = store.tensor("on", names[0], "output", 0)
    store.tensor("on", names[1], "output", 0)  # drops it from the cache
    assert ("on", names[0]) not in store._arrays
    assert store.tensor("on", names[0], "output", 0) is held
    assert len(decoded) == 2
    assert store._arrays == {("on", names[0]): {("output", 0): held}}  # cached again
    assert store._array_bytes == held.nbytes


def test_the_arrays_handed_out_cannot_be_changed(outcome):
    """Every reader of a tensor gets the same array: one that changed it would change what
    the next reads (the fused output each localisation variant is scored against)."""
    store = EvidenceStore(outcome.on_dumps, outcome.off_dumps)
    name = next(n for n in outcome.on_dumps.op_names if n in store.dirs["on"])
    values = store.tensor("on", name, "output", 0)
    with pytest.raises(ValueError, match="read-only"):
        values[...] = 0.0


def test_the_report_does_not_depend_on_the_cache_budget(outcome, monkeypatch):
    expected = replay_outcome(outcome, None, [], workers=1)
    monkeypatch.setattr(evidence, "_CACHE_BYTES", 1)  # only the last array kept
    again = replay_outcome(outcome, None, [], workers=1)
    assert [r.to_json() for r in again.results] == [r.to_json() for r in expected.results]
    assert again.files_read == expected.files_read


def test_one_file_s_own_arrays_are_bounded_too(outcome, monkeypatch):
    store = EvidenceStore(outcome.on_dumps, outcome.off_dumps)
    for name in (n for n in outcome.on_dumps.op_names if n in store.dirs["on"]):
        try:
            pair = store.tensor("on", name, "input", 0), store.tensor("on", name, "output", 0)
            break
        except evidence.MissingEvidence:
            continue
    budget = max(a.nbytes for a in pair) + min(a.nbytes for a in pair) // 2  # one fits, not both
    monkeypatch.setattr(evidence, "_CACHE_BYTES", budget)
    store = EvidenceStore(outcome.on_dumps, outcome.off_dumps)
    store.tensor("on", name, "input", 0)
    last = store.tensor("on", name, "output", 0)
    assert store._arrays == {("on", name): {("output", 0): last}}
    assert store._array_bytes == last.nbytes <= budget
