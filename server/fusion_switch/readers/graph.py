"""Reading GE graph files (``atc`` JSON or ``ge_proto_*.txt`` text) into :mod:`.graph_model`.

JSON goes first to :mod:`.graph_json` (typed decoding, no dicts built for what is thrown away);
whatever that reading declines, and every text graph, is read here into the ModelDef dict
(``json`` or :mod:`.graph_text`) and built by :func:`graph_from_dict`: the one reading that
words errors. The model's names are re-exported, so ``readers.graph`` stays the one import.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .collector import collector_paused
from .graph_file import GraphError, read_graph_head
from .graph_json import read_graph_json
from .graph_kind import sniff_graph
from .graph_model import (
    _RISKY_MEMBERS,
    ORIGINAL_OP_NAMES,
    PASS_NAME,
    PASS_NAME_UB,
    SINGLE_OP_UB_PASS_NAME,
    Graph,
    Op,
    TensorDesc,
    _converts_safely,
    _soc_version,
    _string_list,
    attr_value,
    attrs_from_list,
    raw_attrs_from_list,
)

__all__ = [
    "ORIGINAL_OP_NAMES",
    "PASS_NAME",
    "PASS_NAME_UB",
    "SINGLE_OP_UB_PASS_NAME",
    "Graph",
    "GraphError",
    "Op",
    "TensorDesc",
    "_string_list",
    "attr_value",
    "attrs_from_list",
    "deferred_graph",
    "drop_handed",
    "file_stamp",
    "graph_from_dict",
    "hand_on",
    "handed_graph",
    "load_graph",
    "load_graph_dict",
    "raw_attrs_from_list",
    "read_graph",
]

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


def _is_json(path: Path) -> bool:
    """Refuse what is no graph (empty, binary, UTF-16, ONNX text, TF GraphDef, a cfg...), the
    same way for every reading; then whether the file is JSON (else protobuf text)."""
    head = read_graph_head(path)  # empty, binary, UTF-16: refused here
    try:
        kind = sniff_graph(path)
    except OSError as error:
        raise GraphError(path, f"cannot read: {error.strerror or error}") from None
    if kind.is_foreign:  # ONNX text, TF GraphDef, Caffe prototxt, a cfg, a tiny file...
        raise GraphError(path, kind.refusal())
    return head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] in (b"{", b"[")


def _json_dict(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8-sig") as handle:
            return json.load(handle)
    except json.JSONDecodeError as error:
        raise GraphError(path, f"invalid JSON: {error.msg}", error.lineno, error.colno) from None
    except (OSError, UnicodeDecodeError) as error:
        raise GraphError(path, f"cannot read: {error}") from None
    except RecursionError:
        raise GraphError(path, "JSON nested too deeply: not an atc graph") from None
    except ValueError as error:  # int() refuses numbers of more than 4300 digits
        digits = re.search(r"value has (\d+) digits", str(error))
        count = f"{digits.group(1)} digits" if digits else "too many digits"
        raise GraphError(path, f"a number with {count}: too long for a graph value") from None


def _text_dict(path: Path) -> dict[str, Any]:
    from .graph_text import parse_graph_text_file  # only text graphs need the parser

    return parse_graph_text_file(path, head_checked=True)


def load_graph_dict(path: str | os.PathLike) -> dict[str, Any]:
    """The ModelDef dict of a graph file, JSON or protobuf text format (decided by content)."""
    path = Path(path)
    return _json_dict(path) if _is_json(path) else _text_dict(path)


def read_graph(path: str | os.PathLike, input_descs: bool = True) -> Graph:
    """Read a graph file into a :class:`Graph` (the same one :func:`graph_from_dict` makes of
    :func:`load_graph_dict`): JSON by :func:`.graph_json.read_graph_json` unless it declines
    the file, else, and text graphs always, through the ModelDef dict. Every read of a graph
    file goes through here (tests count reads on it). ``input_descs=False``: the JSON reading
    may leave the ops' input descs out (see :func:`.graph_json.read_graph_json`)."""
    where = Path(path)
    if not _is_json(where):
        return graph_from_dict(_text_dict(where), path)
    graph = read_graph_json(where, path, input_descs)
    return graph if graph is not None else graph_from_dict(_json_dict(where), path)


def load_graph(path: str | os.PathLike, input_descs: bool = True) -> Graph:
    """Read a graph file (atc JSON or ``ge_proto_*.txt``) into a :class:`Graph` (or take the
    one :func:`hand_on` kept for it). ``input_descs``: see :func:`read_graph`."""
    handed = _take_handed(path)
    if handed is not None:
        return handed
    with collector_paused():
        return read_graph(path, input_descs)


# A graph picked from a folder (``-f DIR``) is read to score it, then read again by the job:
# the picker hands it on instead. Kept for one use, at most two (-f and -cf), and only while
# the file is unchanged (same size, modification time and inode).
_HANDED: dict[Path, tuple[tuple, Graph]] = {}
_HANDED_MAX = 2


def file_stamp(path: str | os.PathLike) -> tuple | None:
    """A file's (size, mtime, inode, device): changed when it is rewritten; None when gone."""
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
    stamp = file_stamp(graph.path)
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
    if kept is None or kept[0] != file_stamp(path):
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
