"""Property tests for the dump reader: round trips, and any byte string either reads as a valid
DumpFile or fails with a DumpError naming the file, never another exception, never a read past
the end of the file, never a buffer larger than the file."""

import os

import numpy as np
import pytest
from fusion_switch.readers import protowire as pw
from fusion_switch.readers.dtypes import decode_dtype
from fusion_switch.readers.dump import DumpError, DumpFile, OriginalOp, read_dump
from fusion_switch.readers.dump_write import TensorSpec, encode_dump
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# data type code -> numpy dtype of the values we generate for it
WRITABLE = {
    1: "f4",
    2: "f2",
    3: "i1",
    4: "u1",
    5: "i2",
    6: "u2",
    7: "i4",
    8: "i8",
    9: "u4",
    10: "u8",
    11: "?",
    12: "f8",
    16: "c8",
    27: "f4",
    28: "i1",
}
SETTINGS = settings(
    max_examples=int(os.environ.get("DUMP_PROPERTY_EXAMPLES", "50")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("dump_properties") / "Op.op.1.1700000000000000"


@st.composite
def tensor_specs(draw):
    code = draw(st.sampled_from(sorted(WRITABLE)))
    shape = tuple(draw(st.lists(st.integers(0, 5), max_size=4)))
    count = int(np.prod(shape)) if shape else 1
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if code == 28:
        values = rng.integers(-8, 8, count).astype(np.int8)
    elif code == 11:
        values = rng.integers(0, 2, count).astype(bool)
    elif code == 27:  # values exactly representable in bfloat16
        values = (rng.integers(-256, 256, count) / 8).astype(np.float32)
    else:
        values = (rng.standard_normal(count) * 50).astype(WRITABLE[code])
    original = draw(st.none() | st.lists(st.integers(0, 2**40), max_size=5).map(tuple))
    op = draw(
        st.none()
        | st.builds(
            OriginalOp,
            st.text(max_size=8),
            st.integers(0, 2**32 - 1),
            st.integers(0, 40),
            st.integers(0, 255),
        )
    )
    return TensorSpec(
        values.reshape(shape),
        data_type=code,
        format=draw(st.integers(0, 2**16)),
        original_shape=original,
        original_op=op,
        address=draw(st.integers(0, 2**64 - 1)),
    )


@SETTINGS
@given(
    st.text(max_size=30),
    st.lists(tensor_specs(), max_size=3),
    st.lists(tensor_specs(), max_size=3),
    st.integers(0, 2**64 - 1),
)
def test_round_trip(scratch, op_name, inputs, outputs, dump_time):
    scratch.write_bytes(encode_dump(op_name, inputs, outputs, dump_time=dump_time))
    dump = read_dump(scratch)
    assert (dump.op_name, dump.dump_time) == (op_name, dump_time)
    for specs, tensors in ((inputs, dump.inputs), (outputs, dump.outputs)):
        assert len(specs) == len(tensors)
        for spec, tensor in zip(specs, tensors, strict=True):
            assert tensor.shape == spec.data.shape
            assert tensor.data_type == spec.data_type
            assert tensor.raw_format == spec.format
            assert tensor.format == spec.format & 0xFF
            assert tensor.original_shape == (spec.original_shape or ())
            assert tensor.address == spec.address
            if tensor.kind == "output":
                assert tensor.original_op == spec.original_op
            decoded = dump.array(tensor)
            expected = spec.data if spec.data.shape else spec.data.reshape(())
            np.testing.assert_array_equal(decoded, expected)


def _check_any_outcome(path, monkeypatch):
    """Reading must give a DumpFile whose tensors lie inside the file, or a DumpError."""
    with monkeypatch.context() as patch:
        return _outcome(path, patch)


def _outcome(path, patch):
    size = path.stat().st_size
    reads = []
    original = DumpFile._read_bytes

    def guarded(self, tensor, nbytes, *rest):
        assert tensor.data_offset >= 0 and tensor.data_offset + nbytes <= size
        reads.append(nbytes)
        return original(self, tensor, nbytes, *rest)

    patch.setattr(DumpFile, "_read_bytes", guarded)
    try:
        dump = read_dump(path)
    except DumpError as error:
        assert str(path) in str(error) and error.message
        return None
    for tensor in dump.tensors():
        assert 0 <= tensor.data_offset <= tensor.data_offset + tensor.size <= size
        try:
            array = dump.array(tensor)
        except DumpError as error:
            assert str(path) in str(error) and tensor.name in error.message
            with pytest.raises(DumpError) as again:  # the no-copy view fails the same way
                dump.array(tensor, copy=False)
            assert again.value.message == error.message
            continue
        assert isinstance(array, np.ndarray)
        view = dump.array(tensor, copy=False)
        assert view.dtype == array.dtype and view.shape == array.shape
        assert view.tobytes() == array.tobytes()
    assert all(n <= size for n in reads)
    return dump


@SETTINGS
@given(st.binary(max_size=300))
def test_random_bytes(scratch, monkeypatch, data):
    scratch.write_bytes(data)
    _check_any_outcome(scratch, monkeypatch)


@SETTINGS
@given(st.lists(tensor_specs(), min_size=1, max_size=3), st.data())
def test_truncated_and_corrupted_files(scratch, monkeypatch, outputs, data):
    content = bytearray(encode_dump("op", outputs[:1], outputs))
    mutation = data.draw(st.sampled_from(["truncate", "flip", "length"]))
    if mutation == "truncate":
        del content[data.draw(st.integers(0, len(content) - 1)) :]
    elif mutation == "flip":
        for _ in range(data.draw(st.integers(1, 4))):
            at = data.draw(st.integers(0, len(content) - 1))
            content[at] = data.draw(st.integers(0, 255))
    else:
        content[:8] = data.draw(st.integers(0, 2**64 - 1)).to_bytes(8, "little")
    scratch.write_bytes(bytes(content))
    _check_any_outcome(scratch, monkeypatch)


@st.composite
def forged_headers(draw):
    """Headers written field by field with sizes, shapes and enums chosen freely."""
    header = pw.MessageWriter()
    for _ in range(draw(st.integers(0, 3))):
        out = pw.MessageWriter()
        out.varint(1, draw(st.integers(0, 2**32 - 1)))  # data_type, maybe unknown
        out.varint(2, draw(st.integers(0, 2**32 - 1)))  # format, maybe unknown
        dims = draw(st.lists(st.integers(0, 2**64 - 1) | st.integers(0, 8), max_size=6))
        out.message(3, pw.MessageWriter().packed_varints(1, dims))
        out.varint(6, draw(st.integers(0, 64) | st.integers(0, 2**64 - 1)))
        header.message(draw(st.sampled_from([3, 4, 5, 7, 8])), out)
    return header.getvalue()


@SETTINGS
@given(forged_headers(), st.binary(max_size=64))
def test_forged_sizes_shapes_and_enums(scratch, monkeypatch, header, body):
    scratch.write_bytes(len(header).to_bytes(8, "little") + header + body)
    dump = _check_any_outcome(scratch, monkeypatch)
    if dump is not None:
        total = sum(t.size for t in dump.tensors())
        assert 8 + dump.header_len + total <= scratch.stat().st_size


def test_absurd_shape_is_refused_without_allocating(scratch, monkeypatch):
    out = pw.MessageWriter().varint(1, 1)
    out.message(3, pw.MessageWriter().packed_varints(1, [2**63, 2**63, 7]))
    out.varint(6, 16)
    header = pw.MessageWriter().message(3, out).getvalue()
    scratch.write_bytes(len(header).to_bytes(8, "little") + header + b"\x00" * 16)
    dump = read_dump(scratch)
    monkeypatch.setattr(np, "empty", lambda *a, **k: pytest.fail("allocated a buffer"))
    with pytest.raises(DumpError, match=r"needs .* bytes but the header gives it only 16"):
        dump.array(dump.outputs[0])


def test_every_writable_code_decodes_to_its_values():
    for code in WRITABLE:
        assert decode_dtype(code).supported
