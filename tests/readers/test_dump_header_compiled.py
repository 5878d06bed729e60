"""readers/_header.c decodes a whole dump header in C. It must build exactly what the Python
decoder (``dump._build_dump_file_python``) builds for every header that decoder accepts, and turn
down (None) every header it rejects, so that the Python path raises its usual error. Checked on
the real sample dumps, on dumps our writer makes, and on generated headers with every field the
proto has, wrong wire types, corruptions and truncations."""

from __future__ import annotations

from pathlib import Path

import pytest
from fusion_switch.readers import dump as dump_module
from fusion_switch.readers import protowire as pw
from fusion_switch.readers.dump import DumpError, DumpTensor, OriginalOp, read_dump
from fusion_switch.readers.dump_write import TensorSpec, encode_dump
from hypothesis import given, settings
from hypothesis import strategies as st
from real_samples import REAL

compiled = dump_module._header


def test_the_compiled_header_decoder_is_built():
    assert compiled is not None  # CI builds it; a failed build would only be slower


def _described(dump) -> tuple:
    """Everything a DumpFile holds, with each tensor's every field (``recorded`` included, which
    DumpTensor's ``==`` leaves out) and the exact types (repr tells int from bool)."""
    return (
        dump.version,
        dump.dump_time,
        dump.op_name,
        dump.dfx_message,
        repr(dump.attrs),
        dump.file_size,
        dump.header_len,
        [[_fields(t) for t in tensors] for tensors in (dump.inputs, dump.outputs,
                                                       dump.buffers, dump.spaces)],
    )  # fmt: skip


def _fields(tensor: DumpTensor) -> str:
    fields = dict(vars(tensor), recorded=sorted(tensor.recorded))  # a set's order varies
    assert isinstance(tensor.recorded, frozenset)
    return repr(fields)


def python_result(header: bytes, file_size: int):
    try:
        dump = dump_module._build_dump_file_python(Path("x"), header, len(header), file_size)
    except DumpError as error:
        return ("error", str(error))
    return _described(dump)


def compiled_result(header: bytes, file_size: int):
    decoded = compiled.decode(header, file_size, DumpTensor, OriginalOp)
    if decoded is None:
        return None
    version, dump_time, op_name, dfx, attrs, inputs, outputs, buffers, spaces = decoded
    dump = dump_module.DumpFile(
        Path("x"), op_name, version, dump_time, inputs, outputs, buffers, spaces, attrs, dfx,
        file_size, len(header),
    )  # fmt: skip
    return _described(dump)


def assert_same(header: bytes, file_size: int) -> None:
    expected = python_result(header, file_size)
    got = compiled_result(header, file_size)
    if got is None:
        assert expected[0] == "error", "the C decoder turned down a header Python accepts"
    else:
        assert got == expected


def _split(content: bytes) -> tuple[bytes, int]:
    header_len = int.from_bytes(content[:8], "little")
    return content[8 : 8 + header_len], len(content)


# ----------------------------------------------------------------------------- real files


def _real_dumps() -> list[Path]:
    found = []
    for path in sorted((REAL / "dumps").rglob("*")):
        if path.is_file() and path.suffix not in (".npy", ".json", ".md", ".csv", ".txt"):
            content = path.read_bytes()
            if len(content) > 8 and int.from_bytes(content[:8], "little") <= len(content) - 8:
                found.append(path)
    return found


REAL_DUMPS = _real_dumps()


def test_there_are_real_dumps_to_check():
    assert len(REAL_DUMPS) >= 5


@pytest.mark.parametrize("path", REAL_DUMPS, ids=lambda p: p.name)
def test_real_dump_headers_decode_the_same(path):
    header, file_size = _split(path.read_bytes())
    expected = python_result(header, file_size)
    assert expected[0] != "error"
    assert compiled_result(header, file_size) == expected


def test_read_dump_gives_the_same_file_with_and_without_the_compiled_decoder(monkeypatch):
    path = REAL_DUMPS[0]
    fast = read_dump(path)
    monkeypatch.setattr(dump_module, "_header", None)
    slow = read_dump(path)
    assert _described(fast) == _described(slow)
    assert fast.outputs == slow.outputs and fast.inputs == slow.inputs


def test_a_tensor_past_the_end_still_raises_the_python_message(tmp_path):
    content = encode_dump("Op", outputs=[TensorSpec(b"\0" * 16)])
    path = tmp_path / "Op.op.1.1"
    path.write_bytes(content[:-4])
    with pytest.raises(DumpError, match=r"output:0 claims 16 bytes at offset \d+, but the file"):
        read_dump(path)


def test_a_malformed_header_still_raises_the_python_message(tmp_path):
    content = bytearray(encode_dump("Op", outputs=[TensorSpec(b"\0" * 4)]))
    content[8] = 0x1D  # field 3 as a 32-bit value: wrong wire type for an output
    path = tmp_path / "Op.op.1.1"
    path.write_bytes(bytes(content))
    expected = r"should be length-delimited.*header byte 0, file offset 8"
    with pytest.raises(DumpError, match=expected):
        read_dump(path)


# ----------------------------------------------------------------------------- generated

