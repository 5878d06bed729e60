"""One job's chunks compared by several threads of one process: a Dask worker started with
``--nthreads`` above 1 does this (issue 16, a review of the cluster set-up). The metrics' work
buffers were the process's, shared by its threads, and 40-180 of 3,000 rows came out with
wrong metrics (a standard deviation of 0.0003 for equal tensors, NaN for finite ones)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from fusion_switch.compare.discover import CompareRequest, discover
from fusion_switch.compare.engine import pair
from fusion_switch.compare.workers import GroupComparer, rendered_chunk
from fusion_switch.synth.generator import generate_case


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    root = tmp_path_factory.mktemp("threads")
    case = generate_case(root / "case", n_ops=200, seed=5, graph_text=False)
    request = CompareRequest(case.on_dump, case.off_dump, case.on_graph, case.off_graph, root)
    return pair(discover(request))


@pytest.mark.parametrize("metrics", ["kernel", "numpy"])
def test_threads_of_one_process_give_the_rows_one_thread_gives(plan, metrics, monkeypatch):
    if metrics == "numpy":
        monkeypatch.setenv("FUSION_SWITCH_METRICS", "numpy")
    positions = list(range(len(plan.groups)))
    chunks = list(enumerate(positions[start : start + 8] for start in range(0, len(positions), 8)))
    assert len(chunks) >= 16, "the case must give the threads several chunks each"

    def text(item) -> str:
        number, positions = item
        result = rendered_chunk(GroupComparer(plan.job), number, positions)
        return result.rendered.text if result.rendered is not None else repr(result.rows)

    alone = [text(chunk) for chunk in chunks]
    for _ in range(3):
        with ThreadPoolExecutor(4) as pool:
            side_by_side = list(pool.map(text, chunks))
        differing = [n for n, (a, b) in enumerate(zip(alone, side_by_side, strict=True)) if a != b]
        assert differing == [], f"chunks {differing} differ when compared in threads"
