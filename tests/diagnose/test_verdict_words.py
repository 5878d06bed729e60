"""What the verdict line and exit status say where a review found them saying too little or
too much (thirty-fourth round of issue 16):
- a fault in an op no fusion rule made: the replay's verdict said every fused op agrees and
  never said the outputs diverge, or where (`--no-replay` named the op);
- the faulty fused op not dumped on the fusion-on side: `--no-replay` said "no fused op
  introduces the error (check the network inputs)", which sends the user to the wrong place;
- `--no-replay`'s suspect was printed "most likely: RULE", without the label README promises;
- a fused op the replay proves wrong, its two passes undecided, exited 0 (`--no-replay` 1)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from fusion_switch.synth import faults, generator
from fusion_switch.synth.generator import generate_case

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from compare_cli import compare_summary
from verdict_cases import undecided_fault


@pytest.fixture
def plain_op_fault(monkeypatch):
    """A fault kind for b1_add1, an Add no fusion rule made."""
    monkeypatch.setitem(
        faults.FAULT_KINDS,
        "bad_plain",
        faults.FaultKind("bad_plain", "add1", "NoRule", "GraphFusion", "a plain op wrong"),
    )
    run = generator._run_member

    def run_member(node, inputs, fault):
        outs = run(node, inputs, fault)
        if fault is not None and fault.kind == "bad_plain":
            return [(o.astype(np.float32) * 1.5 + 0.3).astype(o.dtype) for o in outs]
        return outs

    monkeypatch.setattr(generator, "_run_member", run_member)


@pytest.mark.parametrize("replay", [True, False], ids=["replay", "no-replay"])
def test_a_fault_outside_fusion_is_named_with_the_replay_too(tmp_path, plain_op_fault, replay):
    case = generate_case(tmp_path / "case", faults=["bad_plain@1"])
    extra = () if replay else ("--no-replay",)
    done, summary = compare_summary(case, tmp_path / "out", *extra)
    assert "b1_add1" in summary["verdict"] and "no fusion rule" in summary["verdict"]
    assert summary["suspects"] == [] and done.returncode == 0


def test_a_fused_op_not_dumped_is_not_called_clean_without_the_replay(tmp_path):
    case = generate_case(tmp_path / "case", faults=["dropped_scale"])
    for dump in case.on_dump.iterdir():
        if dump.name.split(".")[1] == "b1_conv2":
            dump.unlink()
    done, summary = compare_summary(case, tmp_path / "out", "--no-replay")
    assert "check the network inputs" not in summary["verdict"], summary["verdict"]
    assert "no dump file" in summary["verdict"] and "not proven clean" in summary["verdict"]
    # a review: the verdict said "not proven clean" and the run exited 0, a clean run's status
    assert done.returncode == 3, done.stdout


def test_an_op_whose_inputs_were_not_compared_is_not_blamed_without_the_replay(tmp_path):
    """The fusion-off dumps of b1_conv2's producer's original ops are gone: none of
    b1_conv2's inputs could be compared. The row heuristic took that as "inputs in band" and
    blamed AConv2dMulFusion at b1_conv2, exit 1, for an error that starts upstream."""
    case = generate_case(tmp_path / "case", faults=["wrong_epsilon@1"])
    for dump in case.off_dump.iterdir():
        if dump.name.split(".")[1] in ("b1_conv1", "b1_bn1", "b1_relu1"):
            dump.unlink()
    done, summary = compare_summary(case, tmp_path / "out", "--no-replay")
    blamed = [s["rule"] for s in summary["suspects"]]
    assert "AConv2dMulFusion" not in blamed, summary["verdict"]
    assert done.returncode != 0, done.stdout
    assert "b1_conv1b1_relu1" in summary["verdict"], summary["verdict"]  # its outputs unjudged
    # not judged, yet still charted by its outputs' metrics
    (row,) = (o for o in summary["ops"] if o["op"] == "b1_conv2")
    assert row["verdict"] == "unknown" and row["cosine"] is not None, row


def test_a_no_replay_suspect_is_labelled_unproven(tmp_path):
    case = generate_case(tmp_path / "case", faults=["dropped_scale"])
    done, summary = compare_summary(case, tmp_path / "out", "--no-replay")
    assert summary["verdict"].startswith("most likely (heuristic, not proven by replay): ")
    assert done.returncode == 1


def test_an_op_proven_wrong_with_its_passes_undecided_exits_1(tmp_path, monkeypatch):
    undecided_fault(monkeypatch)
    case = generate_case(tmp_path / "case", faults=["dropped_shift"])
    done, summary = compare_summary(case, tmp_path / "out")
    assert summary["verdict"].startswith("undecided between"), summary["verdict"]
    assert done.returncode == 1


def test_a_fused_op_whose_input_was_not_compared_is_named_not_proven(tmp_path):
    """A review: b1_conv1b1_relu1 is wrong and its producer b0_add_out, an op of no rule, has
    no fusion-off dump. The op, unjudged for its input, was in no list, and the run without
    the replay said the rows point at no op and exited 0."""
    case = generate_case(tmp_path / "case", faults=["wrong_epsilon@1"])
    for dump in case.off_dump.iterdir():
        if dump.name.split(".")[1] == "b0_add_out":
            dump.unlink()
    done, summary = compare_summary(case, tmp_path / "out", "--no-replay")
    assert summary["ops_with_unjudged_inputs"][:1] == ["b1_conv1b1_relu1"], summary["verdict"]
    assert "b1_conv1b1_relu1" in summary["verdict"] and "not proven clean" in summary["verdict"]
    assert done.returncode == 3, done.stdout


def test_ops_with_unjudged_inputs_are_named_beside_an_error_outside_fusion(
    tmp_path, on_dump_changed
):
    """A review: with an op of no rule out of band as well (b0_add1), the verdict named that
    op only and never said "not proven", while the run exited 3 for b1_conv1b1_relu1."""
    on_dump_changed("b0_add1", "output", 0, lambda values: values * 1.3)
    case = generate_case(tmp_path / "case", faults=["wrong_epsilon@1"])
    for dump in case.off_dump.iterdir():
        if dump.name.split(".")[1] == "b0_add_out":
            dump.unlink()
    done, summary = compare_summary(case, tmp_path / "out", "--no-replay")
    assert "b0_add1" in summary["verdict"], summary["verdict"]
    assert "b1_conv1b1_relu1" in summary["verdict"] and "not proven clean" in summary["verdict"]
    assert done.returncode == 3, done.stdout
