"""The replay never proves an innocent rule guilty from evidence that does not hold together
(a review of the attribution, thirty-fourth round of issue 16).

Each case has no fault in the fused op it looks at, yet the replay used to name its rule
"proven by replay" and exit 1:
- the two runs hold different weights (a later step dumped, or runs that diverged): the
  replay took the fusion-off weight, the fused op computed with its own (with its own, the
  replay agrees);
- dumps of two runs that do not belong together (another seed);
- a rule folded a constant in place (same name, other values) and the fusion-off dump of the
  original op was missing: the replay took the folded constant as the original one;
- the fusion-off graph given lacks one of the fused op's original ops: the replay read that
  op's output, an activation of the fusion-off run, as if it were a constant.
Each must end with the op unverified, saying why, and no rule proven."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from fusion_switch.synth import generator, network
from fusion_switch.synth.generator import generate_case

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from compare_cli import compare_summary


def _fused(summary: dict, name: str) -> dict:
    (found,) = (op for op in summary["fused_ops"] if op["op"] == name)
    return found


def _proven(summary: dict) -> list[str]:
    return [s["rule"] for s in summary["suspects"] if s.get("verdict") == "introduces"]


def _exits_unproven(done, summary: dict) -> bool:
    """Exit 1 only for a labelled guess (a heuristic one, or an undecided split), as with
    --no-replay, never for a proof."""
    guesses = [r for r in summary.get("rules") or [] if r["verdict"] in ("heuristic", "undecided")]
    return done.returncode != 1 or bool(guesses and not _proven(summary))


@pytest.fixture
def changed_on_side(monkeypatch):
    """``change(name, f)``: the fusion-on run's constant ``name`` holds ``f(values)``; the
    fusion-off run keeps the original."""
    changes: dict = {}
    place = generator._OnBuilder.place_source

    def place_source(self, node):
        if node.name in changes and node.name not in self.placed:
            original = self.net.consts[node.name]
            self.net.consts[node.name] = changes[node.name](original).astype(original.dtype)
            try:
                return place(self, node)
            finally:
                self.net.consts[node.name] = original
        return place(self, node)

    monkeypatch.setattr(generator._OnBuilder, "place_source", place_source)
    return changes.__setitem__


def test_weights_that_differ_between_the_runs_prove_nothing(tmp_path, changed_on_side):
    noise = np.random.default_rng(1)
    changed_on_side("b1_mm2_weight", lambda v: v * (1 + 1e-2 * noise.standard_normal(v.shape)))
    case = generate_case(tmp_path / "case", faults=[])
    done, summary = compare_summary(case, tmp_path / "out")
    op = _fused(summary, "b1_mm2b1_temp")
    assert op["verdict"] == "unverified", op
    assert "b1_mm2_weight:0" in op["reason"] and "other values" in op["reason"], op["reason"]
    assert op["evidence"]["own_parameters_score"] <= op["tolerance"]
    assert _proven(summary) == [] and _exits_unproven(done, summary), done.stdout


def test_dumps_of_two_runs_prove_nothing(tmp_path):
    one = generate_case(tmp_path / "one", faults=[], seed=0)
    other = generate_case(tmp_path / "other", faults=[], seed=1)
    one.off_dump, one.off_graph = other.off_dump, other.off_graph
    done, summary = compare_summary(one, tmp_path / "out")
    assert _proven(summary) == [], summary["verdict"]
    assert _exits_unproven(done, summary), done.stdout


@pytest.fixture
def folded_in_place(changed_on_side, monkeypatch):
    """AConv2dMulFusion folds b1_scale2's x0.125 into b1_conv2's weight in place (the same
    constant's name, as GE's passes rewrite a weight); ``folded_in_place(factor, blocks)``:
    b1_conv2's output times ``factor`` (1: right), the fold made in ``blocks`` (a real rule
    folds at every match; b1 alone by default)."""
    conv_mul = generator.FUSED_KERNELS["conv2"]
    wrong = [1.0]
    folding: set[str] = set()

    def folded(nodes, ins, fault):  # the weight holds the scale: no second multiplication
        conv, _ = nodes
        if conv.name in folding:
            weight = ins[conv.inputs[1]].astype(np.float32)
            out = conv.run([ins[conv.inputs[0]], weight], conv.attrs)
            if conv.name == "b1_conv2" and wrong[0] != 1.0:
                return [o * np.float32(wrong[0]) for o in out]
            return out
        return conv_mul(nodes, ins, fault)

    def fold(factor: float, blocks=(1,)) -> None:
        wrong[0] = factor
        for block in blocks:
            folding.add(f"b{block}_conv2")
            changed_on_side(f"b{block}_conv2_weight", lambda v: v * np.float32(0.125))

    monkeypatch.setitem(generator.FUSED_KERNELS, "conv2", folded)
    return fold


@pytest.mark.parametrize("factor", [1.0, 1.05], ids=["right", "wrong"])
def test_a_constant_folded_in_place_proves_only_a_wrong_op(tmp_path, folded_in_place, factor):
    """With the fusion-off dumps, a weight folded in place is read as the original: the
    right op agrees with its replay, the wrong one is proven (the replay with its own folded
    weight scales twice and disagrees too, so the difference is not the runs')."""
    folded_in_place(factor)
    case = generate_case(tmp_path / "case", faults=[])
    done, summary = compare_summary(case, tmp_path / "out")
    op = _fused(summary, "b1_conv2")
    if factor == 1.0:
        assert op["verdict"] in ("clean", "propagates"), op
        assert _proven(summary) == [] and done.returncode == 0, done.stdout
    else:
        assert op["verdict"] == "introduces", op
        assert op["evidence"]["own_parameters_score"] > op["tolerance"]
        # proven only because another weight shows the runs held the same ones
        assert "of the same rule" in op["evidence"]["same_weights_shown_by"]
        assert _proven(summary) == ["AConv2dMulFusion"] and done.returncode == 1


@pytest.fixture
def another_step(monkeypatch):
    """The fusion-on run dumped at another training step: every float weight of it holds
    slightly other values (``1e-2`` relative) than the fusion-off run's, but the names added
    to the set it gives."""
    noise = np.random.default_rng(7)
    place = generator._OnBuilder.place_source
    kept: set[str] = set()  # constants no step changes (frozen or fixed)

    def place_source(self, node):
        original = self.net.consts.get(node.name)
        if node.type != "Const" or node.name in self.placed or original.dtype.kind != "f":
            return place(self, node)
        if node.name in kept:
            return place(self, node)
        self.net.consts[node.name] = (
            original * (1 + 1e-2 * noise.standard_normal(original.shape))
        ).astype(original.dtype)
        try:
            return place(self, node)
        finally:
            self.net.consts[node.name] = original

    monkeypatch.setattr(generator._OnBuilder, "place_source", place_source)
    return kept


def test_a_fold_in_place_and_weights_of_another_step_prove_nothing(
    tmp_path, folded_in_place, another_step
):
    """A right fused op whose rule folded a constant in place, dumped at another step than
    the fusion-off run: the replay with the fusion-off weight disagrees (another step), and
    with its own, folded one too (the fold applied twice). Nothing shows the runs held the
    same weights, so nothing is proven (it was: "introduces")."""
    folded_in_place(1.0)
    case = generate_case(tmp_path / "case", faults=[])
    done, summary = compare_summary(case, tmp_path / "out")
    op = _fused(summary, "b1_conv2")
    assert op["verdict"] == "unverified", op
    assert "b1_conv2_weight:0" in op["reason"] and "other weights" in op["reason"], op["reason"]
    assert _proven(summary) == [] and _exits_unproven(done, summary), done.stdout


def test_a_rule_folding_at_every_match_is_proven_on_its_wrong_op(tmp_path, folded_in_place):
    """Every block's weight folded in place, the same step in both runs, b1_conv2 wrong: no
    weight of the rule holds alike, yet b0/b2_conv2 agree with their replay on the fusion-off
    weight that differs, which shows the fold (a review: "unverified" hid this proof)."""
    folded_in_place(1.05, blocks=(0, 1, 2))
    case = generate_case(tmp_path / "case", faults=[])
    done, summary = compare_summary(case, tmp_path / "out")
    op = _fused(summary, "b1_conv2")
    assert op["verdict"] == "introduces", op
    assert "changes that weight in place" in op["evidence"]["same_weights_shown_by"], op
    assert _proven(summary) == ["AConv2dMulFusion"] and done.returncode == 1


def test_constants_no_step_changes_show_nothing_of_the_weights(
    tmp_path, folded_in_place, another_step
):
    """Another step, b1's fold in place (a right op), and float constants that hold alike at
    any step (frozen or fixed tables): any constant alike in both runs used to count as the
    runs holding the same weights, and the innocent rule was proven again (a review)."""
    another_step.update({"b0_bias1_value", "b2_bias1_value", "b1_bias1_value"})
    folded_in_place(1.0)
    case = generate_case(tmp_path / "case", faults=[])
    done, summary = compare_summary(case, tmp_path / "out")
    op = _fused(summary, "b1_conv2")
    assert op["verdict"] == "unverified", op
    assert "of the same rule" in op["reason"] or "other weights" in op["reason"], op["reason"]
    assert _proven(summary) == [] and _exits_unproven(done, summary), done.stdout


@pytest.mark.parametrize("frozen", ["block 0", "blocks 0 to 7 of 13"])
def test_a_frozen_layer_shows_nothing_of_a_trained_one(
    tmp_path, folded_in_place, another_step, frozen
):
    """Fine-tuning: the fusion-on run dumped at another step, lower blocks frozen (their
    weights the same at any step), a right rule folding in place at every match. A frozen
    block's op agrees with its replay on the fusion-off weight that differs by the fold, and it
    proved the rule at a trained block (a review); past eight siblings, the ones that told
    against it were never read."""
    blocks = 1 if frozen == "block 0" else 8
    names = ("conv2_weight", "scale2_factor", "conv1_weight", "bias1_value", "mm1_weight")
    another_step.update(f"b{b}_{n}" for b in range(blocks) for n in names)
    n_ops = None if blocks == 1 else 400
    folded_in_place(1.0, blocks=range(13 if n_ops else 3))
    case = generate_case(tmp_path / "case", faults=[], **({"n_ops": n_ops} if n_ops else {}))
    done, summary = compare_summary(case, tmp_path / "out")
    flagged = [o for o in summary["fused_ops"] if o["op"].endswith("_conv2") and o["op"] > "b0"]
    trained = [o for o in flagged if int(o["op"][1:].split("_")[0]) >= blocks]
    assert trained and all(o["verdict"] == "unverified" for o in trained), trained
    assert _proven(summary) == [] and _exits_unproven(done, summary), done.stdout


def test_a_constant_folded_in_place_is_not_taken_as_the_original(tmp_path, folded_in_place):
    folded_in_place(1.0)
    case = generate_case(tmp_path / "case", faults=[])
    for dump in case.off_dump.iterdir():  # the original op's fusion-off dump is missing
        if dump.name.split(".")[1] == "b1_conv2":
            dump.unlink()
    done, summary = compare_summary(case, tmp_path / "out")
    op = _fused(summary, "b1_conv2")
    assert op["verdict"] == "unverified", op
    assert "b1_conv2_weight:0" in op["reason"], op["reason"]
    assert _proven(summary) == [] and _exits_unproven(done, summary), done.stdout


def _edit_graph(case, side: str, edit) -> None:
    """``case``'s ``on_graph`` or ``off_graph`` replaced by a copy ``edit(ops)`` changed."""
    graph = json.loads(getattr(case, side).read_text())
    edit(graph["graph"][0]["op"])
    edited = getattr(case, side).with_name(f"edited_{side}.json")
    edited.write_text(json.dumps(graph))
    setattr(case, side, edited)


def test_an_original_op_the_fusion_off_graph_lacks_is_not_read_as_a_constant(tmp_path):
    case = generate_case(tmp_path / "case", faults=["wrong_epsilon@0"])

    def drop_conv(ops: list) -> None:
        ops[:] = [op for op in ops if op["name"] != "b1_conv2"]

    _edit_graph(case, "off_graph", drop_conv)
    done, summary = compare_summary(case, tmp_path / "out")
    op = _fused(summary, "b1_conv2")
    assert op["verdict"] == "unverified", op
    assert "b1_conv2" in op["reason"] and "fusion-off graph" in op["reason"], op["reason"]
    assert "AConv2dMulFusion" not in _proven(summary)
    assert _proven(summary) == ["ConvBatchnormFusionPass"], summary["verdict"]
    assert done.returncode == 1


def test_a_graph_the_dump_headers_contradict_proves_nothing(tmp_path):
    """-f of another build: there the UB pass did not add the Relu to the fused Conv+BN, so
    the graph says its output stands for b1_bn1; the dump (this build) says b1_relu1. The
    replay proved ConvBatchnormFusionPass from a sub-graph that was not the one that ran."""
    case = generate_case(tmp_path / "case", faults=[])

    def without_the_relu(ops: list) -> None:
        (op,) = (op for op in ops if op["name"] == "b1_conv1b1_relu1")
        for attr in op["attr"]:
            if attr["key"] == "_datadump_original_op_names":
                attr["value"]["list"]["s"] = ["b1_conv1", "b1_bn1"]
            if attr["key"] == "pass_name":
                attr["value"]["list"]["s"] = ["ConvBatchnormFusionPass"]
        op["attr"] = [a for a in op["attr"] if a["key"] != "pass_name_ub"]
        for attr in op["output_desc"][0]["attr"]:
            if attr["key"] == "_datadump_origin_name":
                attr["value"]["s"] = "b1_bn1"

    _edit_graph(case, "on_graph", without_the_relu)
    done, summary = compare_summary(case, tmp_path / "out")
    op = _fused(summary, "b1_conv1b1_relu1")
    assert op["verdict"] == "unverified", op
    assert "b1_relu1" in op["reason"] and "-f" in op["reason"], op["reason"]
    assert _proven(summary) == [] and _exits_unproven(done, summary), done.stdout


def test_a_replay_that_disagrees_with_an_output_agreeing_with_fusion_off_proves_nothing(
    tmp_path, monkeypatch, network_changed
):
    """The device's Relu turns NaN into 0 in both runs (numpy's keeps it) and the network's
    input holds one NaN: the stem's fused output is the same in both runs, its replay NaN.
    TbeCommonRules0FusionPass was "proven by replay" (score inf)."""
    monkeypatch.setitem(network.KERNELS, "Relu", lambda inputs, attrs: [np.fmax(inputs[0], 0)])

    def one_nan(net) -> None:
        x = net.consts["input"].copy()
        x[0, 0, 3, 3] = np.nan
        net.consts["input"] = x

    network_changed(one_nan)
    case = generate_case(tmp_path / "case", faults=[])
    done, summary = compare_summary(case, tmp_path / "out")
    op = _fused(summary, "stem_convstem_relu")
    assert op["verdict"] == "unverified", op
    assert "agrees with the fusion-off run" in op["reason"], op["reason"]
    assert _proven(summary) == [] and done.returncode != 1, done.stdout


@pytest.mark.parametrize("change", ["nan", "scaled"])
def test_an_input_dump_its_producer_never_wrote_proves_nothing(tmp_path, on_dump_changed, change):
    """b1_conv2 computed right; its input dump holds values its producer never wrote (the
    input changed after the producer ran). Replayed on it, AConv2dMulFusion was "proven";
    then it was unverified (exit 3). Replayed on what its producer wrote, it agrees: right."""

    def changed(values):
        if change == "nan":
            values.reshape(-1)[:8] = np.nan
            return values
        return values * 1.5

    on_dump_changed("b1_conv2", "input", 0, changed)
    case = generate_case(tmp_path / "case", faults=[])
    done, summary = compare_summary(case, tmp_path / "out")
    op = _fused(summary, "b1_conv2")
    assert op["verdict"] in ("clean", "propagates"), op
    (used,) = op["evidence"]["inputs_from_producers"]
    assert used.startswith("b1_conv2:input:0 from b1_conv1b1_relu1:output:0"), used
    assert _proven(summary) == [] and done.returncode == 0, done.stdout


def test_a_wrong_op_whose_input_dump_changed_stays_unverified(tmp_path, on_dump_changed):
    """b1_conv2 is wrong (its scale dropped) and its input dump changed after it ran. Its
    replay on what its producer wrote disagrees, but so would a right op's on dumps of two
    steps: no proof."""
    on_dump_changed("b1_conv2", "input", 0, lambda values: values * 1.5)
    case = generate_case(tmp_path / "case", faults=["dropped_scale@1"])
    done, summary = compare_summary(case, tmp_path / "out")
    op = _fused(summary, "b1_conv2")
    assert op["verdict"] == "unverified", op
    assert "b1_conv1b1_relu1" in op["reason"] and "disagrees too" in op["reason"], op["reason"]
    assert _proven(summary) == [] and done.returncode != 0, done.stdout


def test_float16_subnormal_activations_prove_nothing(tmp_path, network_changed):
    """Block 1's float16 weight and bias x1e-5 in both runs: its activations are float16
    subnormals (< 2^-14), the same in both runs. The replay rounded them to 11 significant
    bits instead of float16's 2^-24 grid, and "proved" TbeEltwiseFusionPass."""

    def tiny(net) -> None:
        for name in ("b1_mm1_weight", "b1_bias1_value"):
            v = net.consts[name]
            net.consts[name] = (v.astype(np.float32) * np.float32(1e-5)).astype(v.dtype)

    network_changed(tiny)
    case = generate_case(tmp_path / "case", faults=[])
    done, summary = compare_summary(case, tmp_path / "out")
    op = _fused(summary, "b1_sigb1_glu")
    assert op["verdict"] in ("clean", "propagates"), op
    assert _proven(summary) == [] and done.returncode == 0, done.stdout


@pytest.fixture
def one_fusion_left_on(monkeypatch):
    """The fusion-off run kept one fusion on (a rule the switch file did not reach, or one that
    cannot be switched off): its graph and dumps have ``b2_conv2`` standing for b2_conv2 and
    b2_scale2, a Conv2D that multiplies too, and no ``b2_scale2`` op. ``strip(True)``: the
    fusion-on dumps name no original op per output (``OpOutput.original_op`` is optional)."""
    from fusion_switch.synth import emit
    from fusion_switch.synth.executed import OutSpec

    off_ops = generator._off_ops

    def with_one_fusion(net, values):
        ops = off_ops(net, values)
        by_name = {op.name: op for op in ops}
        conv, mul = by_name["b2_conv2"], by_name["b2_scale2"]
        out = mul.outputs[0]
        conv.outputs = [OutSpec(mul.name, 0, out.format, out.value)]
        conv.original_names = [conv.name, mul.name]
        conv.passes = [("TbeConvMulFusionLeftOn", "UBFusion")]
        ops.remove(mul)
        for op in ops:
            op.inputs = [f"{conv.name}:0" if ref == f"{mul.name}:0" else ref for ref in op.inputs]
        return ops

    monkeypatch.setattr(generator, "_off_ops", with_one_fusion)
    write_dump = emit.write_dump

    def strip(unnamed: bool) -> None:
        def without_origins(path, name, inputs, outputs, **kwargs):
            if "fusion_on" in str(path):
                outputs = [dataclasses.replace(o, original_op=None) for o in outputs]
            return write_dump(path, name, inputs, outputs, **kwargs)

        if unnamed:
            monkeypatch.setattr(emit, "write_dump", without_origins)

    return strip


@pytest.mark.parametrize("origins", ["named", "unnamed"], ids=["dumps name origins", "they do not"])
def test_an_op_the_fusion_off_run_fused_too_proves_nothing(tmp_path, one_fusion_left_on, origins):
    """A review (fortieth round): the fused op b2_conv2 (conv + scale, AConv2dMulFusion)
    computes right, but its original ops map onto one op of the fusion-off graph that stands
    for both; the replay ran that op's Conv2D kernel alone, without the scale, and with the
    drift from the guilty op upstream (so its output does not agree with fusion off either)
    proved AConv2dMulFusion, named first. Such a member is not the original op it stands for."""
    one_fusion_left_on(origins == "unnamed")
    case = generate_case(tmp_path / "case", n_ops=70, faults=["wrong_epsilon@0"])
    done, summary = compare_summary(case, tmp_path / "out")
    op = _fused(summary, "b2_conv2")
    assert op["verdict"] == "unverified", op
    assert "b2_scale2" in op["reason"] and "fusion-off graph" in op["reason"], op["reason"]
    assert "fused" in op["reason"], op["reason"]
    assert _proven(summary) == ["ConvBatchnormFusionPass"], summary["verdict"]
    assert done.returncode == 1
