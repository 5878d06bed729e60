"""A worker's need narrowed by the dump headers of the ops that could need most (issue 16).

The bound from an op's dump size counts the whole dump as one tensor on the general path. On a
real network's activations it was four times what a worker held once big files took the direct
path, so a 300 MiB budget ran the comparison on one process where two fitted. The headers give
each pair's element count, dtypes and path: each test below holds that narrower need to a real
measurement, or to the bound it narrows.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from fusion_switch.compare import metrics
from fusion_switch.compare.worker_memory import (
    EXACT_LIMIT,
    largest_op_need,
    op_need,
    pair_need,
    worker_bytes,
    workers_within,
)
from fusion_switch.readers.dump import read_dump
from fusion_switch.readers.graph_model import Graph, Op, TensorDesc

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from test_worker_memory import NAMES, measured_growth, write_pair  # noqa: E402

DIRECT_PAIRS = [
    ("i1", "i1", "NCHW"),
    ("i1", "<f4", "NC1HWC0"),
    ("<f2", "<f2", "NC1HWC0"),
    ("<f2", "<f4", "NCHW"),
    ("<f4", "<f4", "NCHW"),
]


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux's VmHWM")
@pytest.mark.parametrize(("left", "right", "layout"), DIRECT_PAIRS)
def test_a_pairs_need_holds_what_either_path_measures(left, right, layout, tmp_path):
    """For a pair of 1M-element tensors: the direct path's need is at least what it really
    takes (8.2-8.5 MB), and below the general path's, which is at least what that takes."""
    if not metrics.kernel_in_use():
        pytest.skip("the direct path needs the compiled kernel")
    paths = write_pair(tmp_path, left, right, layout)
    on, off = (read_dump(path).outputs[0] for path in paths)
    direct, _ = measured_growth(paths, kernel=True, row_of="direct_row")
    general, file_size = measured_growth(paths, kernel=True)
    assert direct > (1 << 20) * 8  # the measure is real: two float32 vectors of 1M
    assert pair_need(on, off, True, direct=True) >= direct
    assert pair_need(on, off, True, direct=False) >= general
    assert pair_need(on, off, True, direct=True) < pair_need(on, off, True, direct=False)
    # and the headers' need is within the bound from the file's size and the graph's dtypes
    bound = op_need(file_size, [NAMES[left]], True, 32 if right == "<f4" else 0)
    assert pair_need(on, off, True, direct=False) <= bound


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux's VmHWM")
def test_the_general_paths_need_counts_the_fusion_off_dtype_its_header_names(tmp_path):
    """A float64 fusion-off tensor against a float16 one (not the direct path's): counted by
    the header's float64, with numpy's metrics too."""
    paths = write_pair(tmp_path, "<f2", "<f8", "NCHW")
    on, off = (read_dump(path).outputs[0] for path in paths)
    for kernel in (True, False):
        if kernel and not metrics.kernel_in_use():
            continue
        growth, _ = measured_growth(paths, kernel)
        assert pair_need(on, off, kernel, direct=False) >= growth


class _Folder:
    def __init__(self, sizes: dict[str, int]) -> None:
        self.sizes = sizes

    def latest_bytes(self, name: str) -> int:
        return self.sizes.get(name, 0)


def _graph(count: int) -> Graph:
    ops = [Op(f"op{i}", "Add", output_descs=[TensorDesc(dtype="DT_FLOAT16")]) for i in range(count)]
    return Graph(name="g", ops=ops)


def test_the_headers_narrow_the_bound_and_never_widen_it():
    graph = _graph(3)
    folder = _Folder({"op0": 30 << 20, "op1": 20 << 20, "op2": 10 << 20})
    bounds = {name: op_need(size, ["DT_FLOAT16"], True) for name, size in folder.sizes.items()}
    asked: list[str] = []

    def exact(answers):
        def ask(name: str):
            asked.append(name)
            return answers.get(name)

        return ask

    # each op needs little by its headers: every bound above the need found is looked at
    found = {"op0": 1 << 20, "op1": 5 << 20, "op2": 2 << 20}
    assert largest_op_need(graph, folder, True, exact=exact(found)) == 5 << 20
    assert asked == ["op0", "op1", "op2"]
    # None (a header that could not be read) keeps that op's bound
    asked.clear()
    assert (
        largest_op_need(graph, folder, True, exact=exact({**found, "op2": None})) == bounds["op2"]
    )
    # a need the headers put above the bound (a graph naming a narrower dtype than dumped)
    # does not widen it, and no op whose bound is below it is asked
    asked.clear()
    assert largest_op_need(graph, folder, True, exact=exact({"op0": 1 << 40})) == bounds["op0"]
    assert asked == ["op0"]
    asked.clear()
    above_the_next = bounds["op1"] + 1
    assert largest_op_need(graph, folder, True, exact=exact({"op0": above_the_next})) == (
        above_the_next
    )
    assert asked == ["op0"]
    # without headers, the bound
    assert largest_op_need(graph, folder, True) == bounds["op0"]


