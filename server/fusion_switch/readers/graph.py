"""One model for GE graphs, whether they come as ``atc`` JSON or as ``ge_proto_*.txt`` text.

Both files are the protobuf ``ge.proto.ModelDef`` (formats.md 2.2): the JSON is its JSON
mapping (maps as ``[{"key", "value"}]``, enums as names), the text file its TextFormat, which
:mod:`.graph_text` parses into the same dict shape. :func:`graph_from_dict` turns that dict into
:class:`Graph` / :class:`Op` / :class:`TensorDesc` with attribute values as plain Python values.

Attribute conversion (``AttrDef`` → Python): ``s``/``bt`` → str, ``i``/``dt`` → int, ``f`` →
float, ``b`` → bool, ``list`` → list of the member that is present (``[]`` when none is),
``list_list_int``/``list_list_float`` → list of lists, ``func`` → ``{"name", "attr"}``, ``td`` →
:class:`TensorDesc`, ``t`` → ``{"desc": TensorDesc}``, an empty AttrDef (``null``) → None.
The raw AttrDef dicts stay available (``raw_attrs``) for callers that must mimic msaccucmp's
exact reading of them. Converted values are computed on first use (``attrs``, or one key with
``attr(key)``): pairing reads only raw attributes, and converting every attribute of a
5,000-op model up front was most of the time spent reading it. Maps whose conversion could
fail are still converted when the graph is read, so a malformed file fails there.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .collector import collector_paused
from .dtypes import data_type_name
from .graph_file import GraphError, read_graph_head
from .graph_kind import sniff_graph

ORIGINAL_OP_NAMES = "_datadump_original_op_names"
PASS_NAME = "pass_name"
PASS_NAME_UB = "pass_name_ub"
SINGLE_OP_UB_PASS_NAME = "_single_op_ub_pass_name"
_PASS_KEYS = frozenset((PASS_NAME, PASS_NAME_UB, SINGLE_OP_UB_PASS_NAME))
_LIST_MEMBERS = ("s", "i", "f", "b", "bt", "td", "t", "g", "na", "dt")


def _to_int(value: Any) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return int(str(value).strip())


def _to_float(value: Any) -> float:
    if isinstance(value, str):
        text = value.strip()
        if text[-1:] in ("f", "F") and text[-2:-1].isdigit():
            text = text[:-1]  # C-style "1.5f"
        return float(text)
    return float(value)


def attr_value(attr_def: Any) -> Any:
    """Python value of one ``AttrDef`` dict (see the module docstring)."""
    if not isinstance(attr_def, Mapping) or not attr_def:
        return None
    if "list" in attr_def:
        listed = attr_def["list"] or {}
        for member in _LIST_MEMBERS:
            if member in listed:
                return [_scalar(member, item) for item in listed[member] or []]
        return []
    if "list_list_int" in attr_def:
        rows = (attr_def["list_list_int"] or {}).get("list_list_i", [])
        return [[_to_int(v) for v in (row or {}).get("list_i", [])] for row in rows]
    if "list_list_float" in attr_def:
        rows = (attr_def["list_list_float"] or {}).get("list_list_f", [])
        return [[_to_float(v) for v in (row or {}).get("list_f", [])] for row in rows]
    for member in ("s", "i", "f", "b", "bt", "dt", "td", "t", "func", "g", "expression"):
        if member in attr_def:
            return _scalar(member, attr_def[member])
    return dict(attr_def)


def _scalar(member: str, value: Any) -> Any:
    """Convert one AttrDef member; a value of the wrong type is kept as it is, not fatal."""
    try:
        if member in ("i", "dt"):
            return _to_int(value)
        if member == "f":
            return _to_float(value)
    except (TypeError, ValueError, OverflowError):
        return value
    if member == "b":
        return bool(value) if not isinstance(value, str) else value.lower() == "true"
    if member == "td":
        return TensorDesc.from_dict(value or {})
    if member == "t":
        return {"desc": TensorDesc.from_dict((value or {}).get("desc") or {})}
    if member in ("func", "na"):
        value = value or {}
        return {"name": value.get("name", ""), "attr": attrs_from_list(value.get("attr"))}
    return value


def attrs_from_list(entries: Iterable[Mapping[str, Any]] | None) -> dict[str, Any]:
    """A proto map rendered as ``[{"key": k, "value": AttrDef}]`` → ``{k: python value}``."""
    return {entry.get("key", ""): attr_value(entry.get("value")) for entry in entries or ()}


def raw_attrs_from_list(entries: Iterable[Mapping[str, Any]] | None) -> dict[str, Any]:
    """The same map with the AttrDef dicts left as they are (``None`` for ``null``)."""
    return {entry.get("key", ""): entry.get("value") for entry in entries or ()}


_SIMPLE_MEMBERS = frozenset(("s", "i", "f", "b", "bt", "dt"))  # _scalar() never fails on these
_RISKY_MEMBERS = frozenset(("list_list_int", "list_list_float", "td", "t", "func", "na"))
_RISKY_LIST_MEMBERS = frozenset(_LIST_MEMBERS) - _SIMPLE_MEMBERS


def _converts_safely(raw: dict[str, Any]) -> bool:
    """True when :func:`attr_value` cannot fail on any value of ``raw`` (a raw attr map): every
    AttrDef is null or a dict without nested descs, functions or lists of lists, and its
    ``list``, if any, holds only lists of scalars. Such maps are converted on first use; any
    other map is converted at once, so that a malformed attribute is reported when the graph
    is read, never later by an accessor."""
    for value in raw.values():
        if value is None:
            continue
        if type(value) is not dict:
            return False
        if "list" in value:
            listed = value["list"]
            if listed is None:
                continue
            if type(listed) is not dict:
                return False
            for member, items in listed.items():
                if member in _SIMPLE_MEMBERS:
                    if items is not None and type(items) is not list:
                        return False
                elif member in _RISKY_LIST_MEMBERS:
                    return False
        elif not _RISKY_MEMBERS.isdisjoint(value):
            return False
    return True


class _LazyAttrs:
    """Mixin for :class:`TensorDesc` and :class:`Op`: ``raw_attrs`` is read eagerly (msaccucmp's
    pairing reads it), ``attrs`` (converted values) on first use. Most converted attributes
    are never looked at, and converting them all was most of the time spent reading a graph."""

    __slots__ = ()

    @property
    def attrs(self) -> dict[str, Any]:
        attrs = self._attrs
        if attrs is None:
            attrs = self._attrs = {key: attr_value(value) for key, value in self.raw_attrs.items()}
        return attrs

    @attrs.setter
    def attrs(self, value: dict[str, Any]) -> None:
        self._attrs = value

    def attr(self, key: str) -> Any:
        """``attrs.get(key)``, converting only that attribute when the others are not needed
        yet (the accessors below read one or two attributes of every op)."""
        attrs = self._attrs
        if attrs is not None:
            return attrs.get(key)
        return attr_value(self.raw_attrs.get(key))

    def _set_attrs(self, attrs: dict[str, Any] | None, raw_attrs: dict[str, Any] | None) -> None:
        self.raw_attrs = raw_attrs if raw_attrs is not None else {}
        if attrs is None and raw_attrs is not None and not _converts_safely(raw_attrs):
            attrs = {key: attr_value(value) for key, value in raw_attrs.items()}
        self._attrs = attrs if attrs is not None or raw_attrs is not None else {}


def _dtype_name(value: Any) -> str:
    """Data type as its enum name (text format may give the number instead)."""
    if value is None:
        return ""
    if isinstance(value, int) and not isinstance(value, bool):
        return data_type_name(value)
    return str(value)


def _shape(shape: Any) -> tuple[int, ...]:
    if not isinstance(shape, Mapping):
        return ()
    return tuple(_to_int(d) for d in shape.get("dim", []) or [])


class TensorDesc(_LazyAttrs):
    """One ``TensorDescriptor``: data type name, layout (format) name, shape and attributes.

    ``has_attr``: the desc carried an "attr" key (msaccucmp only counts those). ``attrs`` holds
    converted values, ``raw_attrs`` the AttrDef dicts as read (see :class:`_LazyAttrs`)."""

    __slots__ = ("_attrs", "dtype", "has_attr", "layout", "name", "raw_attrs", "shape")

    def __init__(
        self,
        dtype: str = "",
        layout: str = "",
        shape: tuple[int, ...] = (),
        attrs: dict[str, Any] | None = None,
        has_attr: bool = False,
        name: str = "",
        raw_attrs: dict[str, Any] | None = None,
    ) -> None:
        self.dtype = dtype
        self.layout = layout
        self.shape = shape
        self.has_attr = has_attr
        self.name = name
        self._set_attrs(attrs, raw_attrs)

    @classmethod
    def from_dict(cls, desc: Mapping[str, Any]) -> TensorDesc:
        return cls(
            dtype=_dtype_name(desc.get("dtype")),
            layout=str(desc.get("layout", "") or ""),
            shape=_shape(desc.get("shape")),
            has_attr="attr" in desc,
            name=str(desc.get("name", "") or ""),
            raw_attrs=raw_attrs_from_list(desc.get("attr")),
        )

    def __eq__(self, other: object) -> bool:
        if type(other) is not TensorDesc:
            return NotImplemented
        return (self.dtype, self.layout, self.shape, self.attrs, self.has_attr, self.name) == (
            other.dtype,
            other.layout,
            other.shape,
            other.attrs,
            other.has_attr,
            other.name,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dataclass it was

    def __repr__(self) -> str:
        return (
            f"TensorDesc(dtype={self.dtype!r}, layout={self.layout!r}, shape={self.shape!r}, "
            f"attrs={self.attrs!r}, has_attr={self.has_attr!r}, name={self.name!r})"
        )

    @property
    def format(self) -> str:
        return self.layout

    @property
    def origin_shape(self) -> tuple[int, ...] | None:
        value = self.attr("origin_shape")
        if not isinstance(value, list) or not all(isinstance(v, int) for v in value):
            return None
        return tuple(value)

    @property
    def origin_format(self) -> str:
        """``_datadump_origin_format``, else ``origin_format`` (msaccucmp's order), else ''."""
        for key in ("_datadump_origin_format", "origin_format"):
            value = self.attr(key)
            if isinstance(value, str) and value:
                return value
        return ""

    @property
    def origin_name(self) -> str:
        value = self.attr("_datadump_origin_name")
        return value if isinstance(value, str) else ""

    @property
    def origin_output_index(self) -> int | None:
        value = self.attr("_datadump_origin_output_index")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def origin_data_type(self) -> str:
        for key in ("_datadump_origin_data_type", "origin_data_type"):
            value = self.attr(key)
            if isinstance(value, str) and value:
                return value
        return ""


def _string_list(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value]
    if isinstance(value, str) and value:
        return [value]
    return []


class Op(_LazyAttrs):
    """One ``OpDef``. ``inputs`` keeps the raw ``"src:idx"`` strings (control ``":-1"`` and empty
    entries included, as in the file); ``id`` is 0 when the file omits it (proto3 default).
    ``attrs`` holds converted values, ``raw_attrs`` the AttrDef dicts (see :class:`_LazyAttrs`)."""

    __slots__ = (
        "_attrs",
        "has_id",
        "id",
        "input_descs",
        "inputs",
        "name",
        "output_descs",
        "raw_attrs",
        "stream_id",
        "subgraph_names",
        "type",
    )

    def __init__(
        self,
        name: str,
        type: str = "",
        id: int = 0,
        inputs: list[str] | None = None,
        attrs: dict[str, Any] | None = None,
        input_descs: list[TensorDesc] | None = None,
        output_descs: list[TensorDesc] | None = None,
        raw_attrs: dict[str, Any] | None = None,
        stream_id: int = 0,
        has_id: bool = False,
        subgraph_names: list[str] | None = None,
    ) -> None:
        self.name = name
        self.type = type
        self.id = id
        self.inputs = inputs if inputs is not None else []
        self.input_descs = input_descs if input_descs is not None else []
        self.output_descs = output_descs if output_descs is not None else []
        self.stream_id = stream_id
        self.has_id = has_id
        self.subgraph_names = subgraph_names if subgraph_names is not None else []
        self._set_attrs(attrs, raw_attrs)

    @classmethod
    def from_dict(cls, op: Mapping[str, Any]) -> Op:
        return cls(
            name=str(op.get("name", "") or ""),
            type=str(op.get("type", "") or ""),
            id=_to_int(op.get("id", 0) or 0),
            has_id="id" in op,
            inputs=_string_list(op.get("input")),
            raw_attrs=raw_attrs_from_list(op.get("attr")),
            input_descs=[TensorDesc.from_dict(d or {}) for d in op.get("input_desc", []) or []],
            output_descs=[TensorDesc.from_dict(d or {}) for d in op.get("output_desc", []) or []],
            stream_id=_to_int(op.get("stream_id", 0) or 0),
            subgraph_names=_string_list(op.get("subgraph_name")),  # PartitionedCall/If/While
        )

    _FIELDS = ("name", "type", "id", "inputs", "attrs", "input_descs", "output_descs")

    def __eq__(self, other: object) -> bool:
        if type(other) is not Op:
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in (*self._FIELDS, "stream_id"))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._FIELDS)
        return f"Op({shown}, stream_id={self.stream_id!r}, has_id={self.has_id!r})"

    @property
    def data_inputs(self) -> list[str]:
        """Inputs without control edges (``:-1``) and empty entries."""
        return [item for item in self.inputs if item and not item.endswith(":-1")]

    @property
    def has_original_names(self) -> bool:
        return ORIGINAL_OP_NAMES in self.raw_attrs

    @property
    def original_names(self) -> list[str]:
        """``_datadump_original_op_names`` as written ([] when absent or an empty list)."""
        return _string_list(self.attr(ORIGINAL_OP_NAMES))

    @property
    def msaccucmp_original_names(self) -> list[str]:
        """What msaccucmp reads: absent → ``[name]``; present without ``s`` → ``['']``."""
        if not self.has_original_names:
            return [self.name]
        raw = self.raw_attrs.get(ORIGINAL_OP_NAMES) or {}
        listed = raw.get("list") if isinstance(raw, Mapping) else None
        if not isinstance(listed, Mapping) or "s" not in listed:
            return [""]
        return [str(v) for v in listed.get("s") or []]

    @property
    def ub_pass_names(self) -> list[str]:
        """UB fusion passes: ``pass_name_ub`` then ``_single_op_ub_pass_name`` (no duplicates)."""
        names = _string_list(self.attr(PASS_NAME_UB))
        names += _string_list(self.attr(SINGLE_OP_UB_PASS_NAME))
        return list(dict.fromkeys(n for n in names if n))

    @property
    def pass_names(self) -> list[str]:
        """Every pass that produced this op, oldest first, most recent last: the ``pass_name``
        list, then UB passes not already in it."""
        if _PASS_KEYS.isdisjoint(self.raw_attrs if self._attrs is None else self._attrs):
            return []  # most ops: none of the keys that attr() would read is there
        names = _string_list(self.attr(PASS_NAME)) + self.ub_pass_names
        return list(dict.fromkeys(n for n in names if n))

    @property
    def has_pass_names(self) -> bool:
        """``bool(pass_names)``, found without converting anything for the ops (most) that
        carry none of the pass-name attributes."""
        keys = self.raw_attrs if self._attrs is None else self._attrs  # what attr() reads
        return not _PASS_KEYS.isdisjoint(keys) and bool(self.pass_names)

    @property
    def is_fused(self) -> bool:
        """Produced by fusion: carries a pass name, or stands for other original ops."""
        if self.pass_names:
            return True
        names = [n for n in self.original_names if n]
        return bool(names) and names != [self.name]

    @property
    def fusion_scope(self) -> int | None:
        value = self.attr("fusion_scope")
        return value if isinstance(value, int) and not isinstance(value, bool) else None


