"""Binary dump files: the real layout, every header variant, tensor decoding, clear errors."""

import importlib
import json
import os
import sys
import types

import numpy as np
import pytest
from fusion_switch.readers import protowire as pw
from fusion_switch.readers.dump import (
    DumpError,
    OriginalOp,
    UnsupportedDtypeError,
    read_dump,
    read_npy_dump,
)
from fusion_switch.readers.dump_json import dump_header_to_json, header_to_json
from fusion_switch.readers.dump_write import TensorSpec, encode_dump, write_dump


def _file(tmp_path, header: bytes, body: bytes = b"", name="Conv2D.conv.1.1700000000000001"):
    path = tmp_path / name
    path.write_bytes(len(header).to_bytes(8, "little") + header + body)
    return path


def _output(**fields) -> pw.MessageWriter:
    """An OpOutput message written field by field (newest proto numbering)."""
    numbers = {"data_type": 1, "format": 2, "size": 6, "sub_format": 8, "address": 9}
    msg = pw.MessageWriter()
    for name, value in fields.items():
        if name == "shape":
            msg.message(3, pw.MessageWriter().packed_varints(1, value))
        elif name == "original_shape":
            msg.message(7, pw.MessageWriter().packed_varints(1, value))
        else:
            msg.varint(numbers[name], value)
    return msg


def test_layout_is_length_header_then_inputs_outputs_buffers_spaces(tmp_path):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.array([1, 2, 3], dtype=np.int64)
    path = write_dump(
        tmp_path / "d",
        "op",
        [TensorSpec(x)],
        [TensorSpec(y)],
        buffers=[TensorSpec(b"\x01\x02")],
        spaces=[TensorSpec(b"\x03")],
    )
    data = path.read_bytes()
    header_len = int.from_bytes(data[:8], "little")
    assert data[8 + header_len :] == x.tobytes() + y.tobytes() + b"\x01\x02" + b"\x03"
    dump = read_dump(path)
    starts = [t.data_offset for t in dump.tensors()]
    assert starts == [8 + header_len + n for n in (0, 24, 48, 50)]
    assert [t.name for t in dump.tensors()] == ["input:0", "output:0", "buffer:0", "space:0"]
    assert dump.raw_bytes(dump.buffers[0]) == b"\x01\x02"


@pytest.mark.parametrize(
    ("values", "data_type"),
    [
        (np.linspace(-3, 3, 24, dtype=np.float32).reshape(2, 3, 4), None),
        (np.linspace(-3, 3, 10, dtype=np.float16), None),
        (np.arange(-5, 5, dtype=np.int8), None),
        (np.arange(7, dtype=np.uint64), None),
        (np.array([True, False, True]), None),
        (np.arange(4, dtype=np.float64).reshape(2, 2), None),
        (np.array([1 + 2j, -3j], dtype=np.complex64), None),
        (np.array([1.0, -2.5, 0.15625], dtype=np.float32), 27),
        (np.array([-8, 7, 3], dtype=np.int8), 28),
    ],
)
def test_write_then_read_round_trip(tmp_path, values, data_type):
    spec = TensorSpec(values, data_type=data_type, format=0, original_shape=values.shape)
    path = write_dump(tmp_path / "d", "op/a.b", outputs=[spec], dump_time=1_700_000_000_000_123)
    dump = read_dump(path)
    assert dump.op_name == "op/a.b"
    assert dump.dump_time == 1_700_000_000_000_123
    assert dump.version == "2.0"
    (tensor,) = dump.outputs
    assert tensor.shape == values.shape == tensor.original_shape
    assert tensor.format == 0 and tensor.format_name == "NCHW"
    array = dump.array(tensor)
    assert array.shape == values.shape
    np.testing.assert_array_equal(array, values)


def test_header_fields_survive(tmp_path):
    spec = TensorSpec(
        np.zeros((1, 1, 2, 2, 16), np.float16),
        format=3,
        original_shape=(1, 3, 2, 2),
        original_op=OriginalOp("conv1", 2, 1, 0),
        sub_format=0,
        address=2**40 + 5,
    )
    path = write_dump(tmp_path / "d", "conv1_fused", [spec], [spec], attrs=[("k", '{"a": 1}')])
    dump = read_dump(path)
    out = dump.outputs[0]
    assert out.format_name == "NC1HWC0"
    assert out.original_shape == (1, 3, 2, 2) and out.host_shape == (1, 3, 2, 2)
    assert out.original_op == OriginalOp("conv1", 2, 1, 0)
    assert out.address == 2**40 + 5
    assert dump.inputs[0].original_op is None  # OpInput has no original_op
    assert dump.attrs == [("k", '{"a": 1}')]
    assert dump.attr_json() == {"a": 1}


