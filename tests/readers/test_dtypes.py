"""CANN data type codes: names, decoding, encoding, unsupported codes."""

import importlib
import math
import os
import sys

import numpy as np
import pytest
from fusion_switch.readers.dtypes import (
    code_for_numpy,
    data_type_code,
    data_type_name,
    decode_dtype,
    encode_values,
)
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp


@pytest.mark.parametrize(
    ("code", "name", "numpy", "itemsize"),
    [
        (1, "DT_FLOAT", "float32", 4),
        (2, "DT_FLOAT16", "float16", 2),
        (3, "DT_INT8", "int8", 1),
        (4, "DT_UINT8", "uint8", 1),
        (5, "DT_INT16", "int16", 2),
        (6, "DT_UINT16", "uint16", 2),
        (7, "DT_INT32", "int32", 4),
        (8, "DT_INT64", "int64", 8),
        (9, "DT_UINT32", "uint32", 4),
        (10, "DT_UINT64", "uint64", 8),
        (11, "DT_BOOL", "bool", 1),
        (12, "DT_DOUBLE", "float64", 8),
        (16, "DT_COMPLEX64", "complex64", 8),
        (17, "DT_COMPLEX128", "complex128", 16),
        (27, "DT_BF16", "float32", 2),
        (0, "DT_UNDEFINED", "int8", 1),
        (23, "DT_RESOURCE", "int64", 8),
    ],
)
def test_supported_codes(code, name, numpy, itemsize):
    info = decode_dtype(code)
    assert info.supported
    assert info.name == name == data_type_name(code)
    assert info.numpy == np.dtype(numpy)
    assert info.itemsize == itemsize
    assert data_type_code(name) == code


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (13, "DT_STRING (13) cannot be compared"),
        (36, "DT_FLOAT8_E8M0 (36)"),
        (39, "DT_FLOAT4_E2M1"),
        (99, "unknown data type code 99"),
        (-3, "unknown data type code -3"),
    ],
)
def test_unsupported_codes_are_marked_not_raised(code, reason):
    info = decode_dtype(code)
    assert not info.supported
    assert reason in info.reason
    assert info.numpy is None
    with pytest.raises(ValueError, match=r"cannot|unknown"):
        info.decode(b"\x00" * 8, 1)


@pytest.mark.parametrize(
    ("text", "code"),
    [("DT_FLOAT", 1), ("float16", 2), ("DT_BFLOAT16", 27), ("int8", 3), ("nonsense", None)],
)
def test_name_lookup(text, code):
    assert data_type_code(text) == code


def test_unknown_code_gets_a_readable_name():
    assert data_type_name(250) == "DT_UNKNOWN_250"


def test_bf16_decodes_by_shifting_into_float32():
    raw = np.array([0x3F80, 0xC000, 0x7F80, 0x0000], dtype="<u2").tobytes()
    values = decode_dtype(27).decode(raw, 4)
    assert values.dtype == np.float32
    assert values.tolist() == [1.0, -2.0, math.inf, 0.0]


def test_bf16_encoding_rounds_to_nearest_even():
    # 1 + 2**-8 is exactly half way between two bf16 values: ties go to the even one (1.0)
    values = np.array([1.0 + 2**-8, 1.0 + 3 * 2**-8, np.nan], dtype=np.float32)
    decoded = decode_dtype(27).decode(encode_values(27, values), 3)
    assert decoded[0] == 1.0
    assert decoded[1] == 1.0 + 2**-6
    assert np.isnan(decoded[2])


def test_int4_packs_two_per_byte_low_nibble_first():
    info = decode_dtype(28)
    assert info.nbytes(3) == 2 and info.count_in(2) == 4
    raw = bytes([0x21, 0x0F])  # 1, 2, -1, 0
    assert info.decode(raw, 3).tolist() == [1, 2, -1]
    values = np.array([-8, 7, 0, -1, 3], dtype=np.int8)
    assert info.decode(encode_values(28, values), 5).tolist() == values.tolist()


def test_int4_rejects_out_of_range_values():
    with pytest.raises(ValueError, match=r"-8\.\.7"):
        encode_values(28, np.array([9]))


def test_uint1_unpacks_bits():
    info = decode_dtype(29)
    assert info.nbytes(10) == 2
    assert info.decode(bytes([0b10100000, 0b01000000]), 10).tolist() == [
        1,
        0,
        1,
        0,
        0,
        0,
        0,
        0,
        0,
        1,
    ]


