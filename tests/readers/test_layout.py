"""Device ↔ host layouts: known element positions, exact round trips, msaccucmp's converters."""

import importlib
import os
import sys

import numpy as np
import pytest
from fusion_switch.readers.layout import (
    LayoutError,
    default_c0,
    device_shape,
    to_device,
    to_host,
)
from hypothesis import given, settings
from hypothesis import strategies as st


def _numbered(shape):
    return np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape) + 1


def test_nc1hwc0_element_positions():
    host = _numbered((2, 20, 3, 4))  # C=20 → C1=2 with 12 padded channels
    dev = to_device(host, "NC1HWC0")
    assert dev.shape == (2, 2, 3, 4, 16)
    n, c, h, w = 1, 17, 2, 3
    assert dev[n, c // 16, h, w, c % 16] == host[n, c, h, w]
    assert np.all(dev[:, 1, :, :, 4:] == 0)  # padding is zero


def test_ndc1hwc0_element_positions():
    host = _numbered((1, 18, 2, 3, 2))
    dev = to_device(host, "NDC1HWC0")
    assert dev.shape == (1, 2, 2, 3, 2, 16)
    assert dev[0, 1, 17 // 16, 2, 1, 17 % 16] == host[0, 17, 1, 2, 1]


def test_fractal_nz_element_positions():
    host = _numbered((2, 20, 40))
    dev = to_device(host, "FRACTAL_NZ")
    assert dev.shape == (2, 3, 2, 16, 16)  # [..., W1, H1, H0, W0]
    b, h, w = 1, 19, 37
    assert dev[b, w // 16, h // 16, h % 16, w % 16] == host[b, h, w]


def test_fractal_z_element_positions():
    host = _numbered((20, 18, 2, 3))  # N=20 → N1=2, C=18 → C1=2
    dev = to_device(host, "FRACTAL_Z")
    assert dev.shape == (2 * 2 * 3, 2, 16, 16)
    flat = dev.reshape(-1)
    n, c, h, w = 19, 17, 1, 2
    index = ((c // 16) * 6 + h * 3 + w) * (2 * 16 * 16) + n * 16 + c % 16
    assert flat[index] == host[n, c, h, w]


def test_transposing_formats():
    host = _numbered((1, 2, 3, 4))
    assert to_device(host, "NHWC").shape == (1, 3, 4, 2)
    assert to_device(host, "HWCN").shape == (3, 4, 2, 1)
    assert to_device(host, "NHWC")[0, 2, 3, 1] == host[0, 1, 2, 3]
    assert to_device(host, "HWCN")[2, 3, 1, 0] == host[0, 1, 2, 3]


@pytest.mark.parametrize(
    ("host", "fmt", "c0", "device"),
    [
        ((1, 3, 4, 4), "NC1HWC0", 16, (1, 1, 4, 4, 16)),
        ((1, 33, 1, 1), "NC1HWC0", 32, (1, 2, 1, 1, 32)),
        ((7,), "FRACTAL_NZ", 16, (1, 1, 16, 16)),
        ((17, 5), "FRACTAL_NZ", 16, (1, 2, 16, 16)),
        ((2, 3, 17, 5), "FRACTAL_NZ", 32, (2, 3, 1, 2, 16, 32)),
        ((64, 3, 7, 7), "FRACTAL_Z", 16, (49, 4, 16, 16)),
        ((2, 3), "ND", 16, (2, 3)),
    ],
)
def test_device_shapes(host, fmt, c0, device):
    assert device_shape(host, fmt, c0) == device
    assert to_device(np.zeros(host), fmt, c0).shape == device


@pytest.mark.parametrize(("code", "c0"), [(1, 16), (2, 16), (3, 32), (4, 32), (28, 64)])
def test_default_c0(code, c0):
    assert default_c0(code) == c0


def test_codes_and_names_are_both_accepted():
    host = _numbered((1, 3, 2, 2))
    np.testing.assert_array_equal(to_device(host, 3), to_device(host, "NC1HWC0"))
    np.testing.assert_array_equal(to_device(host, "FORMAT_NC1HWC0"), to_device(host, 3))


def test_without_host_shape_padding_is_kept():
    dev = to_device(_numbered((1, 3, 2, 2)), "NC1HWC0")
    assert to_host(dev, "NC1HWC0", dev.shape).shape == (1, 16, 2, 2)
    nz = to_device(_numbered((5, 7)), "FRACTAL_NZ")
    assert to_host(nz, "FRACTAL_NZ", nz.shape).shape == (16, 16)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: to_host(np.zeros(10), "NC1HWC0", (1, 1, 2, 2, 16)), "10 elements do not fill"),
        (lambda: to_host(np.zeros(16), "NC1HWC0", (1, 16)), "needs a 5-D NC1HWC0 device shape"),
        (lambda: to_host(np.zeros(256), "FRACTAL_Z", (1, 1, 16, 16)), "needs the NCHW host shape"),
        (
            lambda: to_host(np.zeros(256), "FRACTAL_Z", (1, 1, 16, 16), (1, 1, 1, 1), groups=2),
            "groups=2",
        ),
        (
            lambda: to_host(np.zeros(256), "FRACTAL_Z", (3, 1, 16, 16), (1, 1, 2, 2)),
            "does not match H*W=4",
        ),
        (
            lambda: to_host(np.zeros(64), "NC1HWC0", (1, 1, 2, 2, 16), (1, 17, 2, 2)),
            "does not fit the converted shape",
        ),
        (lambda: to_host(np.zeros(256), "FRACTAL_NZ", (1, 1, 16, 16), (17, 3)), "smaller than"),
        (lambda: to_host(np.zeros(4), "C1HWNCoC0", (4,)), "C1HWNCoC0 is not supported"),
        (lambda: to_device(np.zeros((2, 2)), "NC1HWC0"), "needs a 4-D NCHW host shape"),
        (lambda: to_device(np.zeros(3), "BOGUS"), "unknown format 'BOGUS'"),
        (lambda: to_device(np.zeros(3), 77), "unknown format code 77"),
    ],
)
def test_errors_are_layout_errors(call, message):
    with pytest.raises(LayoutError, match=message.replace("*", r"\*").replace("(", r"\(")):
        call()


dims = st.integers(1, 6)
FORMAT_RANKS = {"NC1HWC0": 4, "NDC1HWC0": 5, "FRACTAL_Z": 4, "NHWC": 4, "HWCN": 4}


@settings(max_examples=80, deadline=None)
@given(
    st.sampled_from(sorted(FORMAT_RANKS)),
    st.lists(st.integers(1, 5), min_size=4, max_size=4),
    st.integers(1, 70),
    st.sampled_from([16, 32]),
)
def test_round_trip_4d_5d(fmt, sizes, channels, c0):
    """Small N/D/H/W, channel (or filter) counts across several C0 blocks."""
    n, *rest = sizes
    shape = (n, channels, *rest)[: FORMAT_RANKS[fmt]]
    if fmt == "FRACTAL_Z":
        shape = (channels, n, *rest[1:3])  # N is the packed axis too
    host = _numbered(shape)
    dev = to_device(host, fmt, c0)
    assert dev.shape == device_shape(shape, fmt, c0)
    back = to_host(dev.reshape(-1), fmt, dev.shape, shape)
    np.testing.assert_array_equal(back, host)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.integers(1, 3), max_size=2),
    st.integers(1, 40),
    st.integers(1, 40),
    st.sampled_from([16, 32]),
)
def test_round_trip_fractal_nz(batch, rows, cols, c0):
    host = _numbered((*batch, rows, cols))
    dev = to_device(host, "FRACTAL_NZ", c0)
    back = to_host(dev, "FRACTAL_NZ", dev.shape, host.shape)
    np.testing.assert_array_equal(back, host)
    assert int(np.count_nonzero(dev)) == host.size  # only padding is zero


