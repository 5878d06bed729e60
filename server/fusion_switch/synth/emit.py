"""Writing an executed graph as GE would: the graph JSON (atc's ModelDef mapping) and one binary
dump file per op with a task, in CANN's naming and device layouts."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np

from ..readers.dtypes import DATA_TYPE_NAMES, code_for_numpy
from ..readers.dump import OriginalOp
from ..readers.dump_write import TensorSpec, write_dump
from ..readers.dumpdir import dump_file_name
from ..readers.formats import FORMAT_CODES
from ..readers.layout import device_shape, to_device
from .executed import NC1HWC0, NZ, UB_FUSION, ExecOp, host_format
from .network import split_ref


def _a_s(v: str) -> dict:
    return {"s": v}


def _a_i(v: int) -> dict:
    return {"i": int(v)}


def _a_list_s(values: Iterable[str]) -> dict:
    values = list(values)
    inner: dict = {"val_type": "VT_LIST_STRING"}
    if values:
        inner = {"s": values, "val_type": "VT_LIST_STRING"}
    return {"list": inner}


def _a_list_i(values: Iterable[int]) -> dict:
    return {"list": {"i": [int(v) for v in values], "val_type": "VT_LIST_INT"}}


def _attrs(pairs: Iterable[tuple[str, dict]]) -> list[dict]:
    return [{"key": k, "value": v} for k, v in pairs]


def _dtype_name(value: np.ndarray) -> str:
    return DATA_TYPE_NAMES[code_for_numpy(value.dtype)]


def _device_shape(value: np.ndarray, fmt: str) -> list[int]:
    if fmt in (NC1HWC0, NZ):
        return list(device_shape(value.shape, fmt))
    return list(value.shape)


def _tensor_desc(value: np.ndarray, fmt: str, extra: list[tuple[str, dict]]) -> dict:
    host = host_format(value)
    desc_attrs = [
        *extra,
        ("origin_format", _a_s(host)),
        ("origin_shape", _a_list_i(value.shape)),
        ("origin_data_type", _a_s(_dtype_name(value))),
    ]
    desc: dict = {
        "attr": _attrs(desc_attrs),
        "device_type": "NPU",
        "dtype": _dtype_name(value),
        "layout": fmt,
    }
    dims = _device_shape(value, fmt)
    desc["shape"] = {"dim": dims} if dims else {}
    if dims:
        desc["real_dim_cnt"] = len(dims)
    return desc


def _op_json(op: ExecOp, op_id: int, consumers: dict[str, list[tuple[str, int]]]) -> dict:
    attrs: list[tuple[str, dict]] = []
    if op.original_names is not None:
        attrs.append(("_datadump_original_op_names", _a_list_s(op.original_names)))
    if op.passes:
        attrs.append(("pass_name", _a_list_s(name for name, _ in op.passes)))
        ub = [name for name, sec in op.passes if sec == UB_FUSION]
        if ub:
            attrs.append(("pass_name_ub", _a_s(ub[-1])))
    if op.single_op_ub:
        attrs.append(("_single_op_ub_pass_name", _a_list_s(op.single_op_ub)))
    attrs.append(("fusion_scope", _a_i(op.fusion_scope if op.fusion_scope else -(op_id + 1))))
    for key, value in op.attrs.items():
        if isinstance(value, bool):
            attrs.append((key, {"b": value}))
        elif isinstance(value, list):
            attrs.append((key, _a_list_i(value)))
        elif isinstance(value, float):
            attrs.append((key, {"f": value}))
        elif isinstance(value, int):
            attrs.append((key, _a_i(value)))
        elif isinstance(value, str):
            attrs.append((key, _a_s(value)))
    outs = []
    for i, out in enumerate(op.outputs):
        extra = [
            ("_datadump_origin_name", _a_s(out.origin)),
            ("_datadump_origin_output_index", _a_i(out.origin_index)),
            ("_datadump_origin_format", _a_s(host_format(out.value))),
            ("_datadump_origin_data_type", _a_s(_dtype_name(out.value))),
        ]
        del i
        outs.append(_tensor_desc(out.value, out.format, extra))
    result: dict = {"name": op.name, "type": op.type}
    if op_id:
        result["id"] = op_id  # proto3 omits the default 0, as atc does
    if op.inputs:
        result["input"] = list(op.inputs)
        result["input_desc"] = [
            _tensor_desc(v, f, []) for v, f in zip(op.input_values, op.input_formats, strict=True)
        ]
    result["attr"] = _attrs(attrs)
    if outs:
        result["output_desc"] = outs
        result["has_out_attr"] = True
    dst = consumers.get(op.name, [])
    if dst:
        result["dst_name"] = [d for d, _ in dst]
        result["dst_index"] = [i for _, i in dst]
    return result


def graph_json(ops: list[ExecOp], graph_name: str, soc_version: str) -> dict:
    """The atc-style JSON tree of one executed graph (a NetOutput op is appended)."""
    last = next(op for op in reversed(ops) if op.has_task)
    all_ops = [
        *ops,
        ExecOp(
            "Node_Output",
            "NetOutput",
            [f"{last.name}:0"],
            [last.outputs[0].value],
            [last.outputs[0].format],
        ),
    ]
    consumers: dict[str, list[tuple[str, int]]] = {}
    for op in all_ops:
        for k, ref in enumerate(op.inputs):
            consumers.setdefault(split_ref(ref)[0], []).append((op.name, k))
    graph = {
        "attr": _attrs([("soc_version", _a_s(soc_version))]),
        "input": [f"{op.name}:0" for op in all_ops if op.type == "Data"],
        "name": graph_name,
        "op": [_op_json(op, i, consumers) for i, op in enumerate(all_ops)],
    }
    return {
        "attr": _attrs([("soc_version", _a_s(soc_version))]),
        "graph": [graph],
        "name": graph_name,
        "version": 1,
    }


# ----------------------------------------------------------------------------------------------
# Dumps


def _spec(value: np.ndarray, fmt: str, origin: OriginalOp | None) -> TensorSpec:
    dev = to_device(value, fmt)
    return TensorSpec(
        dev,
        format=FORMAT_CODES[fmt],
        shape=dev.shape,
        original_shape=value.shape,
        original_op=origin,
    )


def write_dumps(ops: list[ExecOp], folder: Path, start_us: int) -> int:
    """Write one binary dump per op with a task; returns the bytes written."""
    folder.mkdir(parents=True, exist_ok=True)
    total = 0
    task = 0
    for op in ops:
        if not op.has_task:
            continue
        task += 1
        inputs = [_spec(v, f, None) for v, f in zip(op.input_values, op.input_formats, strict=True)]
        outputs = []
        for out in op.outputs:
            origin = OriginalOp(
                out.origin,
                out.origin_index,
                code_for_numpy(out.value.dtype),
                FORMAT_CODES[host_format(out.value)],
            )
            outputs.append(_spec(out.value, out.format, origin))
        stamp = start_us + task * 37
        path = folder / dump_file_name(op.type, op.name, task, 0, stamp)
        write_dump(path, op.name, inputs, outputs, dump_time=stamp)
        total += path.stat().st_size
    return total
