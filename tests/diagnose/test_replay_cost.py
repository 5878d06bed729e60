"""What makes the replay cheap must not change what it finds (issue 16).

The replay reuses what the comparison already built (the indexed dump folders), its evidence
cache evicts without scanning, and its rounding and score have fast paths that must give the
very same bits as the general formulas they stand in for.
"""

from __future__ import annotations

import pytest
from fusion_switch.compare.engine import CompareRequest, run_compare
from fusion_switch.diagnose import evidence
from fusion_switch.diagnose.evidence import EvidenceStore
from fusion_switch.diagnose.replay_job import replay_outcome
from fusion_switch.readers import dumpdir
from fusion_switch.synth.generator import generate_case


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    root = tmp_path_factory.mktemp("cost")
    case = generate_case(root / "case", n_ops=70, faults=["dropped_scale"], graph_text=False)
    request = CompareRequest(
        case.on_dump, case.off_dump, case.on_graph, case.off_graph, root / "out"
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
    assert store.files_read == {outcome.on_dumps.latest(n) for n in readable}
