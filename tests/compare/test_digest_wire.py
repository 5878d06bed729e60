"""The fusion-off digest travels from its helper process as msgpack (``GraphDigest.__reduce__``):
it must come back as the very rule the helper made (every field of every op, the groups and
``group_of`` in their order, each op one object in both), on every real graph, on the 5,000-op
bench graph when it is there, and on hand-made rules with the shapes the merge depends on.
Whatever the wire cannot carry is pickled the default way; a message that does not decode is
an unpickling error, which the caller answers by reading the graph itself."""

from __future__ import annotations

import pickle
import uuid

import pytest
from fusion_switch.compare import pairing
from fusion_switch.compare.discover import _DigestReader
from fusion_switch.readers.graph import load_graph
from handmade_graphs import desc, graph, op
from msgspec.structs import astuple
from test_pairing_fast import BENCH, REAL_GRAPHS, rule_snapshot


def snapshot(digest: pairing.GraphDigest) -> tuple:
    """Everything a digest holds, the rule with the values' types (``True`` is not ``1``)."""
    return (
        digest.path,
        digest.name,
        digest.fusion_marks,
        digest.op_names,
        digest.output_dtypes,
        rule_snapshot(digest.rule),
    )


def same_objects(rule: pairing.FusionRule) -> bool:
    """Each op of the groups is the object ``rule.ops`` holds (the merge mutates them)."""
    grouped = [id(item) for members in rule.groups.values() for item in members]
    return sorted(grouped) == sorted(id(item) for item in rule.ops)


def travelled(digest: pairing.GraphDigest, wire: bool) -> pairing.GraphDigest:
    assert (digest.__reduce__()[0] is pairing._digest_from_wire) is wire
    back = pickle.loads(pickle.dumps(digest, protocol=pickle.HIGHEST_PROTOCOL))
    assert snapshot(back) == snapshot(digest)
    assert same_objects(back.rule)
    return back


@pytest.mark.parametrize("path", REAL_GRAPHS + BENCH, ids=lambda p: p.name)
def test_the_digest_of_a_real_graph_comes_back_whole_over_the_wire(path):
    digest = pairing.graph_digest(load_graph(path, input_descs=False))
    travelled(digest, wire=True)


def test_the_real_graphs_are_read():
    """A parametrisation over nothing would pass silently: the samples hold nine graphs."""
    assert len(REAL_GRAPHS) >= 9


def test_uuid_and_l1_groups_repeated_names_and_warnings_come_back_in_their_order():
    rule_graph = graph(
        "g",
        op("a", "Conv2D", 5, originals=["x", "y"], outputs=[desc("x", 0)]),  # a uuid3 key
        op("part0", "Conv2D", 1, originals=["c"], l1="7", outputs=[desc("c", 0)]),
        op("part1", "Relu", 2, ("part0:0",), originals=["r"], l1="7", outputs=[desc("r", 0)]),
        op("dup", "Relu", 3, originals=["p"]),
        op("dup", "Relu", 4, originals=["q"]),  # same name, another group: group_of moves on
        op("solo", "Add", 0, ("a:0", "dup:0")),
    )
    digest = pairing.graph_digest(rule_graph)
    digest.rule.warnings.append("a warning")
    assert any(type(key) is uuid.UUID for key in digest.rule.groups)
    assert [len(members) for members in digest.rule.groups.values()].count(2) == 1
    back = travelled(digest, wire=True)
    assert back.rule.group_of["dup"] == "q"
    merged = [  # the merge walks group_of backwards: the same rows from either rule
        pairing.merge_rules(pairing.fusion_rule(graph("on", fused)), rule)
        for fused in [op("fused", "Conv2D", 0, originals=["x", "y"], outputs=[desc("x", 0)])]
        for rule in (digest.rule, back.rule)
    ]
    assert merged[0].warnings == merged[1].warnings
    assert [repr(astuple(m)) for group in merged[0].ordered_groups() for m in group] == [
        repr(astuple(m)) for group in merged[1].ordered_groups() for m in group
    ]