# ----------------------------------------------------------------------------- fast reading
#
# :func:`_op_fast` builds the same :class:`Op` as ``Op.from_dict`` for the values a well-formed
# file holds (exact ``str``/``int``/``list``/``dict`` types, every attr entry with "key" and
# "value"), with no keyword calls, no isinstance chains and no intermediate dicts. On anything
# else it raises, and the caller runs ``Op.from_dict`` on that op: that reading stays the one
# definition, and the only one that words errors. tests/readers/test_graph_fast.py checks both
# give the same Graph on real and generated graphs.


def _raw_attrs_fast(entries: Any) -> tuple[dict[str, Any], bool]:
    """(raw attr map, whether :func:`_converts_safely` holds for it), in one pass (a second
    one, over the values kept, when a key repeats)."""
    if not entries:
        return {}, True
    if type(entries) is not list:
        raise TypeError("attr is not a list")
    raw = {}
    safe = True
    for entry in entries:
        value = entry["value"]  # KeyError, TypeError: the general reading decides
        raw[entry["key"]] = value
        if safe and value is not None:
            if type(value) is not dict:
                safe = False
            elif value.keys() <= _PLAIN_MEMBERS:
                continue
            elif "list" in value:
                safe = _converts_safely({"": value})
            else:
                safe = _RISKY_MEMBERS.isdisjoint(value)
    if len(raw) != len(entries):
        safe = _converts_safely(raw)
    return raw, safe


