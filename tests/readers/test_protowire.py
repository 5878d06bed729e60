"""Protobuf wire format: decoding known bytes, encoding, round trips, and malformed input."""

import pytest
from fusion_switch.readers import protowire as pw
from hypothesis import given
from hypothesis import strategies as st


@pytest.mark.parametrize(
    ("data", "value", "end"),
    [
        (b"\x00", 0, 1),
        (b"\x01", 1, 1),
        (b"\x7f", 127, 1),
        (b"\x80\x01", 128, 2),
        (b"\xac\x02", 300, 2),
        (b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 2**64 - 1, 10),
    ],
)
def test_read_varint_known_values(data, value, end):
    assert pw.read_varint(data, 0, len(data)) == (value, end)


@pytest.mark.parametrize(
    ("data", "message", "offset"),
    [
        (b"\x80", "truncated varint", 0),
        (b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", "longer than 10 bytes", 0),
    ],
)
def test_read_varint_errors(data, message, offset):
    with pytest.raises(pw.WireError) as info:
        pw.read_varint(data, 0, len(data))
    assert message in str(info.value)
    assert info.value.offset == offset


def test_iter_fields_decodes_every_wire_type():
    data = (
        pw.MessageWriter()
        .varint(1, 150)
        .fixed64(2, 2**40 + 3)
        .string(3, "héllo")
        .fixed32(4, 7)
        .packed_varints(5, [1, 300, 2**63])
        .getvalue()
    )
    fields = list(pw.iter_fields(data))
    assert [(f.number, f.wire_type) for f in fields] == [
        (1, pw.VARINT),
        (2, pw.I64),
        (3, pw.LEN),
        (4, pw.I32),
        (5, pw.LEN),
    ]
    assert fields[0].value == 150
    assert fields[1].value == 2**40 + 3
    assert pw.decode_string(fields[2], "s") == "héllo"
    assert fields[3].value == 7
    assert pw.decode_packed_varints(fields[4]) == [1, 300, 2**63]
    assert (fields[2].offset, fields[2].start, fields[2].end) == (12, 14, 20)


def test_known_protobuf_bytes():
    # field 1 = 150 is the protobuf documentation's own example: 08 96 01
    assert pw.MessageWriter().varint(1, 150).getvalue() == b"\x08\x96\x01"
    assert pw.MessageWriter().string(2, "testing").getvalue() == b"\x12\x07testing"


@pytest.mark.parametrize(
    ("data", "message", "offset"),
    [
        (b"\x0a\x05abc", "claims 5 bytes but only 3 remain", 1),
        (b"\x09\x01\x02", "truncated 64-bit value", 1),
        (b"\x0d\x01", "truncated 32-bit value", 1),
        (b"\x0b", "unsupported start-group", 0),
        (b"\x0e", "unsupported wire type 6", 0),
        (b"\x00\x01", "invalid field number 0", 0),
        (b"\x08", "truncated varint", 1),
    ],
)
def test_iter_fields_errors_name_the_offset(data, message, offset):
    with pytest.raises(pw.WireError) as info:
        list(pw.iter_fields(data))
    assert message in info.value.message
    assert info.value.offset == offset


def test_iter_fields_respects_the_span():
    data = b"\x08\x01" + b"\x08\x02" + b"\xff\xff"
    values = [f.value for f in pw.iter_fields(data, 2, 4)]
    assert values == [2]
    with pytest.raises(pw.WireError):
        list(pw.iter_fields(data, 4, 99))


def test_packed_error_offset_is_absolute():
    data = b"\x08\x01" + b"\x2a\x02\x80\x80"  # field 5, 2 bytes, an unterminated varint
    field = list(pw.iter_fields(data))[1]
    with pytest.raises(pw.WireError) as info:
        pw.decode_packed_varints(field)
    assert info.value.offset == 4


def test_expect_reports_wrong_wire_type():
    field = next(pw.iter_fields(b"\x08\x01"))
    with pytest.raises(pw.WireError, match="should be length-delimited, found varint"):
        pw.expect(field, pw.LEN, "name")


@pytest.mark.parametrize(
    ("value", "int64", "int32"),
    [(5, 5, 5), (2**64 - 1, -1, -1), (2**64 - 2**31, -(2**31), -(2**31))],
)
def test_signed_reinterpretation(value, int64, int32):
    assert pw.as_int64(value) == int64
    assert pw.as_int32(value) == int32


def test_negative_varint_is_ten_bytes():
    assert len(pw.encode_varint(-1)) == 10
    assert pw.as_int64(pw.read_varint(pw.encode_varint(-5), 0, 10)[0]) == -5


def test_defaults_are_skipped_unless_asked():
    writer = pw.MessageWriter().varint(1, 0).string(2, "").boolean(3, False)
    assert writer.getvalue() == b""
    assert pw.MessageWriter().varint(1, 0, always=True).getvalue() == b"\x08\x00"
    assert pw.MessageWriter().message(4, b"").getvalue() == b"\x22\x00"


def test_float_helpers_round_trip():
    data = pw.MessageWriter().float32(1, 1.5).double(2, -2.25).getvalue()
    f32, f64 = list(pw.iter_fields(data))
    assert pw.as_float(f32.value) == 1.5
    assert pw.as_double(f64.value) == -2.25


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_varint_round_trip(value):
    data = pw.encode_varint(value)
    assert pw.read_varint(data, 0, len(data)) == (value, len(data))


def message_bytes(items) -> bytes:
    writer = pw.MessageWriter()
    for kind, number, value in items:
        if kind == "v":
            writer.varint(number, value, always=True)
        elif kind == "b":
            writer.raw_bytes(number, value, always=True)
        elif kind == "q":
            writer.fixed64(number, value, always=True)
        else:
            writer.fixed32(number, value, always=True)
    return writer.getvalue()


FIELD = st.one_of(
    st.tuples(st.just("v"), st.integers(1, 2**29 - 1), st.integers(0, 2**64 - 1)),
    st.tuples(st.just("b"), st.integers(1, 2**29 - 1), st.binary(max_size=40)),
    st.tuples(st.just("q"), st.integers(1, 2**29 - 1), st.integers(0, 2**64 - 1)),
    st.tuples(st.just("d"), st.integers(1, 2**29 - 1), st.integers(0, 2**32 - 1)),
)


@given(st.lists(FIELD, max_size=12))
def test_message_round_trip(items):
    decoded = [
        (f.number, bytes(f.value) if f.wire_type == pw.LEN else f.value)
        for f in pw.iter_fields(message_bytes(items))
    ]
    assert decoded == [(number, value) for _, number, value in items]


@given(st.binary(max_size=200))
def test_random_bytes_never_escape_wire_error(data):
    try:
        for field in pw.iter_fields(data):
            assert 0 <= field.start <= field.end <= len(data)
    except pw.WireError as error:
        assert 0 <= error.offset <= len(data)


# ----------------------------------------------------------------------------- compiled scanner
# readers/_wire.c answers scan() and unpack_varints() when it is built; for malformed bytes it
# returns None and the Python loop raises. Both must agree on every input.


def test_the_compiled_scanner_is_built():
    assert pw._wire is not None  # CI builds it; a failed build would only be slower


def python_scan(data, start, end, max_fields):
    try:
        return pw._scan(data, start, end, max_fields)
    except pw.WireError as error:
        return ("error", error.message, error.offset)


def compiled_scan(data, start, end, max_fields):
    fields = pw._wire.scan(data, start, end, -1 if max_fields is None else max_fields)
    return fields if fields is not None else python_scan(data, start, end, max_fields)


@given(st.lists(FIELD, max_size=12), st.data())
def test_compiled_scan_equals_python_scan_on_messages_and_their_mutations(items, data):
    message = bytearray(message_bytes(items))
    if message and data.draw(st.booleans()):  # corrupt a byte, or cut the message short
        at = data.draw(st.integers(0, len(message) - 1))
        if data.draw(st.booleans()):
            message[at] = data.draw(st.integers(0, 255))
        else:
            del message[at:]
    start = data.draw(st.integers(0, len(message)))
    end = data.draw(st.integers(start, len(message)))
    max_fields = data.draw(st.none() | st.integers(0, 14))
    for buffer in (bytes(message), message, memoryview(bytes(message))):
        assert compiled_scan(buffer, start, end, max_fields) == python_scan(
            buffer, start, end, max_fields
        )


@given(st.binary(max_size=120), st.integers(-3, 130), st.integers(-3, 130))
def test_compiled_scan_equals_python_scan_on_any_bytes_and_span(data, start, end):
    assert compiled_scan(data, start, end, None) == python_scan(data, start, end, None)


@given(st.lists(st.integers(0, 2**64 - 1), max_size=20), st.data())
def test_compiled_unpack_varints_equals_python(values, data):
    packed = bytearray(b"".join(pw.encode_varint(value) for value in values))
    cut = bool(packed) and data.draw(st.booleans())
    if cut:
        del packed[data.draw(st.integers(0, len(packed) - 1)) :]
    compiled = pw._wire.unpack_varints(bytes(packed), 0, len(packed))
    saved, pw._wire = pw._wire, None
    try:
        expected = pw.unpack_varints(bytes(packed), 0, len(packed))
    except pw.WireError:
        expected = None
    finally:
        pw._wire = saved
    assert compiled == expected
    if not cut:
        assert compiled == values
