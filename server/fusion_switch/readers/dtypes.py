"""CANN data types (``ge::DataType`` / dump ``OutputDataType`` numbering) and how to decode them.

Every code maps to a :class:`DtypeInfo`; codes we cannot decode (strings, resources of unknown
width, 4/6-bit floats, ...) get ``supported=False`` and a ``reason``, never an exception.
Decoding follows msaccucmp where it has an opinion: bfloat16 and the 8-bit floats come back as
float32, ``DT_UNDEFINED`` is read as int8 bytes, ``DT_RESOURCE`` as int64, ``DT_UINT1`` as bits.
Known differences, on purpose: msaccucmp decodes the negative infinities of HiFloat8 (0xEF) and
E5M2 (0xFC) as +inf and E4M3FN's NaN bytes (0x7F, 0xFF) as ±480; here they follow the format
definitions. msaccucmp reads ``DT_UINT1`` as ``prod(shape)`` bytes unpacked to 8x the elements;
here ``prod(shape)`` bits. INT4, the quantised integer types and COMPLEX32, which msaccucmp
cannot read, are decoded too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

DATA_TYPE_NAMES: dict[int, str] = {
    0: "DT_UNDEFINED",
    1: "DT_FLOAT",
    2: "DT_FLOAT16",
    3: "DT_INT8",
    4: "DT_UINT8",
    5: "DT_INT16",
    6: "DT_UINT16",
    7: "DT_INT32",
    8: "DT_INT64",
    9: "DT_UINT32",
    10: "DT_UINT64",
    11: "DT_BOOL",
    12: "DT_DOUBLE",
    13: "DT_STRING",
    14: "DT_DUAL_SUB_INT8",
    15: "DT_DUAL_SUB_UINT8",
    16: "DT_COMPLEX64",
    17: "DT_COMPLEX128",
    18: "DT_QINT8",
    19: "DT_QINT16",
    20: "DT_QINT32",
    21: "DT_QUINT8",
    22: "DT_QUINT16",
    23: "DT_RESOURCE",
    24: "DT_STRING_REF",
    25: "DT_DUAL",
    26: "DT_VARIANT",
    27: "DT_BF16",
    28: "DT_INT4",
    29: "DT_UINT1",
    30: "DT_INT2",
    31: "DT_UINT2",
    32: "DT_COMPLEX32",
    33: "DT_HIFLOAT8",
    34: "DT_FLOAT8_E5M2",
    35: "DT_FLOAT8_E4M3FN",
    36: "DT_FLOAT8_E8M0",
    37: "DT_FLOAT6_E3M2",
    38: "DT_FLOAT6_E2M3",
    39: "DT_FLOAT4_E2M1",
    40: "DT_FLOAT4_E1M2",
    41: "DT_HIFLOAT4",
}
DATA_TYPE_CODES: dict[str, int] = {name: code for code, name in DATA_TYPE_NAMES.items()}

# Spellings seen in graphs and tools besides the canonical enum names.
_ALIASES = {
    "DT_FLOAT32": 1,
    "DT_BFLOAT16": 27,
    "FLOAT": 1,
    "FLOAT32": 1,
    "FLOAT16": 2,
    "BFLOAT16": 27,
    "BF16": 27,
    "HALF": 2,
    "DOUBLE": 12,
    "FLOAT64": 12,
}


def data_type_name(code: int) -> str:
    """Enum name of a data type code (``DT_UNKNOWN_<n>`` for codes outside the enum)."""
    return DATA_TYPE_NAMES.get(code, f"DT_UNKNOWN_{code}")


def data_type_code(name: str) -> int | None:
    """Code of ``"DT_FLOAT16"`` (also ``"float16"``, ``"DT_BFLOAT16"``, ...); None if unknown."""
    key = name.strip().upper()
    if key in DATA_TYPE_CODES:
        return DATA_TYPE_CODES[key]
    if key in _ALIASES:
        return _ALIASES[key]
    prefixed = "DT_" + key
    return DATA_TYPE_CODES.get(prefixed)


# ----------------------------------------------------------------------------- decoders


def _bf16_to_f32(raw: np.ndarray, count: int) -> np.ndarray:
    halves = raw[: count * 2].view("<u2").astype(np.uint32)
    return (halves << 16).view(np.float32)


def _int4_to_i8(raw: np.ndarray, count: int) -> np.ndarray:
    """Two signed 4-bit values per byte, element 0 in the low nibble."""
    packed = raw[: (count + 1) // 2].astype(np.int16)
    nibbles = np.empty(packed.size * 2, dtype=np.int16)
    nibbles[0::2] = packed & 0x0F
    nibbles[1::2] = packed >> 4
    nibbles[nibbles > 7] -= 16
    return nibbles[:count].astype(np.int8)


def _uint1_to_u8(raw: np.ndarray, count: int) -> np.ndarray:
    return np.unpackbits(raw[: (count + 7) // 8])[:count]


def _complex32_to_c64(raw: np.ndarray, count: int) -> np.ndarray:
    parts = raw[: count * 4].view("<f2").astype(np.float32)
    return parts[0::2] + 1j * parts[1::2]


def _e4m3fn_value(bits: int) -> float:
    sign = -1.0 if bits & 0x80 else 1.0
    exponent = (bits >> 3) & 0xF
    mantissa = bits & 0x7
    if exponent == 0xF and mantissa == 0x7:
        return float("nan")
    if exponent == 0:
        return sign * (mantissa / 8.0) * 2.0**-6
    return sign * (1.0 + mantissa / 8.0) * 2.0 ** (exponent - 7)


def _e5m2_value(bits: int) -> float:
    sign = -1.0 if bits & 0x80 else 1.0
    exponent = (bits >> 2) & 0x1F
    mantissa = bits & 0x3
    if exponent == 0x1F:
        return float("nan") if mantissa else sign * float("inf")
    if exponent == 0:
        return sign * (mantissa / 4.0) * 2.0**-14
    return sign * (1.0 + mantissa / 4.0) * 2.0 ** (exponent - 15)


def _hifloat8_value(bits: int) -> float:
    """HiFloat8: a prefix-coded "dot" field gives the exponent width D (4..0, or denormal)."""
    if bits == 0x00:
        return 0.0
    if bits == 0x80:
        return float("nan")
    if bits in (0x6F, 0xEF):
        return float("inf") if bits == 0x6F else float("-inf")
    sign = -1.0 if bits & 0x80 else 1.0
    body = bits & 0x7F
    if body & 0x60 == 0x60:
        width = 4
    elif body & 0x60 == 0x40:
        width = 3
    elif body & 0x60 == 0x20:
        width = 2
    elif body & 0x70 == 0x10:
        width = 1
    elif body & 0x78 == 0x08:
        width = 0
    else:  # denormal: 2 ** (m - 23)
        return sign * 2.0 ** ((body & 0x7) - 23)
    mantissa_bits = 5 - width
    exponent = 0.0
    if width:
        raw = (body >> mantissa_bits) & ((1 << width) - 1)
        magnitude = raw & ((1 << (width - 1)) - 1)
        exponent = (-1.0 if raw >> (width - 1) & 1 else 1.0) * ((1 << (width - 1)) + magnitude)
    mantissa = 1.0 + (body & ((1 << mantissa_bits) - 1)) / (1 << mantissa_bits)
    return sign * 2.0**exponent * mantissa


def _byte_table(value_of: Callable[[int], float]) -> np.ndarray:
    return np.array([value_of(b) for b in range(256)], dtype=np.float64)


_FP8_TABLES: dict[int, np.ndarray] = {}


def _fp8_decoder(code: int, value_of: Callable[[int], float]):
    def decode(raw: np.ndarray, count: int) -> np.ndarray:
        table = _FP8_TABLES.get(code)
        if table is None:
            table = _FP8_TABLES.setdefault(code, _byte_table(value_of))
        return table[raw[:count]]

    return decode


# ----------------------------------------------------------------------------- the table


_BYTE = np.dtype(np.uint8)
_LITTLE_ENDIAN: dict[np.dtype, np.dtype] = {}  # dtype -> its little-endian form (made once)


@dataclass(frozen=True)
class DtypeInfo:
    """How one CANN data type is stored and decoded.

    ``numpy`` is the dtype of the decoded array (None when unsupported). ``bits`` is the stored
    width of one element, so INT4 is 4 and UINT1 is 1; :meth:`nbytes` rounds up to whole bytes.
    """

    code: int
    name: str
    numpy: np.dtype | None
    bits: int
    supported: bool = True
    reason: str = ""
    _decode: Callable[[np.ndarray, int], np.ndarray] | None = None

    @property
    def itemsize(self) -> int:
        """Bytes per element, rounded up (1 for sub-byte types, 0 when unsupported)."""
        return (self.bits + 7) // 8

    def nbytes(self, count: int) -> int:
        """Bytes that ``count`` elements occupy in a dump."""
        return (count * self.bits + 7) // 8

    def count_in(self, nbytes: int) -> int:
        """How many whole elements fit into ``nbytes`` bytes."""
        return (nbytes * 8) // self.bits if self.bits else 0

    @property
    def plain(self) -> bool:
        """Stored as the numpy dtype's own bytes (little-endian): decoding is a view."""
        return self.supported and self._decode is None and self.numpy is not None

    @property
    def little(self) -> np.dtype:
        """The little-endian form of :attr:`numpy`, the layout of the stored bytes."""
        assert self.numpy is not None
        little = _LITTLE_ENDIAN.get(self.numpy)
        if little is None:
            little = _LITTLE_ENDIAN[self.numpy] = self.numpy.newbyteorder("<")
        return little

    def decode(self, raw: np.ndarray | bytes, count: int) -> np.ndarray:
        """Decode the first ``count`` elements of little-endian ``raw`` bytes (1-D result)."""
        if not self.supported:
            raise ValueError(f"{self.name}: {self.reason}")
        data = np.frombuffer(raw, dtype=np.uint8) if not isinstance(raw, np.ndarray) else raw
        if data.ndim != 1 or data.dtype != _BYTE:  # what DumpFile reads already is
            data = data.reshape(-1).view(np.uint8)
        needed = self.nbytes(count)
        if needed > data.size:
            raise ValueError(f"{self.name}: {count} elements need {needed} bytes, got {data.size}")
        if self._decode is not None:
            return self._decode(data, count)
        return data[:needed].view(self.little)

    def to_float32(self, array: np.ndarray) -> np.ndarray:
        """The float32 values metrics compare (complex: real part, bool: 0/1)."""
        if np.iscomplexobj(array):
            array = array.real
        return np.asarray(array, dtype=np.float32)