def test_field_seven_old_workspace_and_new_attr(tmp_path):
    old = write_dump(
        tmp_path / "old", "op", spaces=[TensorSpec(b"abcd", type_code=0)], legacy_space_field=True
    )
    new = write_dump(tmp_path / "new", "op", spaces=[TensorSpec(b"abcd")], attrs=[("n", "v")])
    old_dump, new_dump = read_dump(old), read_dump(new)
    assert old_dump.attrs == [] and [s.size for s in old_dump.spaces] == [4]
    assert new_dump.attrs == [("n", "v")] and [s.size for s in new_dump.spaces] == [4]
    assert old_dump.raw_bytes(old_dump.spaces[0]) == b"abcd"


@pytest.mark.parametrize(
    ("raw_format", "shape", "format_code", "name", "sub_format"),
    [
        (3, (1, 1, 1, 1, 16), 3, "NC1HWC0", 0),
        (4 | (2 << 8), (4, 1, 16, 16), 4, "FRACTAL_Z", 2),  # sub-format in the high bits
        (30, (1, 2, 3, 4, 5), 30, "NCDHW", 0),
        (30, (2, 3), 30, "RESERVED", 0),  # the oldest protos' FORMAT_RESERVED
        (200, (2,), 200, "FORMAT_UNKNOWN_200", 0),
    ],
)
def test_format_values(tmp_path, raw_format, shape, format_code, name, sub_format):
    header = pw.MessageWriter().message(
        3, _output(data_type=4, format=raw_format, shape=shape, size=0)
    )
    dump = read_dump(_file(tmp_path, header.getvalue()))
    tensor = dump.outputs[0]
    assert tensor.raw_format == raw_format
    assert (tensor.format, tensor.format_name, tensor.sub_format) == (format_code, name, sub_format)


def test_unknown_data_type_is_reported_not_raised_while_reading_header(tmp_path):
    header = pw.MessageWriter().message(3, _output(data_type=77, shape=[2], size=2))
    dump = read_dump(_file(tmp_path, header.getvalue(), b"\x00\x00"))
    tensor = dump.outputs[0]
    assert tensor.data_type_name == "DT_UNKNOWN_77"
    assert not tensor.dtype.supported
    with pytest.raises(UnsupportedDtypeError, match=r"output:0: unknown data type code 77"):
        dump.array(tensor)


def test_unknown_fields_are_skipped(tmp_path):
    out = _output(data_type=1, shape=[1], size=4).string(15, "future").fixed64(16, 1)
    header = pw.MessageWriter().message(3, out).varint(20, 9).string(6, "x")
    dump = read_dump(_file(tmp_path, header.getvalue(), b"\x00\x00\x80\x3f"))
    assert dump.op_name == "x"
    assert dump.array(dump.outputs[0]).tolist() == [1.0]


@pytest.mark.parametrize(
    ("shape", "size", "data_type", "expected_shape"),
    [
        ((), 12, 1, ()),  # empty shape: a scalar, the first element (as msaccucmp reads it)
        ((), 4, 1, ()),
        ((), 0, 1, (0,)),
        ((), 1, 1, (0,)),
        ((2, 0, 3), 0, 1, (2, 0, 3)),
        ((3,), 5, 0, (5,)),  # DT_UNDEFINED: raw bytes as int8 of `size`
        ((2,), 12, 1, (2,)),  # trailing padding is ignored
    ],
)
def test_element_shape_rules(tmp_path, shape, size, data_type, expected_shape):
    header = pw.MessageWriter().message(3, _output(data_type=data_type, shape=shape, size=size))
    dump = read_dump(_file(tmp_path, header.getvalue(), bytes(range(size))))
    array = dump.array(dump.outputs[0])
    assert array.shape == expected_shape


