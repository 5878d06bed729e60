"""Pairing fusion-on tensors with fusion-off tensors as msaccucmp ``-f/-cf`` does."""

from __future__ import annotations

import uuid

import pytest
from fusion_switch.compare.pairing import (
    Relation,
    RightRef,
    Unpaired,
    build_merged_rule,
    fusion_rule,
    group_key,
    group_labels,
    op_labels,
    relation,
)
from handmade_graphs import desc, graph, op

# The fusion-off graph: data -> conv -> bn -> relu -> cast -> out, all original ops.
OFF = graph(
    "off",
    op("data", "Data", 0),
    op("conv", "Conv2D", 1, ("data:0",)),
    op("bn", "BatchNorm", 2, ("conv:0",), outputs=[desc(), desc(), desc()]),
    op("relu", "Relu", 3, ("bn:0",)),
    op("cast", "Cast", 4, ("relu:0",)),
    op("out", "NetOutput", 5, ("cast:0",)),
)


def on_graph(*extra):
    """Fusion on: conv+bn+relu fused; a TransData between the fused op and the Cast."""
    return graph(
        "on",
        op("data", "Data", 0),
        op(
            "convbnrelu",
            "Conv2D",
            1,
            ("data:0", "data:-1"),
            originals=["conv", "bn", "relu"],
            outputs=[desc("relu", 0, layout="NC1HWC0")],
            passes=("ConvBatchnormFusionPass",),
        ),
        op("trans", "TransData", 2, ("convbnrelu:0",), originals=[]),
        op("cast", "Cast", 3, ("trans:0",)),
        op("out", "NetOutput", 4, ("cast:0",)),
        *extra,
    )


def merged(on=None, off=OFF):
    return build_merged_rule(on or on_graph(), off)


# ----------------------------------------------------------------------------- reading


def test_rule_reads_original_names_like_msaccucmp():
    rule = fusion_rule(on_graph())
    by_name = {item.name: item for item in rule.ops}
    assert by_name["data"].original_names == ["data"]  # attribute absent: the op itself
    assert by_name["convbnrelu"].original_names == ["conv", "bn", "relu"]
    assert by_name["trans"].original_names == [""]  # present but empty
    assert by_name["convbnrelu"].inputs == ["data:0"]  # control edge dropped


def test_group_numbers_follow_first_appearance():
    rule = fusion_rule(on_graph())
    assert [item.group for item in rule.ops] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize(
    ("name", "l1", "originals", "expected"),
    [
        ("x", "", ["x"], "x"),
        ("x", "", ["a"], "a"),
        ("x", "", [""], "x"),
        ("x", "7", ["a", "b"], "7"),
        ("x", "", [], "x"),
        ("x", "", ["a", "b"], uuid.uuid3(uuid.NAMESPACE_DNS, "ab")),
    ],
)
def test_group_key(name, l1, originals, expected):
    assert group_key(name, l1, originals) == expected


def test_unnamed_output_descs_take_the_op_name_or_its_single_original():
    g = graph(
        "on",
        op("plain", "Relu", 0, outputs=[desc(), desc(with_attr=False), desc()]),
        op("renamed", "Relu", 1, originals=["old"], outputs=[desc()]),
    )
    rule = fusion_rule(g)
    plain, renamed = rule.ops
    assert [d.origin_name for d in plain.outputs] == ["plain", "plain"]  # no-attr desc not counted
    assert [d.origin_output_index for d in plain.outputs] == [0, 2]  # position in the list
    assert renamed.outputs[0].origin_name == "old"


# ----------------------------------------------------------------------------- merging


def test_fused_op_maps_to_fusion_off_ops():
    rule = merged()
    fused = rule.find("convbnrelu")
    assert fused.original_names == ["conv", "bn", "relu"]
    assert relation([fused]) == Relation.MULTI_TO_ONE
    assert op_labels(fused) == ("convbnrelu", "conv,bn,relu")
    assert rule.resolve(fused, 0, is_input=False) == RightRef("relu", 0, "convbnrelu", 0)


def test_output_index_is_the_fusion_off_desc_position():
    on = graph(
        "on",
        op("bnfused", "BNInference", 0, originals=["bn"], outputs=[desc("bn", 2)]),
    )
    rule = merged(on)
    assert rule.resolve(rule.find("bnfused"), 0, is_input=False).output_index == 2


def test_output_beyond_the_descs_uses_the_first_desc():
    rule = merged()
    ref = rule.resolve(rule.find("convbnrelu"), 3, is_input=False)
    assert (ref.op_name, ref.output_index) == ("relu", 0)


def test_inputs_pair_with_the_producer_walking_through_transdata_and_cast():
    rule = merged()
    out = rule.find("out")
    ref = rule.resolve(out, 0, is_input=True)
    assert ref == RightRef("relu", 0, "convbnrelu", 0, ("cast", "trans"))


def test_a_cast_output_is_paired_through_its_own_input():
    rule = merged()
    ref = rule.resolve(rule.find("cast"), 0, is_input=False)
    assert (ref.op_name, ref.walked) == ("relu", ("cast", "trans"))


