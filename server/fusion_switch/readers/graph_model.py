"""One model for GE graphs, whether they come as ``atc`` JSON or as ``ge_proto_*.txt`` text:
:class:`Graph` / :class:`Op` / :class:`TensorDesc`, with attribute values as plain Python values.

Both files are the protobuf ``ge.proto.ModelDef`` (formats.md 2.2): the JSON is its JSON
mapping (maps as ``[{"key", "value"}]``, enums as names), the text file its TextFormat.
:mod:`.graph` reads either into this model (:mod:`.graph_json` is its fast reading of JSON).

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

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    from . import _attr_check  # _converts_safely in C (_attr_check.c); optional
except ImportError:  # pragma: no cover - exercised on machines without a C compiler
    _attr_check = None

CONSTANT_TYPES = frozenset({"Const", "Constant", "Variable", "VariableV2", "ConstPlaceHolder"})
NO_TASK_TYPES = CONSTANT_TYPES | {"Data", "NetOutput", "RefData", "AippData"}  # never dumped
# ops GE runs without a task of their own (views, control, no-ops): never dumped either, but
# the replay computes the views (a Reshape's output is no parameter)
LOCAL_TYPES = frozenset(
    {"Reshape", "Squeeze", "Unsqueeze", "ExpandDims", "Flatten", "FlattenV2", "NoOp"}
    | {"Identity", "PhonyConcat", "PhonySplit"}
)
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
    # type() first: AttrDefs are dicts, and an isinstance against the Mapping ABC costs ~6x more
    # (~50,000 conversions in the replay and the report of a 5,000-op run)
    if (type(attr_def) is not dict and not isinstance(attr_def, Mapping)) or not attr_def:
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
    is read, never later by an accessor. In C when built (``_attr_check.c``, issue 16: ~10,000
    maps per 5,000-op graph)."""
    if _attr_check is not None and type(raw) is dict:
        return _attr_check.converts_safely(
            raw, _SIMPLE_MEMBERS, _RISKY_LIST_MEMBERS, _RISKY_MEMBERS
        )
    return _converts_safely_python(raw)


def unsafe_attr_maps(items: list[Any]) -> list[Any]:
    """The ``items`` (ops, descs) whose non-empty ``raw_attrs`` does not convert safely
    (:func:`_converts_safely`), in order; one C call over the lot when built."""
    if _attr_check is None:
        return [item for item in items if item.raw_attrs and not _converts_safely(item.raw_attrs)]
    positions = _attr_check.unsafe_positions(
        [item.raw_attrs for item in items], _SIMPLE_MEMBERS, _RISKY_LIST_MEMBERS, _RISKY_MEMBERS
    )  # and any map that is no dict, judged here
    found = [items[i] for i in positions]
    return [item for item in found if item.raw_attrs and not _converts_safely(item.raw_attrs)]


def _converts_safely_python(raw: dict[str, Any]) -> bool:
    """:func:`_converts_safely`'s definition, which ``_attr_check.c`` reproduces."""
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
        return _data_type_names()(value)
    return str(value)


@functools.cache
def _data_type_names() -> Callable[[int], str]:
    """``dtypes.data_type_name``, imported on first use: dtypes loads numpy, which the fusion-off
    digest helper (a graph reader only) does without (issue 16)."""
    from .dtypes import data_type_name

    return data_type_name


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


def ref_name(ref: str) -> tuple[str, int]:
    """An input reference ``"op:index"`` as (op name, output index); index 0 if none."""
    name, _, idx = ref.rpartition(":")
    try:
        return name, int(idx)
    except ValueError:
        return ref, 0


def _string_list(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value]
    if isinstance(value, str) and value:
        return [value]
    return []


def _raw_string_list(raw: Any) -> list[str]:
    """``_string_list(attr_value(raw))``: a list of strings or one string read straight from
    the AttrDef (issue 16: the attribution reads pass names and original-op names for every
    op, the replay for every fused op); any other shape goes through that conversion."""
    if type(raw) is dict:
        if "list" in raw:
            listed = raw["list"]
            if type(listed) is dict and "s" in listed:  # "s" is the first member tried
                items = listed["s"]
                if type(items) is list:
                    return [str(v) for v in items]
        elif "s" in raw and "list_list_int" not in raw and "list_list_float" not in raw:
            value = raw["s"]
            if type(value) is str:
                return [value] if value else []
    elif raw is None:
        return []
    return _string_list(attr_value(raw))


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

    def _strings(self, key: str) -> list[str]:
        """``_string_list(self.attr(key))``, without converting the attribute when the raw
        AttrDef has the usual shape (:func:`_raw_string_list`)."""
        attrs = self._attrs
        if attrs is not None:
            return _string_list(attrs.get(key))
        return _raw_string_list(self.raw_attrs.get(key))

    @property
    def original_names(self) -> list[str]:
        """``_datadump_original_op_names`` as written ([] when absent or an empty list)."""
        return self._strings(ORIGINAL_OP_NAMES)

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
        names = self._strings(PASS_NAME_UB) + self._strings(SINGLE_OP_UB_PASS_NAME)
        return list(dict.fromkeys(filter(None, names)))  # empty names dropped

    @property
    def pass_names(self) -> list[str]:
        """Every pass that produced this op, oldest first, most recent last: the ``pass_name``
        list, then UB passes not already in it."""
        if _PASS_KEYS.isdisjoint(self.raw_attrs if self._attrs is None else self._attrs):
            return []  # most ops: none of the keys that attr() would read is there
        names = self._strings(PASS_NAME) + self.ub_pass_names
        return list(dict.fromkeys(filter(None, names)))

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
    # False: read without the ops' input descs (empty lists), see graph_json.read_graph_json
    input_descs_read: bool = field(default=True, repr=False, compare=False)

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


_SHARED_SCALARS = (str, int, bool)  # not float: -0.0 == 0.0, and NaN equals nothing


def share_equal_attrs(ops: Iterable[Op]) -> int:
    """Let equal one-member scalar AttrDefs (``{"s": "NCHW"}``, ``{"i": 0}``...) of ``ops`` and
    their descs be one dict; returns how many were replaced. Nothing changes an AttrDef dict
    once the graph is built (it is only read), so an equal one can stand for it. Graph reading
    does not do it (a pass over every attribute costs ~25 ms at 5,000 ops): the fusion-off
    helper does it while it waits for the replay's request, which then allocates into the
    freed space (issue 16: of ~110,000 desc attributes at 5,000 ops, ~53,000 are such
    repeats, ~10 MB of dicts)."""
    shared: dict[tuple, dict] = {}
    replaced = 0
    for op in ops:
        for item in (op, *op.input_descs, *op.output_descs):
            raw = item.raw_attrs
            for key, value in raw.items():
                if type(value) is not dict or len(value) != 1:
                    continue
                ((member, scalar),) = value.items()
                kind = type(scalar)
                if kind not in _SHARED_SCALARS:
                    continue
                one = shared.setdefault((member, kind, scalar), value)
                if one is not value:
                    raw[key] = one  # same key: the dict's size and order do not change
                    replaced += 1
    return replaced