def _plain(code: int, dtype: str) -> DtypeInfo:
    np_dtype = np.dtype(dtype)
    return DtypeInfo(code, DATA_TYPE_NAMES[code], np_dtype, np_dtype.itemsize * 8)


def _custom(code: int, result: str, bits: int, decode) -> DtypeInfo:
    return DtypeInfo(code, DATA_TYPE_NAMES[code], np.dtype(result), bits, _decode=decode)


_TABLE: dict[int, DtypeInfo] = {
    info.code: info
    for info in (
        _plain(0, "i1"),  # DT_UNDEFINED: raw bytes as int8, like msaccucmp
        _plain(1, "f4"),
        _plain(2, "f2"),
        _plain(3, "i1"),
        _plain(4, "u1"),
        _plain(5, "i2"),
        _plain(6, "u2"),
        _plain(7, "i4"),
        _plain(8, "i8"),
        _plain(9, "u4"),
        _plain(10, "u8"),
        _plain(11, "?"),
        _plain(12, "f8"),
        _plain(16, "c8"),
        _plain(17, "c16"),
        _plain(18, "i1"),  # quantised integer types carry plain integers
        _plain(19, "i2"),
        _plain(20, "i4"),
        _plain(21, "u1"),
        _plain(22, "u2"),
        _plain(23, "i8"),  # DT_RESOURCE: msaccucmp reads int64 handles
        _custom(27, "f4", 16, _bf16_to_f32),
        _custom(28, "i1", 4, _int4_to_i8),
        _custom(29, "u1", 1, _uint1_to_u8),
        _custom(32, "c8", 32, _complex32_to_c64),
        # 8-bit floats in float64: msaccucmp makes them Python floats (DataType cell float64)
        _custom(33, "f8", 8, _fp8_decoder(33, _hifloat8_value)),
        _custom(34, "f8", 8, _fp8_decoder(34, _e5m2_value)),
        _custom(35, "f8", 8, _fp8_decoder(35, _e4m3fn_value)),
    )
}


