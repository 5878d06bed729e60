"""Minimal protobuf wire format: a bounds-checked decoder and an encoder, pure Python.

Enough for the proto3 messages CANN writes (dump headers, ge_ir graphs): varint, 64-bit,
length-delimited (strings, bytes, sub-messages, packed repeated scalars) and 32-bit fields.
The decoder never reads outside ``[start, end)`` of the buffer it is given and reports every
problem as one :class:`WireError` carrying the absolute byte offset where it was found.
Groups (wire types 3 and 4) are obsolete and rejected.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

VARINT = 0
I64 = 1
LEN = 2
SGROUP = 3
EGROUP = 4
I32 = 5

_WIRE_NAMES = {
    VARINT: "varint",
    I64: "64-bit",
    LEN: "length-delimited",
    SGROUP: "start-group",
    EGROUP: "end-group",
    I32: "32-bit",
}
_MAX_VARINT_BYTES = 10
_U64 = (1 << 64) - 1

Buffer = bytes | bytearray | memoryview

try:
    from . import _wire  # scan() and unpack_varints() in C, built by pip install; optional
except ImportError:  # pragma: no cover - exercised on machines without a C compiler
    _wire = None


class WireError(ValueError):
    """Malformed protobuf bytes; ``offset`` is the absolute byte position of the problem."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(f"{message} (at byte {offset})")
        self.message = message
        self.offset = offset


@dataclass(frozen=True, slots=True)
class Field:
    """One decoded field. For LEN fields ``value`` is the payload and ``start``/``end`` its span."""

    number: int
    wire_type: int
    value: int | memoryview
    offset: int  # where the tag starts
    start: int  # where the value starts
    end: int  # one past the value


def wire_type_name(wire_type: int) -> str:
    return _WIRE_NAMES.get(wire_type, f"wire type {wire_type}")


def read_varint(buf: Buffer, pos: int, end: int) -> tuple[int, int]:
    """Decode a varint at ``pos``; returns (value as unsigned 64-bit, position after it)."""
    result = 0
    shift = 0
    start = pos
    while True:
        if pos >= end:
            raise WireError("truncated varint", start)
        if pos - start >= _MAX_VARINT_BYTES:
            raise WireError("varint longer than 10 bytes", start)
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result & _U64, pos
        shift += 7


def scan(
    buf: Buffer, start: int, end: int, max_fields: int | None = None
) -> list[tuple[int, int, int, int]]:
    """All fields of ``buf[start:end]`` as ``(number, wire_type, a, b)`` tuples, for hot paths.

    VARINT/I64/I32: ``a`` is the value, ``b`` the tag offset. LEN: ``a``/``b`` are the payload's
    start and end. Same checks and errors as :func:`iter_fields`, without per-field objects.
    ``max_fields``: a message with more fields is refused (what a header declares must not
    decide how much we build).

    The compiled ``_wire.scan`` answers when it is built; it returns None for malformed bytes,
    and this function's Python loop then raises the precise error.
    """
    if _wire is not None:
        fields = _wire.scan(buf, start, end, -1 if max_fields is None else max_fields)
        if fields is not None:
            return fields
    return _scan(buf, start, end, max_fields)