_PLAIN_MEMBERS = frozenset(("s", "i", "f", "b", "bt", "dt"))


def _desc_fast(desc: dict) -> TensorDesc:
    if type(desc) is not dict:
        raise TypeError("desc is not an object")
    get = desc.get
    dtype = get("dtype")
    if type(dtype) is not str:
        if dtype is not None:
            raise TypeError("dtype is not a name")
        dtype = ""
    layout = get("layout", "")
    if type(layout) is not str:
        layout = str(layout or "")
    name = get("name", "")
    if type(name) is not str:
        name = str(name or "")
    shape = get("shape")
    if type(shape) is dict:
        dims = shape.get("dim", [])
        if not dims:
            shape = ()
        elif type(dims) is list:
            for dim in dims:
                if type(dim) is not int:
                    raise TypeError("dim is not an int")
            shape = tuple(dims)
        else:
            raise TypeError("dim is not a list")
    elif shape is None:
        shape = ()
    else:
        raise TypeError("shape is not an object")
    raw, safe = _raw_attrs_fast(get("attr"))
    made = _new_desc(TensorDesc)
    made.dtype = dtype
    made.layout = layout
    made.shape = shape
    made.has_attr = "attr" in desc
    made.name = name
    made.raw_attrs = raw
    made._attrs = None if safe else {k: attr_value(v) for k, v in raw.items()}
    return made


