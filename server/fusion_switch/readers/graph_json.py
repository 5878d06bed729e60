"""The fast reading of ``atc`` JSON graphs: msgspec decodes the file straight into typed Structs.

``json.loads`` builds a dict for every op, desc and attribute entry (and for fields no one
reads: ``dst_name``, ``device_type``...), then :func:`.graph.graph_from_dict` copies them into
:class:`Op` / :class:`TensorDesc` objects; for the 17.5 MB fusion-off graph of a 5,000-op model
that was 0.3-0.5 s, paid in every process that reads it (issue 16). Here msgspec's C decoder
fills Structs for the fixed frame of the file (model → graph → op → desc → attribute entry) and
skips the fields the model does not hold. Attribute values (``AttrDef``) are not typed: msgspec
decodes them into the very dicts, lists, strings and numbers ``json.loads`` gives, because
``raw_attrs`` keeps them as read and attribute kinds are open-ended (tensors, sub-graphs...).

The schema states only what :func:`.graph.graph_from_dict` takes without converting: strings
where it keeps strings, ints where it keeps ints, lists where it iterates lists. Whatever does
not fit exactly (a number where a name is expected, a null desc, ``NaN``, lone surrogates,
numbers out of range, a bare GraphDef at the top, any decoding error) makes
:func:`graph_from_json` return None, and the caller reads the file the general way, which
stays the one reading that words errors (file, line, column). Fields the general reading
ignores are ignored here too: dropping them loses nothing the model holds.
tests/readers/test_graph_json.py checks both readings give the same Graph, field by field.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .signals_held import signals_held

with signals_held():
    import msgspec
    from msgspec import UNSET, Struct, UnsetType

from .graph_model import (
    Graph,
    Op,
    TensorDesc,
    _soc_version,
    attr_value,
    unsafe_attr_maps,
)

# gc=False: these Structs hold no reference cycles and live only while the graph is built.


class _Entry(Struct, gc=False):
    """One ``{"key", "value"}`` entry of an attribute map; the value as ``json.loads`` gives it."""

    key: str = ""
    value: Any = None


class _Shape(Struct, gc=False):
    dim: list[int] | None = None


class _Desc(Struct, gc=False):
    dtype: str | None = None
    layout: str | None = None
    name: str | None = None
    shape: _Shape | None = None
    attr: list[_Entry] | UnsetType | None = UNSET  # present or not: TensorDesc.has_attr


class _OpOutputs(Struct, gc=False):
    """An op without its input descs (``input_descs=False``: msgspec skips them unread)."""

    name: str | None = None
    type: str | None = None
    id: int | UnsetType = UNSET  # present or not: Op.has_id
    input: list[str] | None = None
    attr: list[_Entry] | None = None
    output_desc: list[_Desc] | None = None
    stream_id: int = 0
    subgraph_name: list[str] | None = None


class _Op(_OpOutputs, gc=False):
    input_desc: list[_Desc] | None = None


class _Graph(Struct, gc=False):
    name: str | None = None
    input: list[str] | None = None
    attr: list[_Entry] | None = None
    op: list[_Op] | None = None


class _GraphOutputs(_Graph, gc=False):
    op: list[_OpOutputs] | None = None


class _Model(Struct, gc=False):
    name: str | None = None
    attr: list[_Entry] | None = None
    graph: list[_Graph] | UnsetType = UNSET


class _ModelOutputs(_Model, gc=False):
    graph: list[_GraphOutputs] | UnsetType = UNSET


with signals_held():  # see signals_held: msgspec crashed when interrupted here
    _DECODER = msgspec.json.Decoder(_Model)
    _DECODER_WITHOUT_INPUT_DESCS = msgspec.json.Decoder(_ModelOutputs)
_BOM = b"\xef\xbb\xbf"


def read_graph_json(
    path: Path, shown: str | os.PathLike | None = None, input_descs: bool = True
) -> Graph | None:
    """The :class:`Graph` that ``graph_from_dict(json.load(path), shown)`` builds, or None
    where this reading declines the file (see the module docstring); never raises. ``shown``:
    the path as the caller gave it (``Graph.path``), ``path`` by default.

    ``input_descs=False``: every op's ``input_descs`` is left empty, the file's input descs
    skipped unread (not even checked), and the graph says so (``Graph.input_descs_read``):
    for a caller that reads none, the comparison's fusion-on graph (issue 16: a quarter of
    its reading time and of its objects)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    model = _decoded(data, input_descs)
    del data  # 17.5 MB at 5,000 ops: freed before the graph is built
    graph = _built(model, path if shown is None else shown)
    if graph is not None and not input_descs:
        for part in graph.all_graphs:
            part.input_descs_read = False
    return graph