def _scan(
    buf: Buffer, start: int, end: int, max_fields: int | None
) -> list[tuple[int, int, int, int]]:
    if not 0 <= start <= end <= len(buf):
        raise WireError(f"message span {start}..{end} outside a buffer of {len(buf)} bytes", start)
    out: list[tuple[int, int, int, int]] = []
    append = out.append
    pos = start
    budget = max_fields if max_fields is not None else end - start
    while pos < end:
        tag_at = pos
        budget -= 1
        if budget < 0:
            raise WireError(f"more than {max_fields} fields in one message", tag_at)
        key = buf[pos]
        pos += 1
        if key >= 0x80:
            key, pos = read_varint(buf, tag_at, end)
        number = key >> 3
        wire_type = key & 7
        if number == 0 or number > 0x1FFFFFFF:
            raise WireError(f"invalid field number {number}", tag_at)
        if wire_type in (LEN, VARINT):
            value_at = pos
            if pos >= end:
                what = "varint" if wire_type == VARINT else "length"
                raise WireError(f"truncated {what} of field {number}", pos)
            value = buf[pos]
            if value < 0x80:
                pos += 1
            else:
                value, pos = read_varint(buf, pos, end)
            if wire_type == VARINT:
                append((number, VARINT, value, tag_at))
                continue
            if value > end - pos:
                raise WireError(
                    f"field {number} claims {value} bytes but only {end - pos} remain", value_at
                )
            append((number, LEN, pos, pos + value))
            pos += value
        elif wire_type == I64:
            if end - pos < 8:
                raise WireError(f"truncated 64-bit value of field {number}", pos)
            append((number, I64, int.from_bytes(buf[pos : pos + 8], "little"), tag_at))
            pos += 8
        elif wire_type == I32:
            if end - pos < 4:
                raise WireError(f"truncated 32-bit value of field {number}", pos)
            append((number, I32, int.from_bytes(buf[pos : pos + 4], "little"), tag_at))
            pos += 4
        else:
            raise WireError(f"unsupported {wire_type_name(wire_type)} for field {number}", tag_at)
    return out


def unpack_varints(buf: Buffer, start: int, end: int) -> list[int]:
    """The varints packed in ``buf[start:end]`` (a packed repeated field's payload)."""
    if _wire is not None:
        values = _wire.unpack_varints(buf, start, end)
        if values is not None:
            return values
    chunk = bytes(buf[start:end])
    if not chunk or max(chunk) < 0x80:  # every value below 128: one byte each
        return list(chunk)
    values = []
    pos = start
    while pos < end:
        value, pos = read_varint(buf, pos, end)
        values.append(value)
    return values


def iter_fields(buf: Buffer, start: int = 0, end: int | None = None) -> Iterator[Field]:
    """Yield the fields of one message occupying ``buf[start:end]`` in order of appearance."""
    view = buf if isinstance(buf, memoryview) else memoryview(buf)
    limit = len(view) if end is None else end
    if not 0 <= start <= limit <= len(view):
        raise WireError(
            f"message span {start}..{limit} outside a buffer of {len(view)} bytes", start
        )
    pos = start
    while pos < limit:
        tag_at = pos
        key, pos = read_varint(view, pos, limit)
        number = key >> 3
        wire_type = key & 7
        if number == 0 or number > 0x1FFFFFFF:
            raise WireError(f"invalid field number {number}", tag_at)
        if wire_type == VARINT:
            value, after = read_varint(view, pos, limit)
            yield Field(number, wire_type, value, tag_at, pos, after)
            pos = after
        elif wire_type == I64:
            if limit - pos < 8:
                raise WireError(f"truncated 64-bit value of field {number}", pos)
            value = int.from_bytes(view[pos : pos + 8], "little")
            yield Field(number, wire_type, value, tag_at, pos, pos + 8)
            pos += 8
        elif wire_type == I32:
            if limit - pos < 4:
                raise WireError(f"truncated 32-bit value of field {number}", pos)
            value = int.from_bytes(view[pos : pos + 4], "little")
            yield Field(number, wire_type, value, tag_at, pos, pos + 4)
            pos += 4
        elif wire_type == LEN:
            length, body = read_varint(view, pos, limit)
            if length > limit - body:
                raise WireError(
                    f"field {number} claims {length} bytes but only {limit - body} remain", pos
                )
            yield Field(number, wire_type, view[body : body + length], tag_at, body, body + length)
            pos = body + length
        else:
            raise WireError(f"unsupported {wire_type_name(wire_type)} for field {number}", tag_at)


def expect(field: Field, wire_type: int, what: str) -> None:
    """Raise unless ``field`` has the wire type the schema says ``what`` must have."""
    if field.wire_type != wire_type:
        raise WireError(
            f"{what} (field {field.number}) should be {wire_type_name(wire_type)}, "
            f"found {wire_type_name(field.wire_type)}",
            field.offset,
        )