def test_inline_data_of_old_protobuf_dumps(tmp_path):
    values = np.array([1.5, -2.0], np.float32)
    out = _output(data_type=1, shape=[2]).raw_bytes(5, values.tobytes())
    dump = read_dump(_file(tmp_path, pw.MessageWriter().message(3, out).getvalue()))
    np.testing.assert_array_equal(dump.array(dump.outputs[0]), values)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "file is 0 bytes"),
        (b"\x01\x00\x00\x00\x00\x00\x00\x00", "file is 8 bytes"),
        ((100).to_bytes(8, "little") + b"\x00" * 10, "header length 100 (first 8 bytes) exceeds"),
        ((2**63).to_bytes(8, "little") + b"\x00", "exceeds the 1 bytes that follow"),
        ((3).to_bytes(8, "little") + b"\x1a\x05\x08", "not a valid DumpData message"),
        ((2).to_bytes(8, "little") + b"\x18\x01", "output[0] (field 3) should be length-delimited"),
        ((2).to_bytes(8, "little") + b"\x32\x05", "claims 5 bytes"),
    ],
)
def test_bad_files_raise_dump_error_naming_file_and_problem(tmp_path, content, message):
    path = tmp_path / "Add.add.1.1700000000000000"
    path.write_bytes(content)
    with pytest.raises(DumpError) as info:
        read_dump(path)
    assert message in str(info.value)
    assert str(path) in str(info.value)


def test_header_error_gives_file_offset(tmp_path):
    header = pw.MessageWriter().string(6, "op").getvalue() + b"\x1a\x09\x08"
    with pytest.raises(DumpError, match=r"header byte 5, file offset 13"):
        read_dump(_file(tmp_path, header))


def test_tensor_size_beyond_file(tmp_path):
    header = pw.MessageWriter()
    header.message(4, pw.MessageWriter().varint(1, 1).varint(5, 8))  # input: 8 bytes
    header.message(3, _output(data_type=1, shape=[100], size=400))
    path = _file(tmp_path, header.getvalue(), b"\x00" * 20)
    with pytest.raises(
        DumpError, match=r"output:0 claims 400 bytes at offset \d+, but the file has only 12"
    ):
        read_dump(path)


def test_shape_larger_than_size_is_refused_before_reading(tmp_path):
    header = pw.MessageWriter().message(3, _output(data_type=1, shape=[2**40, 2**40], size=8))
    dump = read_dump(_file(tmp_path, header.getvalue(), b"\x00" * 8))
    with pytest.raises(
        DumpError, match=r"needs 4835703278458516698824704 bytes but the header gives it only 8"
    ):
        dump.array(dump.outputs[0])


def test_file_truncated_after_header_was_read(tmp_path):
    from fusion_switch.readers.dump import SMALL_FILE_BYTES

    count = SMALL_FILE_BYTES // 4 + 8  # too big to be read whole with the header
    path = write_dump(tmp_path / "d", "op", outputs=[TensorSpec(np.ones(count, np.float32))])
    dump = read_dump(path)
    os.truncate(path, path.stat().st_size - 4)
    with pytest.raises(DumpError, match=f"ended after {4 * count - 4} of {4 * count} bytes"):
        dump.array(dump.outputs[0])


def test_a_small_file_is_read_once_with_its_header(tmp_path, monkeypatch):
    """Small dumps are read whole: their tensors come from that one read (one open, values as
    they were when the header was read, even if the file is cut or rewritten later)."""
    values = np.arange(8, dtype=np.float32)
    path = write_dump(tmp_path / "d", "op", [TensorSpec(values + 1)], [TensorSpec(values)])
    opens = []
    real_open, real_os_open = open, os.open
    monkeypatch.setattr("builtins.open", lambda *a, **k: opens.append(a) or real_open(*a, **k))
    monkeypatch.setattr(os, "open", lambda *a, **k: opens.append(a) or real_os_open(*a, **k))
    dump = read_dump(path)
    os.truncate(path, 8)
    np.testing.assert_array_equal(dump.array(dump.inputs[0]), values + 1)
    out = dump.array(dump.outputs[0])
    np.testing.assert_array_equal(out, values)
    out[0] = 42  # a private copy, writable
    np.testing.assert_array_equal(dump.array(dump.outputs[0]), values)
    assert len(opens) == 1