def _descs_fast(descs: Any) -> list[TensorDesc]:
    if not descs:
        return []
    if type(descs) is not list:
        raise TypeError("descs are not a list")
    return [_desc_fast(desc) for desc in descs]


def _int_fast(value: Any) -> int:
    if not value:
        return 0
    if type(value) is not int:
        raise TypeError("not an int")
    return value


def _op_fast(op: dict) -> Op:
    """The :class:`Op` that ``Op.from_dict(op)`` makes, or an exception (see above)."""
    get = op.get
    name = get("name", "")
    if type(name) is not str:
        name = str(name or "")
    kind = get("type", "")
    if type(kind) is not str:
        kind = str(kind or "")
    made = _new_op(Op)
    made.name = name
    made.type = kind
    made.id = _int_fast(get("id", 0))
    made.has_id = "id" in op
    made.inputs = _string_list(get("input"))
    raw, safe = _raw_attrs_fast(get("attr"))
    made.input_descs = _descs_fast(get("input_desc"))
    made.output_descs = _descs_fast(get("output_desc"))
    made.stream_id = _int_fast(get("stream_id", 0))
    made.subgraph_names = _string_list(get("subgraph_name"))
    made.raw_attrs = raw
    made._attrs = None if safe else {k: attr_value(v) for k, v in raw.items()}
    return made


