"""Writing GE graphs as atc-style JSON, and the checks msaccucmp's FusionRuleParser needs of one.

Apart from :mod:`.graph` (reading) so that each stays one concern under the module size limit.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .graph import ORIGINAL_OP_NAMES


def _atc_floats(value: Any) -> Any:
    """atc writes AttrDef ``f`` values as strings ("0.01"); do the same for dicts we write."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key == "f" and isinstance(item, float):
                out[key] = repr(item)
            elif isinstance(item, (dict, list)):
                out[key] = _atc_floats(item)
            else:
                out[key] = item
        return out
    if isinstance(value, list):
        return [_atc_floats(item) if isinstance(item, (dict, list)) else item for item in value]
    return value


def check_graph_dict(model: Mapping[str, Any]) -> list[str]:
    """Problems that would make msaccucmp's FusionRuleParser reject or misread a graph dict:
    op ``id`` not an integer, op/attr entries without string ``name``/``type``/``key``, list
    attrs of the original-name keys without ``list``. Empty when the dict is acceptable."""
    problems: list[str] = []
    graphs = model.get("graph")
    if not isinstance(graphs, list):
        return ["'graph' must be a list"]
    for g_index, graph in enumerate(graphs):
        ops = graph.get("op") if isinstance(graph, Mapping) else None
        if not isinstance(ops, list):
            problems.append(f"graph[{g_index}]: 'op' must be a list")
            continue
        for op in ops:
            name = op.get("name")
            if not isinstance(name, str) or not isinstance(op.get("type"), str):
                problems.append(f"op {name!r}: 'name' and 'type' must be strings")
            if "id" in op and (not isinstance(op["id"], int) or isinstance(op["id"], bool)):
                problems.append(f"op {name!r}: 'id' must be a JSON integer")
            if "input" in op and not isinstance(op["input"], list):
                problems.append(f"op {name!r}: 'input' must be a list")
            entries = list(op.get("attr") or [])
            for index, desc in enumerate(op.get("output_desc") or []):
                if "attr" not in desc:
                    problems.append(
                        f"op {name!r}: output_desc[{index}] has no 'attr' key "
                        "(msaccucmp skips such descs, shifting the ones after it)"
                    )
                entries += list(desc.get("attr") or [])
            for entry in entries:
                key = entry.get("key")
                if not isinstance(key, str):
                    problems.append(f"op {name!r}: attr entry without a string 'key'")
                    continue
                value = entry.get("value")
                if key in (ORIGINAL_OP_NAMES, "origin_shape") and not (
                    isinstance(value, Mapping) and "list" in value
                ):
                    problems.append(f"op {name!r}: attr {key!r} must hold a 'list'")
                if key in (
                    "_datadump_origin_name",
                    "_datadump_origin_format",
                    "origin_format",
                    "_L1_fusion_sub_graph_no",
                ) and not (isinstance(value, Mapping) and isinstance(value.get("s"), str)):
                    problems.append(f"op {name!r}: attr {key!r} must hold a string 's'")
                if key == "_datadump_origin_output_index" and not (
                    isinstance(value, Mapping) and isinstance(value.get("i"), int)
                ):
                    problems.append(f"op {name!r}: attr {key!r} must hold an integer 'i'")
                if key == "_datadump_is_multiop" and not (
                    isinstance(value, Mapping) and isinstance(value.get("b"), bool)
                ):
                    problems.append(f"op {name!r}: attr {key!r} must hold a bool 'b'")
    return problems


def graph_json_text(model: Mapping[str, Any], indent: int | None = 2) -> str:
    """JSON text of a ModelDef dict in atc's conventions: sorted keys, float attrs as strings."""
    return json.dumps(_atc_floats(model), indent=indent, sort_keys=True, ensure_ascii=False)


def write_graph_json(model: Mapping[str, Any], path: str | os.PathLike, indent: int | None = 2):
    """Write a ModelDef dict as an atc-style graph JSON file (see :func:`graph_json_text`)."""
    Path(path).write_text(graph_json_text(model, indent) + "\n", encoding="utf-8")
    return Path(path)
