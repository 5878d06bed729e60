"""Robustness: whatever attributes and inputs a graph holds, a kernel either returns float64
arrays or raises KernelError (which the replay turns into ``unverified`` with the message);
never another exception. Hypothesis draws attribute values of every kind ``load_graph`` can
produce (ints, floats, bools, strings, lists, nested lists, None, dicts) and small tensors."""

from __future__ import annotations

import numpy as np
import pytest
from fusion_switch.diagnose.kernels import KernelError, known_types, lookup
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SCALARS = st.one_of(
    st.integers(-3, 5),
    st.floats(-4, 4, allow_nan=False),
    st.booleans(),
    st.sampled_from(["NCHW", "NHWC", "ND", "SAME", "VALID", "constant", "Round", "", "x"]),
)
VALUES = st.one_of(
    SCALARS,
    st.lists(st.integers(-2, 4), max_size=5),
    st.lists(st.lists(st.integers(0, 2), max_size=3), max_size=4),
    st.none(),
    st.just({"name": "f", "attr": {}}),
)
SHAPES = st.lists(st.integers(1, 4), min_size=0, max_size=4).map(tuple)
TENSORS = st.one_of(
    st.none(), SHAPES.map(lambda s: np.arange(float(np.prod(s)), dtype=np.float64).reshape(s) - 2)
)


@pytest.mark.parametrize("op_type", sorted(known_types()))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_kernel_fails_only_with_kernel_error(op_type, data):
    spec = lookup(op_type)
    inputs = data.draw(st.lists(TENSORS, max_size=5), label="inputs")
    names = [*spec.attrs, "format"]
    attrs = data.draw(
        st.dictionaries(st.sampled_from(names), VALUES, max_size=len(names)), label="attrs"
    )
    try:
        with np.errstate(all="ignore"):
            outs = spec.fn(inputs, **attrs)
    except KernelError:
        return
    assert isinstance(outs, list)
    assert all(isinstance(o, np.ndarray) and o.dtype == np.float64 for o in outs)


@pytest.mark.parametrize("op_type", ["PadD", "PadV3D"])
@pytest.mark.parametrize("constant", ["NCHW", {"name": "f", "attr": {}}])
def test_pad_with_a_constant_that_is_no_number_is_a_kernel_error(op_type, constant):
    # found by the property test above: float() raised ValueError/TypeError instead
    x = np.arange(6.0).reshape(2, 3)
    with pytest.raises(KernelError, match="constant_values"):
        lookup(op_type).fn([x], paddings=[[0, 1], [1, 0]], constant_values=constant)


def test_pad_of_a_scalar_with_no_paddings_is_the_scalar():
    # found by the property test above: np.pad refused the empty pad width with a TypeError
    (out,) = lookup("PadV3D").fn([np.float64(-2.0)], paddings=[])
    assert out.shape == () and out == -2.0