_new_desc = TensorDesc.__new__
_new_op = Op.__new__


@dataclass
class Graph:
    """A ``GraphDef`` plus the model attributes around it. ``others`` are the model's further
    graphs (sub-graphs) when this is the main one."""

    name: str
    soc_version: str | None = None
    ops: list[Op] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)
    path: Path | None = field(default=None, compare=False)
    model_name: str = ""
    model_attrs: dict[str, Any] = field(default_factory=dict)
    inputs: list[str] = field(default_factory=list)
    others: list[Graph] = field(default_factory=list)
    _by_name: dict[str, Op] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._by_name = {op.name: op for op in self.ops}

    def op(self, name: str) -> Op | None:
        return self._by_name.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    @property
    def all_graphs(self) -> list[Graph]:
        return [self, *self.others]

    def fused_ops(self) -> list[Op]:
        return [op for op in self.ops if op.is_fused]


def _soc_version(*attr_maps: Mapping[str, Any]) -> str | None:
    for attrs in attr_maps:
        value = attrs.get("soc_version")
        if isinstance(value, str) and value:
            return value
    return None


def graph_from_dict(model: Mapping[str, Any], path: str | os.PathLike | None = None) -> Graph:
    """Build the main :class:`Graph` (``graph[0]``) from a ModelDef dict; other graphs go to
    ``others``. Also accepts a bare GraphDef dict (one with ``op`` at the top)."""
    if isinstance(model, list):
        raise GraphError(
            path,
            "not an atc graph JSON: the top level is an array "
            "(expected an object with a 'graph' list, as atc --mode=5 writes)",
        )
    if not isinstance(model, Mapping):
        raise GraphError(path, "top level is not an object (expected a ModelDef with 'graph')")
    if "graph" not in model and "op" in model:
        model = {"graph": [model]}
    graphs = model.get("graph")
    if not isinstance(graphs, list) or not graphs:
        raise GraphError(path, "no 'graph' list in the model; is this an atc/GE graph file?")
    try:
        model_attrs = attrs_from_list(model.get("attr"))
    except (TypeError, ValueError, AttributeError) as error:
        raise GraphError(path, f"model attr: {error}") from None
    built = []
    for index, graph in enumerate(graphs):
        try:
            built.append(_graph(graph, index, model, model_attrs, path))
        except (TypeError, ValueError, AttributeError) as error:
            raise GraphError(path, f"graph[{index}]: {error}") from None
    main = built[0]
    main.others = built[1:]
    return main