def test_at_most_exact_limit_ops_are_read_then_the_next_bound_stands():
    count = EXACT_LIMIT + 10
    graph = _graph(count)
    folder = _Folder({f"op{i}": (count - i) << 20 for i in range(count)})
    asked: list[str] = []

    def exact(name: str) -> int:
        asked.append(name)
        return 1

    most = largest_op_need(graph, folder, True, exact=exact)
    assert len(asked) == EXACT_LIMIT
    assert most == op_need((count - EXACT_LIMIT) << 20, ["DT_FLOAT16"], True)


@pytest.fixture(scope="module")
def large(tmp_path_factory):
    """A case whose activations (16 x 64 x 64 float16 and larger) go past what read_dump
    holds, so that the direct path reads them from the files."""
    from fusion_switch.synth.generator import generate_case

    return generate_case(
        tmp_path_factory.mktemp("large"),
        n_ops=12,
        seed=3,
        faults=[],
        graph_text=False,
        channels=32,
        spatial=64,
    )


def _request(case, out: Path, budget: int | None = None):
    from fusion_switch.compare.engine import CompareRequest

    request = CompareRequest(
        case.on_dump, case.off_dump, case.on_graph, case.off_graph, out, workers=2
    )
    request.memory_budget = budget
    return request


def test_op_memory_is_the_largest_pair_by_its_headers_and_path(large, tmp_path):
    """Through the real stages: each op's need is its largest pair's, as the headers and
    the direct path's own test give it, and within the op's bound."""
    from fusion_switch.compare.engine import discover, pair
    from fusion_switch.compare.metrics import kernel_in_use
    from fusion_switch.compare.worker_memory import dump_dtypes, widest_bits
    from fusion_switch.compare.workers import GroupComparer, direct_plan

    inputs = discover(_request(large, tmp_path / "out"))
    plan = pair(inputs)
    comparer = GroupComparer(plan.job, plan.groups)
    kernel = kernel_in_use()
    checked = 0
    for members in plan.groups:
        for op in members:
            path = inputs.on_dir.latest_location(op.name)
            if path is None:
                assert comparer.op_memory(op) == 0
                continue
            dump = read_dump(path)
            needs = [0]
            for tensor, is_input in [(t, True) for t in dump.inputs] + [
                (t, False) for t in dump.outputs
            ]:
                ref = plan.job.merged.resolve(op, tensor.index, is_input)
                right_path = getattr(ref, "op_name", None) and inputs.off_dir.latest_location(
                    ref.op_name
                )
                if not right_path:
                    continue
                right_dump = read_dump(right_path)
                right = right_dump.outputs[ref.output_index]
                direct = kernel and direct_plan(dump, tensor, right_dump, right) is not None
                held = sum(len(d._content or b"") for d in (dump, right_dump))
                needs.append(held + pair_need(tensor, right, kernel, direct))
            need = comparer.op_memory(op)
            assert need == max(needs)
            graph_op = inputs.on_graph.op(op.name)
            bound = op_need(
                inputs.on_dir.latest_bytes(op.name),
                dump_dtypes(graph_op, inputs.on_graph),
                kernel,
                widest_bits(inputs.off_dtypes),
            )
            if dump._content is None:  # a big file: its pairs as the bound counts them, or less
                assert need <= bound
            checked += 1
    assert checked >= 10


@pytest.fixture
def fixed_base(monkeypatch):
    """A comparing process counted at WORKER_BASE_BYTES (as where /proc does not tell what
    the planning process holds): the tests below are about the need, not that base."""
    from fusion_switch.compare import worker_memory

    monkeypatch.setattr(worker_memory, "resident_bytes", lambda: 0)


def _rows_of(inputs) -> int:
    """What the plan counts for the rows of a discovered comparison."""
    from fusion_switch.compare.worker_memory import rows_bytes

    return rows_bytes(inputs.comparing_bound.rows)