def test_a_group_out_of_graph_id_order_is_pickled_the_default_way():
    """An L1 group whose later op has the smaller id: rule.ops (sorted by id) does not hold
    the group's order, so the wire could not rebuild it."""
    rule_graph = graph(
        "g",
        op("part0", "Conv2D", 9, originals=["c"], l1="7", outputs=[desc("c", 0)]),
        op("part1", "Relu", 2, ("part0:0",), originals=["r"], l1="7", outputs=[desc("r", 0)]),
    )
    digest = pairing.graph_digest(rule_graph)
    (members,) = digest.rule.groups.values()
    assert [m.name for m in members] == ["part0", "part1"]
    assert [m.name for m in digest.rule.ops] == ["part1", "part0"]
    back = travelled(digest, wire=False)
    assert [m.name for m in next(iter(back.rule.groups.values()))] == ["part0", "part1"]


def test_what_msgpack_cannot_carry_is_pickled_the_default_way():
    digest = pairing.graph_digest(graph("g", op("bad\udcff", "Relu", 0), op("big", "Relu", 1)))
    travelled(digest, wire=False)  # a lone surrogate is not UTF-8
    digest = pairing.graph_digest(graph("g", op("big", "Relu", 2**70)))
    travelled(digest, wire=False)  # beyond msgpack's 64 bits


def test_a_message_that_does_not_decode_is_an_unpickling_error():
    with pytest.raises(pickle.UnpicklingError, match="does not decode"):
        pairing._digest_from_wire(b"\x93\x01\x02")
    digest = pairing.graph_digest(graph("g", op("a", "Relu", 0), op("b", "Relu", 1)))
    data = pairing._WIRE_ENCODER.encode(pairing._digest_wire(digest))
    with pytest.raises(pickle.UnpicklingError):
        pairing._digest_from_wire(data[:-3])


def test_the_job_reads_the_graph_itself_when_the_helpers_digest_does_not_decode(
    tmp_path, monkeypatch
):
    """The helper's answer unpickles in the job: if that fails, the digest is still made."""
    import json

    import msgspec
    from handmade_graphs import graph_json

    path = tmp_path / "off.json"
    path.write_text(json.dumps(graph_json("off", op("a", "Relu", 0), op("b", "Relu", 1))))

    calls: list[int] = []

    class Broken:
        def decode(self, data: bytes):
            calls.append(len(data))
            raise msgspec.DecodeError("planted")

    monkeypatch.setattr(pairing, "_WIRE_DECODER", Broken())  # the job's side only
    monkeypatch.setattr("fusion_switch.compare.forked.GRAPH_FORK_BYTES", 0)
    reader = _DigestReader(path, "fusion-off", "fork")
    try:
        assert reader.busy  # a helper was forked; its answer came over the wire
        digest = reader.digest()
    finally:
        reader.close()
    assert len(calls) == 1  # the helper's answer was tried, then the graph read here
    assert snapshot(digest) == snapshot(pairing.graph_digest(load_graph(path)))


@pytest.mark.parametrize("field", ["group", "named_keys"])
def test_a_negative_place_in_a_message_is_an_unpickling_error_not_a_wrapped_index(field):
    """Python's negative indexing would take the last key instead of raising: a corrupt
    message must not decode into another rule."""
    digest = pairing.graph_digest(graph("g", op("a", "Relu", 0), op("b", "Relu", 1)))
    wire = pairing._digest_wire(digest)
    if field == "group":
        wire.ops[0].group = -1
    else:
        wire.named_keys[0] = -1
    with pytest.raises(pickle.UnpicklingError):
        pairing._digest_from_wire(pairing._WIRE_ENCODER.encode(wire))


def test_the_wire_codecs_are_built_with_the_signals_held():
    """msgspec does not survive a Ctrl-C inside its C code (readers/signals_held.py): the
    digest's codecs are built with SIGINT and SIGTERM held, as the graph decoder is."""
    import subprocess
    import sys

    script = """
import signal, msgspec
real = msgspec.msgpack.Decoder
seen = []
def recording(*args, **kwargs):
    seen.append(signal.pthread_sigmask(signal.SIG_BLOCK, []))
    return real(*args, **kwargs)
msgspec.msgpack.Decoder = recording
import fusion_switch.compare.pairing
print(bool(seen) and {signal.SIGINT, signal.SIGTERM} <= seen[-1])
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.stdout.split() == ["True"], done.stderr
