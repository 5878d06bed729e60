"""Format codes and names, including the two quirks of real dumps (sub-format bits, old 30)."""

import pytest
from fusion_switch.readers.formats import (
    FORMAT_NAMES,
    embedded_sub_format,
    format_code,
    format_name,
    primary_format,
)


@pytest.mark.parametrize(
    ("code", "ndim", "name"),
    [
        (0, None, "NCHW"),
        (3, 5, "NC1HWC0"),
        (29, 4, "FRACTAL_NZ"),
        (30, 5, "NCDHW"),
        (30, 4, "RESERVED"),  # oldest protos: 30 = FORMAT_RESERVED
        (30, None, "NCDHW"),
        (40, None, "RESERVED"),
        (4 | (3 << 8), None, "FRACTAL_Z"),  # sub-format in the high bits
        (120, None, "FORMAT_UNKNOWN_120"),
    ],
)
def test_format_name(code, ndim, name):
    assert format_name(code, ndim) == name


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("NC1HWC0", 3),
        ("FORMAT_NC1HWC0", 3),
        ("fractal_nz", 29),
        ("YUV", 45),
        ("C1HWNCoC0", 25),
        ("FORMAT_RESERVED", 40),
        ("nonsense", None),
    ],
)
def test_format_code(name, code):
    assert format_code(name) == code


def test_every_name_maps_back_to_its_code():
    for code, name in FORMAT_NAMES.items():
        assert format_code(name) == code


def test_sub_format_bits():
    raw = 4 | (7 << 8)
    assert (primary_format(raw), embedded_sub_format(raw)) == (4, 7)
    assert embedded_sub_format(29) == 0