def test_a_budget_the_bound_fits_one_worker_in_fits_two_by_the_headers(large, tmp_path, fixed_base):
    """The budget of two workers by the headers' need: the bound alone fitted one there (the
    plan's worker count before this change), and the comparison's rows are those of an
    unbounded run."""
    from fusion_switch.compare.engine import _largest_need, discover, pair, run_compare
    from fusion_switch.compare.result_csv import read_result_csv

    if not metrics.kernel_in_use():
        pytest.skip("the direct path needs the compiled kernel")
    inputs = discover(_request(large, tmp_path / "probe"))
    plan = pair(inputs)
    bound = inputs.comparing_bound.largest_need
    need = _largest_need(inputs, plan.job, plan.groups)
    assert need < bound
    rows = _rows_of(inputs)
    budget = 2 * worker_bytes(need) + rows
    assert workers_within(budget - rows, bound) == 1
    assert pair(discover(_request(large, tmp_path / "a", budget))).workers == 2
    bounded = run_compare(_request(large, tmp_path / "b", budget))
    unbounded = run_compare(_request(large, tmp_path / "c"))
    assert read_result_csv(bounded.csv_path) == read_result_csv(unbounded.csv_path)


def test_no_header_is_read_where_the_bound_does_not_keep_a_worker_out(
    large, tmp_path, monkeypatch, fixed_base
):
    """A budget that holds one worker's base only, or every worker by the bound: narrowing
    could not add a worker, so the plan reads no header for it (64 at most, ~0.5 ms each)."""
    from fusion_switch.compare.engine import discover, pair
    from fusion_switch.compare.worker_memory import WORKER_BASE_BYTES
    from fusion_switch.compare.workers import GroupComparer

    inputs = discover(_request(large, tmp_path / "probe"))
    bound = inputs.comparing_bound.largest_need
    asked: list[str] = []
    real = GroupComparer.op_memory
    monkeypatch.setattr(
        GroupComparer, "op_memory", lambda self, op: asked.append(op.name) or real(self, op)
    )
    rows = _rows_of(inputs)
    for budget in (WORKER_BASE_BYTES + (1 << 20), 2 * worker_bytes(bound) + rows):
        workers = pair(discover(_request(large, tmp_path / str(budget), budget))).workers
        assert workers == min(2, workers_within(budget - rows, bound))
    assert asked == []
    narrowed = 2 * worker_bytes(bound) + rows - 1
    pair(discover(_request(large, tmp_path / "narrowed", narrowed)))
    assert asked  # the test's own check: the bound keeping a worker out reads them


def _convrelu_need(request) -> int | None:
    from fusion_switch.compare.engine import discover, pair
    from fusion_switch.compare.workers import GroupComparer

    plan = pair(discover(request))
    (op,) = [op for members in plan.groups for op in members if op.name == "convrelu"]
    return GroupComparer(plan.job, plan.groups).op_memory(op)


def test_op_memory_on_files_the_comparison_reports(tmp_path):
    """What the comparison reports as a row's reason is no error here: an unreadable
    fusion-on dump leaves the bound (None), a missing fusion-off dump counts nothing for its
    pair, a .npy fusion-off dump and a dtype the metrics cannot read count on the general
    path; a readable pair counts as :func:`pair_need` gives it."""
    from fusion_switch.readers.dump_write import TensorSpec, write_dump

    from tests.compare.test_engine import RELU, STAMP, X, make_case

    def case(name: str, **kwargs):
        (tmp_path / name).mkdir()
        return make_case(tmp_path / name, **kwargs)

    read = case("read")
    need = _convrelu_need(read)
    assert need is not None and need > 0
    missing = case("missing", skip=("Relu.relu",))
    assert _convrelu_need(missing) < need  # its output pairs with no file: its input's pair
    truncated = case("truncated")
    (path,) = Path(truncated.on_dump).iterdir()
    path.write_bytes(path.read_bytes()[:-10])
    assert _convrelu_need(truncated) is None
    npy = case("npy")
    for old in Path(npy.off_dump).iterdir():
        old.unlink()
    import numpy as np

    np.save(Path(npy.off_dump) / f"relu.0.{STAMP}.npy", RELU)
    assert _convrelu_need(npy) > 0
    strings = case("strings")
    (path,) = Path(strings.on_dump).iterdir()
    write_dump(
        path, "convrelu", [TensorSpec(X)], [TensorSpec(b"\x00" * 16, data_type=13, shape=(4,))]
    )
    assert _convrelu_need(strings) > 0


