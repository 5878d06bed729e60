"""CANN tensor formats (``ge::Format`` / dump ``OutputFormat`` numbering) and their names.

Two quirks of real dumps are handled here, in one place:
- some CANN versions put a sub-format in the high bits of the format value, so only the low
  byte names the format (:func:`primary_format`);
- the oldest dump protos end the enum at ``30 = FORMAT_RESERVED`` where newer ones have
  ``30 = NCDHW``. A 5-D tensor tagged 30 is NCDHW; any other rank tagged 30 is taken as RESERVED
  (no layout information), see :func:`format_name`.
"""

from __future__ import annotations

FORMAT_NAMES: dict[int, str] = {
    0: "NCHW",
    1: "NHWC",
    2: "ND",
    3: "NC1HWC0",
    4: "FRACTAL_Z",
    5: "NC1C0HWPAD",
    6: "NHWC1C0",
    7: "FSR_NCHW",
    8: "FRACTAL_DECONV",
    9: "C1HWNC0",
    10: "FRACTAL_DECONV_TRANSPOSE",
    11: "FRACTAL_DECONV_SP_STRIDE_TRANS",
    12: "NC1HWC0_C04",
    13: "FRACTAL_Z_C04",
    14: "CHWN",
    15: "FRACTAL_DECONV_SP_STRIDE8_TRANS",
    16: "HWCN",
    17: "NC1KHKWHWC0",
    18: "BN_WEIGHT",
    19: "FILTER_HWCK",
    20: "HASHTABLE_LOOKUP_LOOKUPS",
    21: "HASHTABLE_LOOKUP_KEYS",
    22: "HASHTABLE_LOOKUP_VALUE",
    23: "HASHTABLE_LOOKUP_OUTPUT",
    24: "HASHTABLE_LOOKUP_HITS",
    25: "C1HWNCoC0",
    26: "MD",
    27: "NDHWC",
    28: "FRACTAL_ZZ",
    29: "FRACTAL_NZ",
    30: "NCDHW",
    31: "DHWCN",
    32: "NDC1HWC0",
    33: "FRACTAL_Z_3D",
    34: "CN",
    35: "NC",
    36: "DHWNC",
    37: "FRACTAL_Z_3D_TRANSPOSE",
    38: "FRACTAL_ZN_LSTM",
    39: "FRACTAL_Z_G",
    40: "RESERVED",
    41: "ALL",
    42: "NULL",
    43: "ND_RNN_BIAS",
    44: "FRACTAL_ZN_RNN",
    45: "NYUV",
    46: "NYUV_A",
    47: "NCL",
    48: "FRACTAL_Z_WINO",
    49: "C1HWC0",
    255: "MAX",
}
FORMAT_CODES: dict[str, int] = {name: code for code, name in FORMAT_NAMES.items()}
FORMAT_CODES.update({"YUV": 45, "YUV_A": 46, "FORMAT_RESERVED": 40})
_UPPER_CODES = {name.upper(): code for name, code in FORMAT_CODES.items()}

OLD_RESERVED = 30  # FORMAT_RESERVED in the oldest dump protos


def primary_format(raw: int) -> int:
    """The format proper: the low byte (GE may carry ``sub_format << 8`` above it)."""
    return raw & 0xFF


def embedded_sub_format(raw: int) -> int:
    """Sub-format carried in the high bits of a raw format value (0 when none)."""
    return (raw >> 8) & 0xFFFF


def format_name(code: int, ndim: int | None = None) -> str:
    """Name of a format code; with ``ndim``, code 30 on a non-5-D tensor reads as RESERVED."""
    code = primary_format(code)
    if code == OLD_RESERVED and ndim is not None and ndim != 5:
        return "RESERVED"
    return FORMAT_NAMES.get(code, f"FORMAT_UNKNOWN_{code}")


def format_code(name: str) -> int | None:
    """Code of a format name such as ``"NC1HWC0"`` (also ``"FORMAT_NC1HWC0"``); None if unknown."""
    key = name.strip().upper()
    if key.startswith("FORMAT_") and key not in _UPPER_CODES:
        key = key[len("FORMAT_") :]
    return _UPPER_CODES.get(key)