# ----------------------------------------------------------------------------- msaccucmp


def _their_converter(name):
    msaccucmp = importlib.import_module("msprobe.msaccucmp")  # the oracle: never skipped
    root = os.path.dirname(msaccucmp.__file__)
    if root not in sys.path:
        sys.path.insert(0, root)
    return importlib.import_module(f"format_manager.builtin_format_convert.convert_{name}").convert


@pytest.mark.oracle
@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=4, max_size=4), st.integers(1, 40))
def test_same_elements_as_msaccucmp(sizes, c):
    n, d, h, w = sizes
    cases = [
        ("NC1HWC0", "NC1HWC0_to_NCHW", (n, c, h, w)),
        ("NDC1HWC0", "NDC1HWC0_to_NCDHW", (n, c, d, h, w)),
        ("FRACTAL_Z", "FRACTAL_Z_to_NCHW", (n, c, h, w)),
        ("FRACTAL_Z", "FRACTAL_Z_to_NCHW", (c, n, h, w)),
        ("NHWC", "NHWC_to_NCHW", (n, c, h, w)),
        ("HWCN", "HWCN_to_NCHW", (n, c, h, w)),
        ("FRACTAL_NZ", "FRACTAL_NZ_to_ND", (n, c, h)),
        ("FRACTAL_NZ", "FRACTAL_NZ_to_ND", (c, h)),
        ("FRACTAL_NZ", "FRACTAL_NZ_to_ND", (c,)),
    ]
    for fmt, converter, host_shape in cases:
        host = _numbered(host_shape)
        dev = to_device(host, fmt)
        theirs = _their_converter(converter)(list(dev.shape), list(host_shape), dev.reshape(-1))
        # msaccucmp leaves padded channels for a later slice to the ground-truth shape
        theirs = theirs[tuple(slice(0, s) for s in host_shape)]
        ours = to_host(dev.reshape(-1), fmt, dev.shape, host_shape)
        np.testing.assert_array_equal(theirs.reshape(host_shape), ours, err_msg=fmt)


@pytest.mark.oracle
def test_msaccucmp_packs_fractal_z_like_we_do():
    host = _numbered((20, 18, 2, 3))
    theirs = _their_converter("NCHW_to_FRACTAL_Z")(list(host.shape), None, host.reshape(-1))
    np.testing.assert_array_equal(theirs, to_device(host, "FRACTAL_Z"))