def test_an_array_without_copy_is_the_same_values_read_only(tmp_path):
    """``copy=False`` (the comparison's hot path) gives the same values and dtype as the default
    copy, as a read-only view of the bytes read with the header; a large file, not held in
    memory, still gives its own array."""
    values = np.arange(12, dtype=np.float16).reshape(3, 4)
    small = read_dump(write_dump(tmp_path / "s", "op", [], [TensorSpec(values)]))
    view = small.array(small.outputs[0], copy=False)
    copied = small.array(small.outputs[0])
    np.testing.assert_array_equal(view, copied)
    assert view.dtype == copied.dtype and view.shape == copied.shape == (3, 4)
    assert not view.flags.writeable and copied.flags.writeable
    from fusion_switch.readers.dump import SMALL_FILE_BYTES

    big_values = np.arange(SMALL_FILE_BYTES // 4 + 10, dtype=np.float32)
    big = read_dump(write_dump(tmp_path / "b", "op", [], [TensorSpec(big_values)]))
    np.testing.assert_array_equal(big.array(big.outputs[0], copy=False), big_values)


def test_short_reads_are_completed(tmp_path, monkeypatch):
    """A network file system may return fewer bytes than asked: the reader asks again."""
    values = np.arange(3000, dtype=np.float32)
    path = write_dump(tmp_path / "d", "op", [TensorSpec(values)], [TensorSpec(values * 2)])
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, count: real_read(fd, min(count, 1000)))
    dump = read_dump(path)
    np.testing.assert_array_equal(dump.array(dump.outputs[0]), values * 2)


def test_forged_size_smaller_than_the_data(tmp_path):
    spec = TensorSpec(np.ones(4, np.float32), size=8)
    path = write_dump(tmp_path / "d", "op", outputs=[spec])
    with pytest.raises(DumpError, match=r"add up to 8 bytes.* 8 byte\(s\) after its last"):
        read_dump(path)  # the 16 bytes written: the size is wrong
    path.write_bytes(path.read_bytes()[:-8])  # the 8 bytes the header says: the shape is
    dump = read_dump(path)
    with pytest.raises(DumpError, match=r"shape \[4\] of DT_FLOAT needs 16 bytes"):
        dump.array(dump.outputs[0])