def decode_packed_varints(field: Field) -> list[int]:
    """Values of a repeated varint field, packed (LEN) or a single unpacked occurrence."""
    if field.wire_type == VARINT:
        return [int(field.value)]  # type: ignore[arg-type]
    expect(field, LEN, "packed repeated varint")
    data = field.value
    assert isinstance(data, memoryview)
    values = []
    pos = 0
    while pos < len(data):
        try:
            value, pos = read_varint(data, pos, len(data))
        except WireError as error:
            raise WireError(error.message, field.start + error.offset) from None
        values.append(value)
    return values


def decode_string(field: Field, what: str) -> str:
    """A proto ``string``; invalid UTF-8 is replaced rather than rejected (names stay readable)."""
    expect(field, LEN, what)
    return bytes(field.value).decode("utf-8", errors="replace")  # type: ignore[arg-type]


def as_int64(value: int) -> int:
    """Reinterpret an unsigned 64-bit varint as a signed int64 (two's complement)."""
    return value - (1 << 64) if value & (1 << 63) else value


def as_int32(value: int) -> int:
    """Reinterpret a varint as int32 (negative int32 values are sign-extended to 64 bits)."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & (1 << 31) else value


def as_float(value: int) -> float:
    return struct.unpack("<f", value.to_bytes(4, "little"))[0]


def as_double(value: int) -> float:
    return struct.unpack("<d", value.to_bytes(8, "little"))[0]


# --------------------------------------------------------------------------- encoder


def encode_varint(value: int) -> bytes:
    """Varint bytes of ``value``; negative numbers use 64-bit two's complement (10 bytes)."""
    if value < 0:
        value += 1 << 64
    if not 0 <= value <= _U64:
        raise ValueError(f"{value} does not fit in 64 bits")
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_tag(number: int, wire_type: int) -> bytes:
    return encode_varint((number << 3) | wire_type)


class MessageWriter:
    """Builds one message. Scalars at their proto3 default are skipped unless ``always``."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def varint(self, number: int, value: int, *, always: bool = False) -> MessageWriter:
        if value or always:
            self._parts += (encode_tag(number, VARINT), encode_varint(int(value)))
        return self

    def boolean(self, number: int, value: bool, *, always: bool = False) -> MessageWriter:
        return self.varint(number, 1 if value else 0, always=always)

    def fixed64(self, number: int, value: int, *, always: bool = False) -> MessageWriter:
        if value or always:
            self._parts += (encode_tag(number, I64), (value & _U64).to_bytes(8, "little"))
        return self

    def fixed32(self, number: int, value: int, *, always: bool = False) -> MessageWriter:
        if value or always:
            self._parts += (encode_tag(number, I32), (value & 0xFFFFFFFF).to_bytes(4, "little"))
        return self

    def double(self, number: int, value: float, *, always: bool = False) -> MessageWriter:
        if value or always:
            self._parts += (encode_tag(number, I64), struct.pack("<d", value))
        return self

    def float32(self, number: int, value: float, *, always: bool = False) -> MessageWriter:
        if value or always:
            self._parts += (encode_tag(number, I32), struct.pack("<f", value))
        return self

    def raw_bytes(self, number: int, data: bytes, *, always: bool = False) -> MessageWriter:
        if data or always:
            self._parts += (encode_tag(number, LEN), encode_varint(len(data)), bytes(data))
        return self

    def string(self, number: int, text: str, *, always: bool = False) -> MessageWriter:
        return self.raw_bytes(number, text.encode("utf-8"), always=always)

    def message(self, number: int, payload: bytes | MessageWriter) -> MessageWriter:
        """A sub-message is written whenever it is set, even when empty."""
        data = payload.getvalue() if isinstance(payload, MessageWriter) else payload
        return self.raw_bytes(number, data, always=True)

    def packed_varints(self, number: int, values: Iterable[int]) -> MessageWriter:
        body = b"".join(encode_varint(int(v)) for v in values)
        return self.raw_bytes(number, body)

    def getvalue(self) -> bytes:
        return b"".join(self._parts)