@pytest.mark.parametrize(
    ("code", "byte", "value"),
    [
        (35, 0x38, 1.0),  # e4m3fn: exponent 7 (bias 7), mantissa 0
        (35, 0x7E, 448.0),  # largest finite e4m3fn
        (35, 0x01, 2.0**-9),  # smallest subnormal
        (34, 0x3C, 1.0),  # e5m2 bias 15
        (34, 0x7B, 57344.0),  # largest finite e5m2
        (34, 0x7C, math.inf),
        (33, 0x00, 0.0),
        (33, 0x6F, math.inf),
        (33, 0x01, 2.0**-22),  # HiFloat8 denormal 2**(m-23)
    ],
)
def test_eight_bit_floats(code, byte, value):
    assert decode_dtype(code).decode(bytes([byte]), 1)[0] == np.float32(value)


@pytest.mark.parametrize(("code", "byte"), [(35, 0x7F), (34, 0x7D), (33, 0x80)])
def test_eight_bit_float_nans(code, byte):
    assert np.isnan(decode_dtype(code).decode(bytes([byte]), 1)[0])


def test_decode_refuses_too_few_bytes():
    with pytest.raises(ValueError, match="need 8 bytes, got 4"):
        decode_dtype(1).decode(b"\x00" * 4, 2)


def test_to_float32_takes_the_real_part_and_bools_as_numbers():
    info = decode_dtype(16)
    assert info.to_float32(np.array([1 + 2j])).tolist() == [1.0]
    assert decode_dtype(11).to_float32(np.array([True, False])).tolist() == [1.0, 0.0]


@pytest.mark.parametrize(
    "dtype",
    [
        "float32",
        "float16",
        "float64",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "bool",
        "complex64",
        "complex128",
    ],
)
def test_numpy_dtype_round_trip(dtype):
    code = code_for_numpy(np.dtype(dtype))
    assert code is not None
    assert decode_dtype(code).numpy == np.dtype(dtype)


def test_numpy_dtype_without_code():
    assert code_for_numpy(np.dtype("U3")) is None


@given(hnp.arrays(np.float16, hnp.array_shapes(max_dims=2, max_side=6)))
def test_float16_round_trip_is_bit_exact(values):
    decoded = decode_dtype(2).decode(encode_values(2, values), values.size)
    assert decoded.tobytes() == values.reshape(-1).tobytes()


@given(st.lists(st.floats(width=32, allow_nan=False), max_size=20))
def test_bf16_encoding_is_within_half_an_ulp(values):
    array = np.array(values, dtype=np.float32)
    decoded = decode_dtype(27).decode(encode_values(27, array), array.size)
    finite = np.isfinite(decoded)
    # half an ulp: relative 2**-8 for normals, absolute 2**-134 for bf16 subnormals
    tolerance = np.maximum(np.abs(array[finite]) * 2.0**-8, np.float32(2.0**-134))
    assert np.all(np.abs(decoded[finite] - array[finite]) <= tolerance)


# Where msaccucmp's byte-wise decoders disagree with the format definitions: it returns +inf
# for the negative infinities and a finite ±480 for E4M3FN's NaN encodings. We keep the
# definitions; every other byte value decodes identically.
MSACCUCMP_FP8_DIFFERENCES = {
    33: {0xEF: (-math.inf, math.inf)},
    34: {0xFC: (-math.inf, math.inf)},
    35: {0x7F: (math.nan, 480.0), 0xFF: (math.nan, -480.0)},
}


@pytest.mark.oracle
@pytest.mark.parametrize(
    ("code", "function"),
    [(33, "hifloat8_to_float32"), (34, "float8e5m2_to_float32"), (35, "float8e4m3fn_to_float32")],
)
def test_eight_bit_floats_match_msaccucmp_except_documented_bytes(code, function):
    msaccucmp = importlib.import_module("msprobe.msaccucmp")  # the oracle: never skipped
    root = os.path.dirname(msaccucmp.__file__)
    if root not in sys.path:
        sys.path.insert(0, root)
    theirs_of = getattr(importlib.import_module("conversion.dtype_conversion"), function)
    ours = decode_dtype(code).decode(bytes(range(256)), 256)
    differences = {}
    for byte in range(256):
        mine, theirs = float(ours[byte]), float(np.float32(theirs_of(byte)))
        if not (mine == theirs or (math.isnan(mine) and math.isnan(theirs))):
            differences[byte] = (mine, theirs)
    expected = MSACCUCMP_FP8_DIFFERENCES[code]
    assert set(differences) == set(expected)
    for byte, (mine, theirs) in expected.items():
        got_mine, got_theirs = differences[byte]
        assert got_theirs == theirs
        assert got_mine == mine or (math.isnan(mine) and math.isnan(got_mine))