def graph_from_json(data: bytes, path: str | os.PathLike | None = None) -> Graph | None:
    """:func:`read_graph_json` of a file's bytes."""
    return _built(_decoded(data), path)


def _decoded(data: bytes, input_descs: bool = True) -> _Model | None:
    if data.startswith(_BOM):  # the general reading opens the file as utf-8-sig
        data = data[len(_BOM) :]
    try:
        model = (_DECODER if input_descs else _DECODER_WITHOUT_INPUT_DESCS).decode(data)
    except Exception:  # malformed, or beyond the schema: the general reading decides
        return None
    if model.graph is UNSET or not model.graph:  # a bare GraphDef, or no graph: idem
        return None
    return model


def _built(model: _Model | None, path: str | os.PathLike | None) -> Graph | None:
    if model is None:
        return None
    try:
        return _model_graph(model, path)
    except Exception:  # an attribute whose conversion fails: the general reading words it
        return None


def _model_graph(model: _Model, path: str | os.PathLike | None) -> Graph:
    built: list[TensorDesc | Op] = []  # every object with a raw attribute map, for _settle
    model_attrs = _converted(model.attr)
    graphs = []
    for graph in model.graph:
        ops = [_op(op, built) for op in graph.op or ()]
        graph_attrs = _converted(graph.attr)
        graphs.append(
            Graph(
                name=graph.name or "",
                soc_version=_soc_version(model_attrs, graph_attrs),
                ops=ops,
                attrs=graph_attrs,
                path=Path(path) if path is not None else None,
                model_name=model.name or "",
                model_attrs=model_attrs,
                inputs=graph.input or [],
            )
        )
    _settle(built)
    main = graphs[0]
    main.others = graphs[1:]
    return main


def _converted(entries: list[_Entry] | None) -> dict[str, Any]:
    """``attrs_from_list`` of the entries (graph and model attributes are converted at once)."""
    return {entry.key: attr_value(entry.value) for entry in entries or ()}


def _raw(entries: list[_Entry] | UnsetType | None) -> dict[str, Any]:
    """``raw_attrs_from_list``: the AttrDef values as read, the last of a repeated key."""
    return {entry.key: entry.value for entry in entries} if entries else {}


def _desc(desc: _Desc, built: list) -> TensorDesc:
    made = _new_desc(TensorDesc)
    made.dtype = desc.dtype or ""
    made.layout = desc.layout or ""
    shape = desc.shape
    made.shape = tuple(shape.dim) if shape is not None and shape.dim else ()
    attr = desc.attr
    made.has_attr = attr is not UNSET
    made.name = desc.name or ""
    made.raw_attrs = _raw(attr)
    made._attrs = None
    built.append(made)
    return made


def _op(op: _Op | _OpOutputs, built: list) -> Op:
    made = _new_op(Op)
    made.name = op.name or ""
    made.type = op.type or ""
    ident = op.id
    made.has_id = ident is not UNSET
    made.id = 0 if ident is UNSET else ident
    made.inputs = op.input or []
    inputs = getattr(op, "input_desc", None)  # an _OpOutputs has none
    made.input_descs = [_desc(desc, built) for desc in inputs] if inputs else []
    made.output_descs = [_desc(desc, built) for desc in op.output_desc] if op.output_desc else []
    made.stream_id = op.stream_id
    made.subgraph_names = op.subgraph_name or []
    made.raw_attrs = _raw(op.attr)
    made._attrs = None
    built.append(made)
    return made


_new_desc = TensorDesc.__new__
_new_op = Op.__new__


def _settle(built: list[TensorDesc | Op]) -> None:
    """Convert at once the attribute maps that :func:`._converts_safely` does not pass, as the
    general reading does (so that a malformed value fails now, not in a later accessor)."""
    for item in unsafe_attr_maps(built):
        raw = item.raw_attrs
        item._attrs = {key: attr_value(value) for key, value in raw.items()}
