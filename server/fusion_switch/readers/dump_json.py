"""A dump header as protobuf JSON: what CANN's dump parser library hands msaccucmp
(``BigDumpDataParser._parse_dump_to_json``), for the tests' msaccucmp oracle, which reads our
JSON instead of loading that library."""

from __future__ import annotations

import base64

from . import protowire as pw
from .dump import (
    _ATTR_FIELDS,
    _INPUT_FIELDS,
    _LENGTH_BYTES,
    _OUTPUT_FIELDS,
    _SPACE_FIELDS,
    _int,
    _is_workspace,
    _sub,
)

_JSON_64_BIT = {"size", "address", "offset", "dump_time", "dim_start", "dim_end"}


def _message_json(
    buf: memoryview, message: pw.Field, names: dict[int, str], nested: dict[str, object]
) -> dict[str, object]:
    """Protobuf-JSON of one message: snake_case names, enums as ints, 64-bit ints as strings,
    scalars at their default omitted (proto3 JSON)."""
    out: dict[str, object] = {}
    for f in _sub(buf, message, "message"):
        name = names.get(f.number)
        if name is None:
            continue
        if name in ("shape", "original_shape"):
            dims = []
            for sub in _sub(buf, f, name):
                if sub.number == 1:
                    dims.extend(str(d) for d in pw.decode_packed_varints(sub))
            out[name] = {"dim": dims} if dims else {}
        elif name in nested:
            value = _message_json(buf, f, *nested[name])  # type: ignore[misc]
            if name == "dim_range":
                out.setdefault(name, []).append(value)  # type: ignore[union-attr]
            else:
                out[name] = value
        elif name in ("data",):
            pw.expect(f, pw.LEN, name)
            if len(f.value):  # type: ignore[arg-type]
                out[name] = base64.b64encode(bytes(f.value)).decode("ascii")  # type: ignore[arg-type]
        elif name in ("name", "value"):
            text = pw.decode_string(f, name)
            if text:
                out[name] = text
        else:
            raw = _int(f, name)
            if name in _JSON_64_BIT:
                if raw:
                    out[name] = str(raw)
            elif name in ("data_type", "format", "sub_format", "type", "buffer_type"):
                value32 = pw.as_int32(raw)
                if value32:
                    out[name] = value32
            elif raw & 0xFFFFFFFF:
                out[name] = raw & 0xFFFFFFFF
    return out


_ORIGINAL_OP_JSON = ({1: "name", 2: "output_index", 3: "data_type", 4: "format"}, {})
_DIM_RANGE_JSON = ({1: "dim_start", 2: "dim_end"}, {})
_NESTED_JSON = {"original_op": _ORIGINAL_OP_JSON, "dim_range": _DIM_RANGE_JSON}
_BUFFER_JSON_FIELDS = {1: "buffer_type", 2: "data", 3: "size"}


def header_to_json(header: bytes | memoryview) -> dict[str, object]:
    """The protobuf-JSON mapping of a DumpData header (what CANN's dump parser library emits).

    Field names as in the proto, enums as integers, 64-bit integers as strings, unset
    sub-messages and default scalars absent. Old files' field-7 workspaces appear under
    ``space``. Raises :class:`protowire.WireError` on malformed bytes.
    """
    view = memoryview(header)
    out: dict[str, object] = {}
    for f in pw.iter_fields(view, 0, len(view)):
        if f.number in (1, 6, 9):
            text = pw.decode_string(f, "string")
            if text:
                out[{1: "version", 6: "op_name", 9: "dfx_message"}[f.number]] = text
        elif f.number == 2:
            raw = _int(f, "dump_time")
            if raw:
                out["dump_time"] = str(raw)
        elif f.number in (3, 4, 5, 8) or (f.number == 7 and _is_workspace(view, f.start, f.end)):
            key = {3: "output", 4: "input", 5: "buffer", 7: "space", 8: "space"}[f.number]
            names = {
                "output": _OUTPUT_FIELDS,
                "input": _INPUT_FIELDS,
                "buffer": _BUFFER_JSON_FIELDS,
                "space": _SPACE_FIELDS,
            }[key]
            entry = _message_json(view, f, names, _NESTED_JSON)
            out.setdefault(key, []).append(entry)  # type: ignore[union-attr]
        elif f.number == 7:
            entry = _message_json(view, f, _ATTR_FIELDS, {})
            out.setdefault("attr", []).append(entry)  # type: ignore[union-attr]
    return out


def dump_header_to_json(data: bytes) -> dict[str, object]:
    """Protobuf JSON of a whole dump file's content (8-byte length + header + tensor bytes),
    the input msaccucmp's ``BigDumpDataParser._parse_dump_to_json`` hands to CANN's parser."""
    if len(data) < _LENGTH_BYTES:
        raise pw.WireError("shorter than the 8-byte header length", 0)
    header_len = int.from_bytes(data[:_LENGTH_BYTES], "little")
    if header_len > len(data) - _LENGTH_BYTES:
        raise pw.WireError(f"header length {header_len} exceeds the data", 0)
    return header_to_json(memoryview(data)[_LENGTH_BYTES : _LENGTH_BYTES + header_len])
