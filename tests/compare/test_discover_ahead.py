"""``discover`` indexes the fusion-off dump folder while the helper process still works out the
fusion-off digest (issue 16), and finds exactly what it finds without the helper."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fusion_switch.compare import discover as discover_module
from fusion_switch.compare import forked
from fusion_switch.compare.discover import CompareRequest, discover
from fusion_switch.synth.generator import generate_case


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    return generate_case(tmp_path_factory.mktemp("case"), n_ops=40, seed=5, graph_text=False)


def _root(leaf) -> Path:
    """The ``dump`` folder a user passes: time stamp / device / model / model id / 0 below."""
    return Path(leaf).parents[4]


def _request(case, out, swapped_dumps=False, start_method=None) -> CompareRequest:
    on_dump, off_dump = _root(case.on_dump), _root(case.off_dump)
    if swapped_dumps:
        on_dump, off_dump = off_dump, on_dump
    return CompareRequest(
        on_dump, off_dump, case.on_graph, case.off_graph, out, start_method=start_method
    )


def _found(inputs) -> tuple:
    return (
        inputs.on_dir.path,
        sorted(inputs.on_dir.op_names),
        inputs.off_dir.path,
        sorted(inputs.off_dir.op_names),
        inputs.off_dir.notes,
        inputs.swapped_dumps,
        inputs.notes,
        inputs.off_graph.name,
    )


def test_the_fusion_off_dumps_are_indexed_before_the_digest_arrives(
    generated, tmp_path, monkeypatch
):
    monkeypatch.setattr(forked, "GRAPH_FORK_BYTES", 0)  # always the helper
    events: list[tuple] = []
    scan, digest = discover_module.scan_dump_dir, discover_module._DigestReader.digest

    def recording_scan(path, *args, **kwargs):
        events.append(("scan", os.path.realpath(path)))
        return scan(path, *args, **kwargs)

    def recording_digest(self):
        events.append(("digest", self.busy))
        return digest(self)

    monkeypatch.setattr(discover_module, "scan_dump_dir", recording_scan)
    monkeypatch.setattr(discover_module._DigestReader, "digest", recording_digest)
    inputs = discover(_request(generated, tmp_path / "out"))
    off = ("scan", os.path.realpath(_root(generated.off_dump)))
    assert ("digest", True) in events  # the helper ran
    assert off in events and events.index(off) < events.index(("digest", True))
    assert events.count(off) == 1  # indexed once: the result ahead of time is used
    assert inputs.off_dir.path == Path(os.path.realpath(generated.off_dump))


@pytest.mark.parametrize("swapped_dumps", [False, True])
def test_the_helper_and_this_process_find_the_same(generated, tmp_path, monkeypatch, swapped_dumps):
    monkeypatch.setattr(forked, "GRAPH_FORK_BYTES", 0)
    helped = discover(_request(generated, tmp_path / "a", swapped_dumps))
    alone = discover(_request(generated, tmp_path / "b", swapped_dumps, start_method="spawn"))
    assert _found(helped) == _found(alone)
    assert helped.swapped_dumps is swapped_dumps


def test_a_bad_fusion_off_graph_read_by_the_helper_is_reported_as_before(
    generated, tmp_path, monkeypatch
):
    monkeypatch.setattr(forked, "GRAPH_FORK_BYTES", 0)
    broken = tmp_path / "broken_graph.json"
    broken.write_text('{"graph": [{"name": "g", "op": [')  # cut short
    request = _request(generated, tmp_path / "out")
    request.off_graph = broken
    with pytest.raises(discover_module.CompareInputError) as raised:
        discover(request)
    assert str(raised.value).startswith("fusion-off graph:") and str(broken) in str(raised.value)


def test_the_metrics_kernel_is_probed_while_the_helper_works(generated, tmp_path, monkeypatch):
    """The compiled kernel's first-use probe (~9 ms) runs before the fusion-off digest is
    taken, not after pairing on the critical path."""
    from fusion_switch.compare.metrics import native

    monkeypatch.setattr(forked, "GRAPH_FORK_BYTES", 0)  # always the helper
    monkeypatch.setattr(native, "_KERNEL_STATE", [])  # not probed yet in this process
    events: list[tuple] = []
    probe, digest = native._kernel_agrees_with_numpy, discover_module._DigestReader.digest

    def recording_probe():
        events.append(("probe",))
        return probe()

    def recording_digest(self):
        events.append(("digest", self.busy))
        return digest(self)

    monkeypatch.setattr(native, "_kernel_agrees_with_numpy", recording_probe)
    monkeypatch.setattr(discover_module._DigestReader, "digest", recording_digest)
    discover(_request(generated, tmp_path / "out"))
    if native._kernel is None:
        pytest.skip("the compiled kernel is not built here")  # then nothing is probed
    assert events[:2] == [("probe",), ("digest", True)]