def test_the_comparing_process_is_counted_by_what_it_holds_and_its_rows(
    large, tmp_path, monkeypatch
):
    """Each comparing process holds what the planning one held when it forked it (graphs,
    dump indexes, numpy), and the planning one adds its rows: at 15,017 ops a 300 MiB budget
    ran two processes of 255 and 178 MB (the tree at 434 MB) when each was counted at 96 MiB.
    The plan now counts the process's resident memory at planning time, and its rows."""
    from fusion_switch.compare import worker_memory
    from fusion_switch.compare.engine import _largest_need, discover, pair
    from fusion_switch.compare.worker_memory import PROCESS_MARGIN_BYTES

    inputs = discover(_request(large, tmp_path / "probe"))
    plan = pair(inputs)
    rows = _rows_of(inputs)
    assert rows > 0
    need = _largest_need(inputs, plan.job, plan.groups)
    held = 200 << 20  # as a 15,000-op graph's process holds when it plans
    monkeypatch.setattr(worker_memory, "resident_bytes", lambda: held)
    one = held + PROCESS_MARGIN_BYTES + need  # above WORKER_BASE_BYTES, the floor
    budget = 2 * one + rows  # two processes and the rows, exactly
    assert pair(discover(_request(large, tmp_path / "two", budget))).workers == 2
    assert pair(discover(_request(large, tmp_path / "one", budget - 1))).workers == 1
    # not known (no /proc), or less: a process counts as WORKER_BASE_BYTES, as before
    monkeypatch.setattr(worker_memory, "resident_bytes", lambda: 0)
    base = worker_memory.WORKER_BASE_BYTES + need
    assert pair(discover(_request(large, tmp_path / "base", 2 * base + rows))).workers == 2


def test_a_budget_below_one_comparing_process_says_so(large, tmp_path, monkeypatch):
    """It still runs, on one process, and the plan's notes say what one process holds."""
    from fusion_switch.compare import worker_memory
    from fusion_switch.compare.engine import discover, pair

    monkeypatch.setattr(worker_memory, "resident_bytes", lambda: 300 << 20)
    plan = pair(discover(_request(large, tmp_path / "tight", 200 << 20)))
    assert plan.workers == 1
    (note,) = [n for n in plan.notes if "--memory-budget" in n]
    assert "(200 MiB)" in note and "one comparing process" in note
    roomy = pair(discover(_request(large, tmp_path / "roomy", 8 << 30)))
    assert not [n for n in roomy.notes if "--memory-budget" in n]


def test_resident_bytes_is_this_processs_resident_memory():
    import resource

    from fusion_switch.compare.worker_memory import resident_bytes

    now = resident_bytes()
    if not Path("/proc/self/statm").exists():
        assert now == 0
        return
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    assert 10 << 20 < now <= peak


@pytest.mark.parametrize("fits", [True, False])
def test_graphs_too_big_for_the_budget_side_by_side_are_read_one_after_the_other(
    large, tmp_path, monkeypatch, fits
):
    """At 15,017 ops the fusion-off graph's helper and the comparing process held 308 MB
    together while the two graphs were read, over a 300 MiB budget. When the budget does not
    hold both graphs (``graphs_fit_together``), the helper answers, and its process ends,
    before the fusion-on graph is read; otherwise the two are read side by side."""
    from fusion_switch.compare import discover as discover_module
    from fusion_switch.compare import forked, worker_memory
    from fusion_switch.compare.engine import discover

    monkeypatch.setattr(forked, "GRAPH_FORK_BYTES", 0)  # a helper for a small graph too
    monkeypatch.setattr(worker_memory, "graphs_fit_together", lambda *sizes: fits)
    events: list[str] = []
    load, digest = discover_module._load_graph, discover_module._DigestReader.digest

    def loading(path, role, *args, **kwargs):
        events.append(f"load {role}")
        return load(path, role, *args, **kwargs)

    def answered(self):
        found = digest(self)
        events.append("digest")
        return found

    monkeypatch.setattr(discover_module, "_load_graph", loading)
    monkeypatch.setattr(discover_module._DigestReader, "digest", answered)
    inputs = discover(_request(large, tmp_path / "out", 1 << 30))
    assert inputs.off_rule is not None
    expected = ["load fusion-on", "digest"] if fits else ["digest", "load fusion-on"]
    assert events == expected
    # no budget: side by side, whatever the sizes
    events.clear()
    discover(_request(large, tmp_path / "free"))
    assert events == ["load fusion-on", "digest"]


