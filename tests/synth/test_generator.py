"""The realistic case generator: layout, graph attributes, dump contents, faults and their truth."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from fusion_switch.catalogue import builtin_catalogue
from fusion_switch.readers.dump import read_dump
from fusion_switch.synth.faults import FAULT_KINDS, Fault
from fusion_switch.synth.generator import build_fusion_on, generate_case
from fusion_switch.synth.network import (
    OPS_PER_BLOCK,
    STEM_OPS,
    blocks_for,
    build_network,
)

# msaccucmp's offline dump file name pattern (formats.md 7)
MSACCUCMP_NAME = re.compile(
    r"^[A-Za-z0-9_-]+\.([A-Za-z0-9_-]+)\.[0-9]+(\.[0-9]+)?\.[0-9]{1,255}"
    r"(\.[0-9]+\.[0-9]+\.[0-9]+)?(\.[0-9]+)?$"
)


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    return generate_case(tmp_path_factory.mktemp("case"), n_ops=40, faults=["dropped_scale@0"])


def _graph(path):
    return json.loads(path.read_text())


def _attrs(op):
    return {a["key"]: a["value"] for a in op.get("attr", [])}


def _from_nc1hwc0(dev: np.ndarray, shape) -> np.ndarray:
    n, c1, h, w, c0 = dev.shape
    return dev.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w)[:, : shape[1]]


def test_dump_folders_follow_the_cann_layout(case):
    for leaf, graph_path in ((case.on_dump, case.on_graph), (case.off_dump, case.off_graph)):
        parts = leaf.relative_to(case.root).parts
        # {side}/dump/{time}/{device}/{model_name}/{model_id}/{iteration}
        assert parts[1] == "dump" and re.fullmatch(r"\d{14}", parts[2]) and parts[3] == "0"
        assert parts[4] == _graph(graph_path)["graph"][0]["name"]
        assert parts[5].isdigit() and parts[6] == "0"
        names = sorted(p.name for p in leaf.iterdir())
        assert names and all(MSACCUCMP_NAME.match(n) for n in names)
        assert all(len(n.rsplit(".", 1)[1]) == 16 for n in names)  # µs timestamps


def test_every_op_with_a_task_has_one_dump_and_sources_none(case):
    for leaf, graph_path in ((case.on_dump, case.on_graph), (case.off_dump, case.off_graph)):
        ops = _graph(graph_path)["graph"][0]["op"]
        dumped = sorted(p.name.split(".")[1] for p in leaf.iterdir())
        expected = sorted(
            op["name"] for op in ops if op["type"] not in ("Data", "Const", "NetOutput")
        )
        assert dumped == expected


def test_fusion_on_graph_carries_the_attributes_ge_sets(case):
    catalogue = builtin_catalogue()
    off_names = {op["name"] for op in _graph(case.off_graph)["graph"][0]["op"]}
    on = _graph(case.on_graph)
    assert _attrs(on["graph"][0])["soc_version"] == {"s": "Ascend910B1"}
    ops = on["graph"][0]["op"]
    ids = [op.get("id", 0) for op in ops]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    fused = [op for op in ops if "pass_name" in _attrs(op)]
    assert len(fused) >= 10
    for op in fused:
        attrs = _attrs(op)
        originals = attrs["_datadump_original_op_names"]["list"]["s"]
        assert set(originals) <= off_names
        passes = attrs["pass_name"]["list"]["s"]
        ub = attrs.get("pass_name_ub", {}).get("s")
        for name in passes:
            want = "UBFusion" if name == ub else "GraphFusion"
            assert catalogue.get(name, want) is not None, (op["name"], name, want)
        if ub is not None:
            assert passes[-1] == ub and attrs["fusion_scope"]["i"] > 0
        for desc in op["output_desc"]:
            d = _attrs(desc)
            assert d["_datadump_origin_name"]["s"] in off_names
            assert "origin_shape" in d and "origin_format" in d
    transdata = [op for op in ops if op["type"] == "TransData"]
    assert transdata, "device formats need TransData ops on the fusion-on side"
    for op in transdata:
        assert _attrs(op)["_datadump_original_op_names"] == {"list": {"val_type": "VT_LIST_STRING"}}
    multi = [op for op in ops if len(op.get("output_desc", [])) == 2]
    assert multi and all(op["type"] == "SplitVD" for op in multi)


def test_dumps_hold_the_values_of_the_original_network(case):
    net = build_network(case.truth["n_blocks"], seed=0)
    values = net.evaluate()
    name = "b0_bn1"
    (path,) = [p for p in case.off_dump.iterdir() if p.name.startswith(f"BatchNorm.{name}.")]
    dump = read_dump(path)
    np.testing.assert_array_equal(dump.array(dump.outputs[0]), values[name][0])
    np.testing.assert_array_equal(dump.array(dump.inputs[0]), values["b0_conv1"][0])


def test_fusion_on_outputs_are_in_device_formats_with_host_shape(case):
    (path,) = [p for p in case.on_dump.iterdir() if ".b0_conv1b0_relu1." in p.name]
    dump = read_dump(path)
    out = dump.outputs[0]
    assert out.format == 3 and len(out.shape) == 5  # NC1HWC0
    assert tuple(out.original_shape) == (1, 16, 16, 16)
    assert out.original_op.name == "b0_relu1"
    net = build_network(case.truth["n_blocks"], seed=0)
    expected = net.evaluate()["b0_relu1"][0]
    host = _from_nc1hwc0(dump.array(out), out.original_shape)
    np.testing.assert_allclose(host, expected, rtol=1e-4, atol=1e-5)


def test_host_formats_write_no_transdata(tmp_path):
    c = generate_case(tmp_path, n_ops=30, faults=[], formats="host", graph_text=False)
    types = {op["type"] for op in _graph(c.on_graph)["graph"][0]["op"]}
    assert "TransData" not in types
    assert c.truth["faults"] == []


def test_clean_fusion_on_matches_fusion_off():
    net = build_network(2, seed=3)
    off = net.evaluate()
    on_ops, faulty = build_fusion_on(net, [], "device")
    assert faulty == []
    for op in on_ops:
        for out in op.outputs:
            ref = off[out.origin][out.origin_index].astype(np.float32)
            np.testing.assert_allclose(out.value.astype(np.float32), ref, rtol=2e-3, atol=2e-3)


SUBTLE_KINDS = {"approx_gelu"}


def _red(x: np.ndarray, y: np.ndarray) -> float:
    x, y = x.astype(np.float64).ravel(), y.astype(np.float64).ravel()
    return float(np.sqrt(((x - y) ** 2).sum() / (y**2).sum()))


@pytest.mark.parametrize("kind", sorted(FAULT_KINDS))
def test_each_fault_changes_its_op_and_propagates(kind):
    net = build_network(2, seed=1)
    off = net.evaluate()
    on_ops, faulty = build_fusion_on(net, [Fault(kind, 0)], "device")
    ((_fault, op),) = faulty
    assert op.key == FAULT_KINDS[kind].target and op.block == 0
    assert (FAULT_KINDS[kind].rule, FAULT_KINDS[kind].section) in op.passes
    for value, ref in zip(op.input_values, op.inputs, strict=True):
        del ref
        assert np.isfinite(value.astype(np.float32)).all()
    out = op.outputs[0]
    truth = off[out.origin][out.origin_index]
    if kind in SUBTLE_KINDS:  # below msaccucmp's bands, yet far above the float16 floor
        x, y = out.value.astype(np.float64), truth.astype(np.float64)
        assert 1e-3 < _red(out.value, truth) < 0.05
        assert np.abs(x - y).max() / np.abs(y).max() > 5 * 2.0**-10
    else:
        assert _red(out.value, truth) > 0.05, "the fault must push its op out of band"
    # inputs of the faulty op still agree with the fusion-off run (the error starts here)
    position = on_ops.index(op)
    for earlier in on_ops[:position]:
        for o in earlier.outputs:
            ref = off[o.origin][o.origin_index]
            assert _red(o.value, ref) < 1e-3, earlier.name
    # and the error reaches the end of the network
    last = [o for o in on_ops if o.outputs and o.type == "Add"][-1].outputs[0]
    assert _red(last.value, off[last.origin][last.origin_index]) > 1e-3
    if kind == "dropped_scale":
        x, y = out.value.ravel().astype(np.float64), truth.ravel().astype(np.float64)
        cosine = x @ y / np.linalg.norm(x) / np.linalg.norm(y)
        assert cosine == pytest.approx(1.0, abs=1e-6)
        np.testing.assert_allclose(x, 8 * y, rtol=1e-4, atol=1e-5)


def test_truth_names_the_faulty_op_and_rule(case):
    truth = json.loads(case.truth_path.read_text())
    assert truth == case.truth
    (entry,) = truth["faults"]
    assert entry["kind"] == "dropped_scale" and entry["block"] == 0
    assert entry["op"] == "b0_conv2" and entry["rule"] == "AConv2dMulFusion"
    assert entry["section"] == "GraphFusion"
    assert entry["original_ops"] == ["b0_conv2", "b0_scale2"]
    assert any(entry["op"] in p.name for p in case.on_dump.iterdir())


def test_fusion_result_lists_the_rules_that_fired(case):
    result = json.loads(case.fusion_result.read_text())
    blocks = case.truth["n_blocks"]
    assert blocks == 2
    assert result["graph_fusion"]["AConv2dMulFusion"]["effect_times"] == str(blocks)
    # the stem conv and every block's conv1 are UB-fused by the same rule
    assert result["ub_fusion"]["TbeCommonRules0FusionPass"]["effect_times"] == str(blocks + 1)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "no_such_fault",
            "unknown fault kind 'no_such_fault'; known kinds: approx_gelu, dropped_bias, "
            "dropped_relu, dropped_scale, fp16_saturation, inverted_gate",
        ),
        ("wrong_axis@x", "bad fault 'wrong_axis@x'"),
    ],
)
def test_bad_fault_specs_say_what_is_known(spec, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        Fault.parse(spec)


def test_fault_block_out_of_range_is_rejected(tmp_path):
    with pytest.raises(ValueError, match=r"block 7 outside 0\.\.0"):
        generate_case(tmp_path, n_ops=10, faults=["wrong_axis@7"])


def test_size_scales_by_whole_blocks():
    assert blocks_for(1) == 1
    assert blocks_for(STEM_OPS + OPS_PER_BLOCK) == 1
    assert blocks_for(STEM_OPS + OPS_PER_BLOCK + 1) == 2
    assert STEM_OPS + OPS_PER_BLOCK * blocks_for(5000) >= 5000


def test_regenerating_into_the_same_folder_replaces_the_old_case(tmp_path):
    first = generate_case(tmp_path, n_ops=70, faults=[], graph_text=False)
    second = generate_case(tmp_path, n_ops=30, faults=[], graph_text=False)
    assert second.n_original_ops < first.n_original_ops
    dumped = {p.name.split(".")[1] for p in second.off_dump.iterdir()}
    assert "b2_conv1" not in dumped and "b0_conv1" in dumped


def test_a_folder_that_is_not_a_generated_case_is_not_overwritten(tmp_path):
    (tmp_path / "fusion_on").mkdir()
    (tmp_path / "fusion_on" / "precious.txt").write_text("keep me")
    with pytest.raises(ValueError, match="not a generated case"):
        generate_case(tmp_path, n_ops=10, faults=[])
    assert (tmp_path / "fusion_on" / "precious.txt").read_text() == "keep me"