def test_opened_reads_several_tensors_through_one_handle(tmp_path, monkeypatch):
    from fusion_switch.readers.dump import SMALL_FILE_BYTES

    # too big to be read whole with the header (a small file needs no handle at all)
    values = [np.full(SMALL_FILE_BYTES // 16 + 1, i, np.float32) for i in range(4)]
    specs = [TensorSpec(v) for v in values]
    dump = read_dump(write_dump(tmp_path / "d", "op", specs[:2], specs[2:]))
    opens = []
    real_open = open
    monkeypatch.setattr("builtins.open", lambda *a, **k: opens.append(a) or real_open(*a, **k))
    with dump.opened() as same:
        assert same is dump
        arrays = [dump.array(t) for t in dump.tensors()]
        with dump.opened():  # nested use keeps the outer handle
            dump.array(dump.inputs[0])
    assert len(opens) == 1 and dump._handle is None
    for got, want in zip(arrays, values, strict=True):
        np.testing.assert_array_equal(got, want)
    dump.array(dump.inputs[0])  # closed again: opens per call
    assert len(opens) == 2


def test_opened_on_a_vanished_file(tmp_path):
    from fusion_switch.readers.dump import SMALL_FILE_BYTES

    big = np.ones(SMALL_FILE_BYTES // 4 + 1, np.float32)  # not read whole with the header
    path = write_dump(tmp_path / "d", "op", outputs=[TensorSpec(big)])
    dump = read_dump(path)
    path.unlink()
    with pytest.raises(DumpError, match="cannot read"), dump.opened():
        pass


def test_missing_file_is_a_dump_error(tmp_path):
    with pytest.raises(DumpError, match="cannot read"):
        read_dump(tmp_path / "nope")


# ----------------------------------------------------------------------------- .npy


def test_npy_dump_reads_as_one_output(tmp_path):
    values = np.arange(12, dtype=np.float16).reshape(3, 4)
    path = tmp_path / "conv1.0.1700000000000000.npy"
    np.save(path, values)
    dump = read_dump(path)
    (tensor,) = dump.outputs
    assert (tensor.data_type_name, tensor.shape, tensor.format_name) == (
        "DT_FLOAT16",
        (3, 4),
        "RESERVED",
    )
    np.testing.assert_array_equal(dump.array(tensor), values)


def test_npy_fortran_order_and_big_endian(tmp_path):
    values = np.asfortranarray(np.arange(6, dtype=">i4").reshape(2, 3))
    path = tmp_path / "x.0.1700000000000000.npy"
    np.save(path, values)
    dump = read_npy_dump(path)
    np.testing.assert_array_equal(dump.array(dump.outputs[0]), values)


@pytest.mark.parametrize(
    ("writer", "message"),
    [
        (lambda p: p.write_bytes(b"not numpy at all"), "not a valid .npy file"),
        (lambda p: np.save(p, np.array(["a"], dtype=object), allow_pickle=True), "Python objects"),
        (lambda p: np.save(p, np.array(["ab"])), "has no CANN data type"),
    ],
)
def test_bad_npy_files(tmp_path, writer, message):
    path = tmp_path / "a.0.1700000000000000.npy"
    writer(path)
    with pytest.raises(DumpError, match=message):
        read_dump(path)


def _npy_with_header(header: str) -> bytes:
    body = header.encode("latin1")
    body += b" " * (63 - (10 + len(body)) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(body).to_bytes(2, "little") + body


@pytest.mark.parametrize(
    "header",
    [
        "{'descr': open(), 'fortran_order': False, 'shape': (2,), }",
        "{1: 2}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}",
    ],
)
def test_a_bad_npy_header_is_said_in_our_words(tmp_path, header):
    """Left by the last round: the error quoted numpy's parser, e.g. "malformed node or string
    on line 1: <ast.Call object at 0x7f...>", which tells a user nothing."""
    path = tmp_path / "a.0.1700000000000000.npy"
    path.write_bytes(_npy_with_header(header))
    with pytest.raises(DumpError) as caught:
        read_dump(path)
    message = str(caught.value)
    assert str(path) in message and "not a valid .npy file" in message
    assert "object at 0x" not in message and "<ast." not in message, message
    assert "EOF in multi-line" not in message, message
    assert "numpy.save" in message, message


def test_truncated_npy(tmp_path):
    path = tmp_path / "a.0.1700000000000000.npy"
    np.save(path, np.zeros(100, np.float32))
    os.truncate(path, path.stat().st_size - 10)
    with pytest.raises(DumpError, match="needs 400 bytes but only 390 follow"):
        read_dump(path)


# ----------------------------------------------------------------------------- protobuf JSON


def test_header_json_mapping():
    data = encode_dump(
        "op",
        [TensorSpec(np.zeros((2, 3), np.float16), format=0, original_shape=(2, 3), address=7)],
        [TensorSpec(np.zeros(2, np.float32), original_op=OriginalOp("a", 1, 1, 0))],
        spaces=[TensorSpec(b"\x00" * 3)],
        attrs=[("slice", "{}")],
        dump_time=5,
    )
    assert dump_header_to_json(data) == {
        "version": "2.0",
        "dump_time": "5",
        "op_name": "op",
        "input": [
            {
                "data_type": 2,
                "shape": {"dim": ["2", "3"]},
                "size": "12",
                "original_shape": {"dim": ["2", "3"]},
                "address": "7",
            }
        ],
        "output": [
            {
                "data_type": 1,
                "format": 2,
                "shape": {"dim": ["2"]},
                "original_op": {"name": "a", "output_index": 1, "data_type": 1},
                "size": "8",
            }
        ],
        "attr": [{"name": "slice", "value": "{}"}],
        "space": [{"size": "3"}],
    }


def test_header_json_of_old_workspace_and_empty_shape():
    header = pw.MessageWriter()
    header.message(3, pw.MessageWriter().varint(1, 1).message(3, b"").varint(6, 4))
    header.message(7, pw.MessageWriter().varint(1, 0).varint(3, 16))
    assert header_to_json(header.getvalue()) == {
        "output": [{"data_type": 1, "shape": {}, "size": "4"}],
        "space": [{"size": "16"}],
    }


def test_header_json_rejects_bad_lengths():
    with pytest.raises(pw.WireError):
        dump_header_to_json(b"\x01")
    with pytest.raises(pw.WireError):
        dump_header_to_json((50).to_bytes(8, "little") + b"\x00")


# ----------------------------------------------------------------------------- msaccucmp


def _msaccucmp_dump_utils():
    """msaccucmp's own dump loading, with only `_parse_dump_to_json` replaced by ours."""
    msaccucmp = importlib.import_module("msprobe.msaccucmp")  # the oracle: never skipped
    root = os.path.dirname(msaccucmp.__file__)
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        import google.protobuf.message  # noqa: F401
    except ImportError:  # msaccucmp imports only DecodeError from protobuf
        message = types.ModuleType("google.protobuf.message")
        message.DecodeError = type("DecodeError", (Exception,), {})
        sys.modules.setdefault("google", types.ModuleType("google"))
        sys.modules.setdefault("google.protobuf", types.ModuleType("google.protobuf"))
        sys.modules["google.protobuf.message"] = message
    from dump_parse import big_dump_data, dump_utils

    def parse_dump_to_json(self):
        with open(self.dump_file_path, "rb") as handle:
            self.dump_json_data = dump_header_to_json(handle.read())

    big_dump_data.BigDumpDataParser._parse_dump_to_json = parse_dump_to_json
    return dump_utils


@pytest.mark.oracle
def test_msaccucmp_loads_our_files_identically(tmp_path):
    dump_utils = _msaccucmp_dump_utils()
    rng = np.random.default_rng(3)
    inputs = [
        TensorSpec(
            rng.standard_normal((1, 1, 2, 2, 16)).astype(np.float16),
            format=3,
            original_shape=(1, 3, 2, 2),
        ),
        TensorSpec(np.arange(5, dtype=np.int32)),
    ]
    outputs = [
        TensorSpec(
            rng.standard_normal((2, 3)).astype(np.float32),
            format=0,
            original_op=OriginalOp("orig", 0, 1, 0),
            original_shape=(2, 3),
            address=2**33,
        ),
        TensorSpec(np.array([True, False]), format=2),
        TensorSpec(np.arange(4, dtype=np.uint8), shape=()),  # empty shape: a scalar
    ]
    path = write_dump(
        tmp_path / "Conv2D.conv1.3.1700000000000000",
        "conv1",
        inputs,
        outputs,
        dump_time=1700000000000000,
    )
    theirs = dump_utils.parse_dump_file(str(path), 2)
    ours = read_dump(path)
    assert theirs.op_name == ours.op_name
    assert int(theirs.dump_time) == ours.dump_time
    pairs = list(zip(theirs.input_data, ours.inputs, strict=True)) + list(
        zip(theirs.output_data, ours.outputs, strict=True)
    )
    assert len(pairs) == 5
    for their, our in pairs:
        assert their.data_type == our.data_type
        assert their.tensor_format == our.format
        assert int(their.size) == our.size
        assert list(their.original_shape) == list(our.original_shape)
        assert int(their.address or 0) == our.address
        ours_array = ours.array(our)
        assert list(their.shape) == list(ours_array.shape)
        np.testing.assert_array_equal(their.data.reshape(ours_array.shape), ours_array)


@pytest.mark.oracle
def test_msaccucmp_json_mapping_of_a_header_is_plain_json(tmp_path):
    data = encode_dump("op", outputs=[TensorSpec(np.zeros(3, np.float32))])
    assert json.loads(json.dumps(dump_header_to_json(data))) == dump_header_to_json(data)


@pytest.mark.parametrize("extra", [1, 512])
def test_tensor_sizes_that_do_not_add_up_to_the_file_are_a_bad_file(tmp_path, extra):
    """A review: a size field damaged in the header (1024 read as 512) shifted every later
    tensor by 512 bytes, which were then decoded from the wrong place without a word, and the
    replay moved the blame to another rule. msaccucmp checks only that the sizes do not run
    past the end. Bytes left over after the last tensor mean the sizes are wrong."""
    x = np.arange(256, dtype=np.float32)
    path = write_dump(tmp_path / "d", "op", [TensorSpec(x), TensorSpec(x)], [TensorSpec(x)])
    assert read_dump(path).file_size == path.stat().st_size  # as written: fine
    path.write_bytes(path.read_bytes() + b"\0" * extra)
    with pytest.raises(DumpError, match=rf"{extra} byte\(s\) after its last tensor"):
        read_dump(path)