@pytest.mark.parametrize("scheduler", [None, "local"])
def test_a_helper_kept_for_the_replay_ends_before_the_other_graph_when_both_do_not_fit(
    large, tmp_path, monkeypatch, scheduler
):
    """With the replay on, the command line's fusion-off helper stays after its digest, with
    its graph, to run the replay: it kept its graph while the fusion-on one was read, and a
    300 MiB budget at 15,017 ops peaked at 384 MiB with the replay left out (279 MiB with
    --no-replay). A budget that does not hold both graphs cannot hold the replay beside the
    comparison either: the helper is ended once it answered; the replay, where it runs,
    reads the graph itself. Not with a scheduler: the replay then always runs beside the
    Dask workers, in the helper (ended, it was read again: 929-981 MiB of PSS for 879-895;
    a review)."""
    import argparse

    import psutil
    from fusion_switch.cli.compare_ahead import read_fusion_off_graph_ahead
    from fusion_switch.compare import discover as discover_module
    from fusion_switch.compare import forked, worker_memory
    from fusion_switch.compare.engine import discover

    monkeypatch.setattr(forked, "GRAPH_FORK_BYTES", 0)  # a helper for a small graph too
    monkeypatch.setattr(worker_memory, "graphs_fit_together", lambda *sizes: False)
    args = argparse.Namespace(
        on_graph=str(large.on_graph), off_graph=str(large.off_graph), rank=None,
        no_replay=False, on_dump=str(large.on_dump), off_dump=str(large.off_dump),
    )  # fmt: skip
    read_fusion_off_graph_ahead(args)
    helper = forked._AHEAD[forked.path_key("digest", large.off_graph)]
    assert helper.keep  # kept for the replay
    pid = helper._process.pid
    events: list[str] = []
    load = discover_module._load_graph

    def loading(path, role, *args, **kwargs):
        alive = psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"
        events.append(f"load {role}, helper {'alive' if alive else 'ended'}")
        return load(path, role, *args, **kwargs)

    monkeypatch.setattr(discover_module, "_load_graph", loading)
    request = _request(large, tmp_path / "out", 1 << 30)
    request.scheduler = scheduler
    try:
        inputs = discover(request)
        kept = forked.take_ahead(discover_module.host_key(large.off_graph))
        if kept is not None:
            kept.close()
    finally:
        forked.close_ahead()
    assert inputs.off_rule is not None
    if scheduler is None:
        assert events == ["load fusion-on, helper ended"] and kept is None
    else:
        assert events == ["load fusion-on, helper alive"] and kept is not None


def test_graphs_fit_together_counts_both_graphs_and_one_base():
    from fusion_switch.compare.worker_memory import (
        GRAPH_BYTES_PER_FILE_BYTE,
        WORKER_BASE_BYTES,
        graphs_fit_together,
    )

    on, off = 41 << 20, 53 << 20  # the 15,017-op case's files
    both = WORKER_BASE_BYTES + GRAPH_BYTES_PER_FILE_BYTE * (on + off)
    assert graphs_fit_together(both, on, off)
    assert not graphs_fit_together(both - 1, on, off)
    assert not graphs_fit_together(300 << 20, on, off)


_ROWS_SCRIPT = """
import sys
from fusion_switch.compare.engine import CompareRequest, discover, measure, pair, write
from fusion_switch.compare.worker_memory import resident_bytes, row_count
from fusion_switch.diagnose.thresholds import RowIndex

inputs = discover(CompareRequest(*sys.argv[1:], workers=1))
plan = pair(inputs)
index = RowIndex()
before = resident_bytes()
outcome = write(plan, measure(plan), rows_ready=index.feed)  # as the command line gathers them
print(resident_bytes() - before, len(outcome.rows), row_count(inputs.on_graph, inputs.on_dir))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads Linux's VmRSS")
def test_the_rows_the_comparing_process_gathers_are_within_their_count(many_ops_case, tmp_path):
    """``row_count`` bounds the rows of a comparison from the graph and the dump index alone,
    and :data:`ROW_BYTES` each, with one process's margin for the comparison's caches, what
    gathering and judging them adds to the comparing process. They were counted by fusion-on
    op, 8 KiB each: at 5,018 ops 35-40 MiB for 24 MB measured, which ran the replay after the
    comparison under a 300 MiB budget where both fitted (230 MiB)."""
    from fusion_switch.compare.worker_memory import PROCESS_MARGIN_BYTES, rows_bytes

    case = many_ops_case
    paths = (case.on_dump, case.off_dump, case.on_graph, case.off_graph, tmp_path / "out")
    done = subprocess.run(
        [sys.executable, "-c", _ROWS_SCRIPT, *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    growth, rows, counted = (int(word) for word in done.stdout.split())
    assert 0 < rows <= counted
    assert 0 < growth <= rows_bytes(counted) + PROCESS_MARGIN_BYTES, (growth, rows, counted)