def decode_dtype(code: int) -> DtypeInfo:
    """Decoding recipe for a data type code; unknown or undecodable codes are marked unsupported."""
    info = _TABLE.get(code)
    if info is not None:
        return info
    name = data_type_name(code)
    if code in DATA_TYPE_NAMES:
        reason = f"data type {name} ({code}) cannot be compared numerically"
    else:
        reason = f"unknown data type code {code}"
    return DtypeInfo(code, name, None, 0, supported=False, reason=reason)


def code_for_numpy(dtype: np.dtype) -> int | None:
    """Data type code of a numpy dtype (for ``.npy`` dumps and writers); None if no match."""
    dtype = np.dtype(dtype)
    for code in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 17):
        info = _TABLE[code]
        if info.numpy is not None and info.numpy == dtype.newbyteorder("="):
            return code
    return None


# ----------------------------------------------------------------------------- encoders


def _f32_to_bf16_bits(values: np.ndarray) -> np.ndarray:
    """Round float32 to bfloat16 (nearest, ties to even); NaN stays a quiet NaN."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    nan = np.isnan(values.astype(np.float32))
    rounded[nan] = ((bits[nan] >> 16) | 0x40) & 0xFFFF
    return rounded.astype("<u2")


def encode_values(code: int, values: np.ndarray) -> bytes:
    """Bytes a dump holds for ``values`` stored as data type ``code`` (the inverse of decode).

    Raises ValueError for types this writer does not produce (strings, the 8-bit floats, ...).
    """
    flat = np.asarray(values).reshape(-1)
    if code == 27:
        return _f32_to_bf16_bits(flat).tobytes()
    if code == 28:
        nibbles = flat.astype(np.int16)
        if nibbles.size and (nibbles.min() < -8 or nibbles.max() > 7):
            raise ValueError("DT_INT4 values must lie in -8..7")
        nibbles = (nibbles & 0x0F).astype(np.uint8)
        if nibbles.size % 2:
            nibbles = np.append(nibbles, np.uint8(0))
        return (nibbles[0::2] | (nibbles[1::2] << 4)).astype(np.uint8).tobytes()
    if code == 29:
        return np.packbits(flat.astype(bool)).tobytes()
    if code == 32:
        pairs = np.empty(flat.size * 2, dtype="<f2")
        pairs[0::2] = flat.real
        pairs[1::2] = flat.imag if np.iscomplexobj(flat) else 0
        return pairs.tobytes()
    info = decode_dtype(code)
    if not info.supported or info._decode is not None or info.numpy is None:
        raise ValueError(f"cannot write values as {info.name}")
    return flat.astype(info.numpy.newbyteorder("<")).tobytes()