def _graph(graph: Any, index: int, model: Mapping[str, Any], model_attrs: dict, path: Any) -> Graph:
    """One GraphDef dict → Graph (errors from malformed values are the caller's to wrap)."""
    if not isinstance(graph, Mapping):
        raise GraphError(path, f"graph[{index}] is not an object")
    ops_raw = graph.get("op", []) or []
    if not isinstance(ops_raw, list):
        raise GraphError(path, f"graph[{index}].op is not a list")
    ops = []
    for op_index, op in enumerate(ops_raw):
        if type(op) is dict:
            try:
                ops.append(_op_fast(op))
                continue
            except Exception:  # anything unusual: the general reading decides (and words errors)
                pass
        elif not isinstance(op, Mapping):
            raise GraphError(path, f"graph[{index}].op[{op_index}] is not an object")
        try:
            ops.append(Op.from_dict(op))
        except (TypeError, ValueError, AttributeError) as error:
            name = op.get("name", f"#{op_index}")
            raise GraphError(path, f"op {name!r}: {error}") from None
    graph_attrs = attrs_from_list(graph.get("attr"))
    return Graph(
        name=str(graph.get("name", "") or ""),
        soc_version=_soc_version(model_attrs, graph_attrs),
        ops=ops,
        attrs=graph_attrs,
        path=Path(path) if path is not None else None,
        model_name=str(model.get("name", "") or ""),
        model_attrs=model_attrs,
        inputs=_string_list(graph.get("input")),
    )


