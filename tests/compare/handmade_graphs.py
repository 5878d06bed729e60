"""Small hand-made GE graphs (atc JSON shape) for pairing and engine tests."""

from __future__ import annotations

from typing import Any

from fusion_switch.readers.graph import Graph, graph_from_dict


def names_attr(names: list[str] | None) -> dict[str, Any]:
    """``_datadump_original_op_names``; an empty list is written without ``s`` as atc does."""
    listed: dict[str, Any] = {"val_type": "VT_LIST_STRING"}
    if names:
        listed["s"] = list(names)
    return {"key": "_datadump_original_op_names", "value": {"list": listed}}


def desc(
    origin: str | None = None,
    index: int | None = None,
    *,
    dtype: str = "DT_FLOAT",
    layout: str = "NCHW",
    shape: tuple[int, ...] = (1, 4, 2, 2),
    with_attr: bool = True,
) -> dict[str, Any]:
    """An output_desc; ``origin``/``index`` set ``_datadump_origin_name/_output_index``."""
    out: dict[str, Any] = {"dtype": dtype, "layout": layout, "shape": {"dim": list(shape)}}
    if with_attr:
        attrs = [
            {"key": "origin_format", "value": {"s": layout}},
            {"key": "origin_shape", "value": {"list": {"i": list(shape)}}},
        ]
        if origin is not None:
            attrs.append({"key": "_datadump_origin_name", "value": {"s": origin}})
        if index is not None:
            attrs.append({"key": "_datadump_origin_output_index", "value": {"i": index}})
        out["attr"] = attrs
    return out


def op(
    name: str,
    type_: str,
    id_: int,
    inputs: tuple[str, ...] = (),
    *,
    originals: list[str] | None = None,
    outputs: list[dict] | None = None,
    l1: str | None = None,
    multi: bool = False,
    passes: tuple[str, ...] = (),
) -> dict:
    """An op; ``originals=None`` leaves ``_datadump_original_op_names`` out (an original op)."""
    attrs = []
    if originals is not None:
        attrs.append(names_attr(originals))
    if l1 is not None:
        attrs.append({"key": "_L1_fusion_sub_graph_no", "value": {"s": l1}})
    if multi:
        attrs.append({"key": "_datadump_is_multiop", "value": {"b": True}})
    if passes:
        attrs.append({"key": "pass_name", "value": {"list": {"s": list(passes)}}})
    out: dict[str, Any] = {
        "name": name,
        "type": type_,
        "id": id_,
        "attr": attrs,
        "output_desc": outputs if outputs is not None else [desc()],
    }
    if inputs:
        out["input"] = list(inputs)
    return out


def graph(name: str, *ops: dict) -> Graph:
    return graph_from_dict({"name": name, "graph": [{"name": name, "op": list(ops)}]})


def graph_json(name: str, *ops: dict) -> dict:
    return {"name": name, "graph": [{"name": name, "op": list(ops)}]}