def test_op_standing_for_nothing_has_no_ground_truth():
    g = on_graph(op("extra", "TransData", 9, ("cast:0",), originals=[]))
    rule = merged(g)
    # Two ops with an empty original list: the later one is kept, the earlier one dropped.
    assert rule.find("trans") is None
    extra = rule.find("extra")
    assert op_labels(extra) == ("extra", "*")
    result = rule.resolve(extra, 0, is_input=False)  # walks through cast, then trans: gone
    assert result == Unpaired('There is no "trans" in the fusion rule file.')


def test_output_without_origin_name_has_no_ground_truth_dump():
    rule = merged(on_graph(op("copy", "Identity", 9, ("cast:0",), originals=[])))
    result = rule.resolve(rule.find("copy"), 0, is_input=False)
    assert result == Unpaired("The origin name of the copy:0 is empty.", no_dump=True)


def test_dropped_producer_is_not_in_the_fusion_rule():
    g = on_graph(op("extra", "TransData", 9, ("cast:0",), originals=[]))
    rule = merged(g)
    result = rule.resolve(rule.find("cast"), 0, is_input=True)
    assert result == Unpaired('There is no "trans" in the fusion rule file.')


def test_input_index_beyond_the_graph_inputs_has_an_empty_csv_reason():
    rule = merged()
    result = rule.resolve(rule.find("convbnrelu"), 1, is_input=True)
    assert isinstance(result, Unpaired)
    assert result.csv_reason == "" and "out of range" in result.reason


def test_producer_without_dump_name_is_a_missing_ground_truth():
    rule = merged()
    result = rule.resolve(rule.find("convbnrelu"), 0, is_input=True)
    assert result == RightRef("data", 0, "data", 0)  # Data ops have no dump: the engine says so


def test_original_name_unknown_to_the_off_graph_is_dropped_with_a_warning():
    on = graph(
        "on", op("fused", "Conv2D", 0, originals=["conv", "ghost"], outputs=[desc("conv", 0)])
    )
    rule = merged(on)
    assert rule.find("fused").original_names == ["conv"]
    assert any("ghost" in warning for warning in rule.warnings)


def test_ops_standing_for_the_same_original_keep_only_the_later_one():
    on = graph(
        "on",
        op("conv_a", "Conv2D", 0, originals=["conv"], outputs=[desc("conv", 0)]),
        op("conv_b", "Conv2D", 1, originals=["conv"], outputs=[desc("conv", 0)]),
    )
    rule = merged(on)
    members = rule.ordered_groups()
    assert [[m.name for m in group] for group in members] == [["conv_a"]]
    assert rule.find("conv_b") is None  # only the last name of a group can be found


def test_l1_group_keeps_all_its_ops():
    on = graph(
        "on",
        op("part0", "Conv2D", 0, originals=["conv"], l1="5", outputs=[desc("conv", 0)]),
        op("part1", "Relu", 1, ("part0:0",), originals=["relu"], l1="5", outputs=[desc("relu", 0)]),
    )
    rule = merged(on)
    (members,) = rule.ordered_groups()
    assert [m.name for m in members] == ["part0", "part1"]
    assert relation(members) == Relation.L1_FUSION
    assert group_labels(members) == ("part0,part1", "conv,relu")


def test_rows_are_ordered_by_group_number():
    rule = merged()
    assert [g[0].name for g in rule.ordered_groups()] == [
        "data",
        "convbnrelu",
        "trans",
        "cast",
        "out",
    ]


def test_ops_between_quantize_and_dequantize_are_filtered():
    g = graph(
        "on",
        op("x_quant_layer", "AscendQuant", 0, outputs=[desc(dtype="DT_INT8")]),
        op("conv", "Conv2D", 1, ("x_quant_layer:0",), outputs=[desc(dtype="DT_INT32")]),
        op("y_dequant_layer", "AscendDequant", 2, ("conv:0",), outputs=[desc(dtype="DT_FLOAT16")]),
        op("relu", "Relu", 3, ("y_dequant_layer:0",)),
    )
    rule = fusion_rule(g)
    assert {o.name: o.quant_filter for o in rule.ops} == {
        "x_quant_layer": False,
        "conv": True,
        "y_dequant_layer": False,
        "relu": False,
    }
    ops = {o.name: o for o in rule.ops}
    assert ops["y_dequant_layer"].is_dequant and ops["x_quant_layer"].skips_outputs


def test_rule_ops_pickle_with_every_field_and_come_back_equal():
    """A Dask worker gets the merged rule pickled: every field of every op must travel."""
    import pickle

    from fusion_switch.compare.pairing import OriginDesc, RuleOp
    from msgspec.structs import astuple

    outputs = [OriginDesc("conv1", 0, "NCHW", (1, 3, 8, 8), "DT_FLOAT16")]
    op = RuleOp("fused", "Conv2D", 7, ["x"], ["conv1", "bn1"], "3", True, outputs, 2, True)
    back = pickle.loads(pickle.dumps(op))
    assert back == op and back.outputs == outputs
    assert astuple(back) == astuple(op)
    assert [type(value) for value in astuple(back)] == [type(value) for value in astuple(op)]