def load_graph_dict(path: str | os.PathLike) -> dict[str, Any]:
    """The ModelDef dict of a graph file, JSON or protobuf text format (decided by content)."""
    path = Path(path)
    head = read_graph_head(path)  # empty, binary, UTF-16: refused here
    try:
        kind = sniff_graph(path)
    except OSError as error:
        raise GraphError(path, f"cannot read: {error.strerror or error}") from None
    if kind.is_foreign:  # ONNX text, TF GraphDef, Caffe prototxt, a cfg, a tiny file...
        raise GraphError(path, kind.refusal())
    first = head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if first in (b"{", b"["):
        try:
            with open(path, encoding="utf-8-sig") as handle:
                data = json.load(handle)
        except json.JSONDecodeError as error:
            raise GraphError(
                path, f"invalid JSON: {error.msg}", error.lineno, error.colno
            ) from None
        except (OSError, UnicodeDecodeError) as error:
            raise GraphError(path, f"cannot read: {error}") from None
        except RecursionError:
            raise GraphError(path, "JSON nested too deeply: not an atc graph") from None
        except ValueError as error:  # int() refuses numbers of more than 4300 digits
            digits = re.search(r"value has (\d+) digits", str(error))
            count = f"{digits.group(1)} digits" if digits else "too many digits"
            raise GraphError(path, f"a number with {count}: too long for a graph value") from None
        return data
    from .graph_text import parse_graph_text_file  # only text graphs need the parser

    return parse_graph_text_file(path, head_checked=True)


def load_graph(path: str | os.PathLike) -> Graph:
    """Read a graph file (atc JSON or ``ge_proto_*.txt``) into a :class:`Graph` (or take the
    one :func:`hand_on` kept for it)."""
    handed = _take_handed(path)
    if handed is not None:
        return handed
    with collector_paused():
        return graph_from_dict(load_graph_dict(path), path)


# A graph picked from a folder (``-f DIR``) is read to score it, then read again by the job:
# the picker hands it on instead. Kept for one use, at most two (-f and -cf), and only while
# the file is unchanged (same size, modification time and inode).
_HANDED: dict[Path, tuple[tuple, Graph]] = {}
_HANDED_MAX = 2


def _file_stamp(path: str | os.PathLike) -> tuple | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_dev)


def hand_on(graph: Graph) -> None:
    """Keep ``graph`` (read by :func:`load_graph` from ``graph.path``) for the next
    :func:`load_graph` of that same path in this process, which then returns it unread."""
    if graph.path is None or isinstance(graph, _DeferredGraph):
        return
    stamp = _file_stamp(graph.path)
    if stamp is None:
        return
    _HANDED.pop(graph.path, None)
    _HANDED[graph.path] = (stamp, graph)
    while len(_HANDED) > _HANDED_MAX:
        _HANDED.pop(next(iter(_HANDED)))


def drop_handed(path: str | os.PathLike) -> None:
    """Forget a graph kept by :func:`hand_on` (a process that will not read it frees it)."""
    _HANDED.pop(Path(path), None)


def handed_graph(path: str | os.PathLike) -> Graph | None:
    """The graph kept for ``path`` by :func:`hand_on` if its file is unchanged, still kept."""
    kept = _HANDED.get(Path(path)) if _HANDED else None
    if kept is None or kept[0] != _file_stamp(path):
        return None
    return kept[1]


def _take_handed(path: str | os.PathLike) -> Graph | None:
    graph = handed_graph(path)
    if _HANDED:
        _HANDED.pop(Path(path), None)
    return graph


class _DeferredGraph(Graph):
    """A :class:`Graph` whose file is read on first use of anything but ``path`` and ``name``
    (see :func:`deferred_graph`)."""

    _EAGER = frozenset(("path", "name", "__dict__", "__class__", "_read_now"))

    def __init__(self, path: str | os.PathLike, name: str) -> None:  # no dataclass __init__
        self.__dict__.update(path=Path(path), name=name, _deferred=True)

    def __getattribute__(self, attr: str) -> Any:
        if attr not in _DeferredGraph._EAGER and object.__getattribute__(self, "__dict__").get(
            "_deferred"
        ):
            object.__getattribute__(self, "_read_now")()
        return object.__getattribute__(self, attr)

    def _read_now(self) -> None:
        state = self.__dict__
        state.update(load_graph(state["path"]).__dict__, _deferred=False)


def deferred_graph(path: str | os.PathLike, name: str) -> Graph:
    """A Graph for ``path`` that reads the file only when more than its path and (known) name
    is used: for a graph the caller has already read once and probably will not need again.
    Reading it then raises :class:`GraphError` like :func:`load_graph`."""
    return _DeferredGraph(path, name)