U64 = st.integers(0, 2**64 - 1)
SMALL = st.integers(0, 300) | U64
WIRE_TYPES = st.sampled_from([pw.VARINT, pw.VARINT, pw.LEN, pw.I64, pw.I32])


def _field(number: int, wire_type: int, value) -> bytes:
    tag = pw.encode_tag(number, wire_type)
    if wire_type == pw.VARINT:
        return tag + pw.encode_varint(value if isinstance(value, int) else len(value))
    if wire_type == pw.I64:
        return tag + ((value if isinstance(value, int) else 0) & (2**64 - 1)).to_bytes(8, "little")
    if wire_type == pw.I32:
        return tag + ((value if isinstance(value, int) else 0) & (2**32 - 1)).to_bytes(4, "little")
    payload = value if isinstance(value, bytes) else pw.encode_varint(value)
    return tag + pw.encode_varint(len(payload)) + payload


@st.composite
def shapes(draw) -> bytes:
    parts = []
    for _ in range(draw(st.integers(0, 3))):
        dims = draw(st.lists(SMALL, max_size=4))
        if draw(st.booleans()):  # packed
            parts.append(_field(1, pw.LEN, b"".join(pw.encode_varint(d) for d in dims)))
        else:
            parts += [_field(1, draw(WIRE_TYPES), d) for d in dims]
        if draw(st.integers(0, 5)) == 0:
            parts.append(_field(draw(st.integers(2, 4)), draw(WIRE_TYPES), draw(SMALL)))
    return b"".join(parts)


@st.composite
def small_messages(draw) -> bytes:
    """original_op, dim_range, attr or any sub-message: fields 1..5 with any wire type."""
    parts = []
    for _ in range(draw(st.integers(0, 5))):
        number = draw(st.integers(1, 5))
        wire_type = draw(WIRE_TYPES)
        text = draw(st.binary(max_size=6) | st.text(max_size=4).map(str.encode))
        parts.append(_field(number, wire_type, text if wire_type == pw.LEN else draw(SMALL)))
    return b"".join(parts)


@st.composite
def entries(draw) -> bytes:
    parts = []
    for _ in range(draw(st.integers(0, 10))):
        number = draw(st.integers(1, 13))
        wire_type = draw(WIRE_TYPES)
        if wire_type == pw.LEN:
            value = draw(shapes() | small_messages() | st.binary(max_size=8))
        else:
            value = draw(st.integers(0, 64) | U64)
        parts.append(_field(number, wire_type, value))
    return b"".join(parts)


@st.composite
def headers(draw) -> bytes:
    parts = []
    for _ in range(draw(st.integers(0, 8))):
        number = draw(st.sampled_from([1, 2, 3, 3, 4, 4, 5, 6, 7, 7, 8, 9, 10]))
        wire_type = pw.LEN if draw(st.integers(0, 6)) else draw(WIRE_TYPES)
        if number in (1, 6, 9):
            value = draw(st.text(max_size=5).map(str.encode) | st.binary(max_size=5))
        elif number == 2:
            value = draw(U64)
            wire_type = pw.VARINT if draw(st.integers(0, 6)) else wire_type
        else:
            value = draw(entries() | small_messages())
        parts.append(_field(number, wire_type, value))
    header = bytearray(b"".join(parts))
    if header and draw(st.integers(0, 3)) == 0:  # corrupt a byte, or cut the header short
        at = draw(st.integers(0, len(header) - 1))
        if draw(st.booleans()):
            header[at] = draw(st.integers(0, 255))
        else:
            del header[at:]
    return bytes(header)


@settings(max_examples=600, deadline=None)
@given(headers(), st.integers(0, 400))
def test_generated_headers_decode_the_same(header, extra):
    assert_same(header, 8 + len(header) + extra)


@given(st.binary(max_size=80), st.integers(0, 200))
def test_any_bytes_decode_the_same(header, extra):
    assert_same(header, 8 + len(header) + extra)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.binary(max_size=24), max_size=3),
    st.lists(st.binary(max_size=24), min_size=1, max_size=3),
    st.integers(0, 2**32 - 1),
    st.integers(0, 2**31 - 1),
    st.lists(st.integers(0, 9), max_size=3),
    st.booleans(),
    st.data(),
)
def test_written_dumps_and_their_truncations_decode_the_same(
    inputs, outputs, fmt, sub_format, original_shape, legacy, data
):
    def spec(blob: bytes) -> TensorSpec:
        return TensorSpec(
            blob,
            format=fmt,
            sub_format=sub_format,
            original_shape=original_shape or None,
            original_op=OriginalOp("orig", 2**32 + 3, -1, fmt),
            address=2**63,
        )

    content = encode_dump(
        "Op/name",
        [spec(b) for b in inputs],
        [spec(b) for b in outputs],
        buffers=[TensorSpec(b"ab", type_code=-2)],
        spaces=[TensorSpec(b"c", type_code=1)],
        attrs=[("slice", '{"a": 1}')],
        legacy_space_field=legacy,
        dump_time=2**60,
    )
    header, file_size = _split(content)
    assert python_result(header, file_size)[0] != "error"
    assert_same(header, file_size)
    cut = data.draw(st.integers(8 + len(header), file_size))
    assert_same(header, cut)
