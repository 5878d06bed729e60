"""The fusion-off digest helper (forked by ``compare`` before the job loads) needs only the graph
reader and the pairing rule: it must not import numpy, the dump readers or the metrics, which
cost it ~0.15 s before it could start parsing (issue 16, sixth round). Its digest is the one
this process would make."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from fusion_switch.compare.discover import _digest
from fusion_switch.readers.graph import load_graph
from fusion_switch.synth.generator import generate_case


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    return generate_case(tmp_path_factory.mktemp("case"), n_ops=30, seed=11, graph_text=False)


def test_the_digest_helper_body_loads_no_numpy_and_digests_the_graph(generated):
    script = textwrap.dedent(
        """
        import json, pickle, sys
        from fusion_switch.cli.compare_ahead import fusion_off_digest
        told = []
        kind, digest = fusion_off_digest(sys.argv[1], tell=told.append)
        heavy = sorted(
            name for name in sys.modules
            if name == "numpy" or name.startswith(("fusion_switch.compare.metrics",
                                                   "fusion_switch.readers.dump"))
            and name != "fusion_switch.readers.dumpdir"
        )
        print(json.dumps({"kind": kind, "told": told, "heavy": heavy}))
        sys.stdout.flush()
        sys.stdout.buffer.write(pickle.dumps(digest))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(generated.off_graph)],
        capture_output=True,
        check=True,
    )
    first, _, pickled = done.stdout.partition(b"\n")
    report = json.loads(first)
    assert report["heavy"] == []
    assert report["kind"] == "ok"
    graph = load_graph(generated.off_graph)
    assert report["told"] == [graph.name]
    import pickle

    theirs, ours = pickle.loads(pickled), _digest(graph)
    assert (theirs.name, theirs.fusion_marks, theirs.op_names) == (
        ours.name,
        ours.fusion_marks,
        ours.op_names,
    )
    assert [(op.name, op.group, op.inputs, op.original_names) for op in theirs.rule.ops] == [
        (op.name, op.group, op.inputs, op.original_names) for op in ours.rule.ops
    ]


def test_without_the_replay_the_helper_reads_no_input_descs_and_digests_the_same(
    generated, monkeypatch
):
    """Nothing of the digest reads an op's input descs (pairing takes input names and output
    descs): without a replay to keep the graph for, the helper leaves them out, ~40-80 ms less
    on the comparison's critical path at 5,000 ops (issue 16, nineteenth round). With the
    replay, the graph it keeps has them: the original ops' kernels take their layout."""
    from fusion_switch.compare import pairing

    asked: list[bool] = []

    def spying(path, input_descs=True):
        asked.append(input_descs)
        return load_graph(path, input_descs)

    monkeypatch.setattr(pairing, "load_graph", spying)
    kind, lean = pairing.digest_in_child(generated.off_graph, lambda name: None)
    assert (kind, asked) == ("ok", [False])

    kept: list = []
    answer = pairing.digest_in_child(
        generated.off_graph, lambda name: None, lambda graph, receive: kept.append(graph)
    )
    assert asked == [False, True]
    answer.then(lambda: None)
    assert kept[0].input_descs_read
    assert any(op.input_descs for op in kept[0].ops)
    kind, full = answer.answer
    assert kind == "ok"
    assert (lean.name, lean.fusion_marks, lean.op_names, lean.output_dtypes) == (
        full.name,
        full.fusion_marks,
        full.op_names,
        full.output_dtypes,
    )
    assert lean.rule.ops == full.rule.ops
