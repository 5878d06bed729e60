"""msaccucmp's ten metrics: formulas, edge cases, cell texts, ``-alg`` selection.

Hand-computed expectations come first (table-driven); then a differential test calls msaccucmp's
own ``AlgorithmManager.compare`` in this process on random arrays and requires the same cells.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from fusion_switch.compare.metrics import (
    ALGORITHMS,
    NAN_TEXT,
    AlgorithmSelectionError,
    SizeMismatchError,
    closest_algorithms,
    compute_metrics,
    format_value,
    parse_algorithms,
    reference,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp


def metrics(x, y, names=ALGORITHMS, **options):
    results = compute_metrics(
        np.asarray(x), np.asarray(y), names, left_path="L", right_path="R", **options
    )
    return {r.name: r for r in results}


# ----------------------------------------------------------------------------- formulas

F32 = np.float32
X = np.array([1.0, 2.0, -3.0, 4.0], dtype=F32)
Y = np.array([1.0, 2.5, -3.0, 2.0], dtype=F32)


def _cos(x, y):
    x, y = np.asarray(x, float), np.asarray(y, float)
    return float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("CosineSimilarity", _cos(X, Y)),
        ("MaxAbsoluteError", 2.0),
        ("AccumulatedRelativeError", 0.2 + 1.0),  # |2/2.5-1| + |4/2-1|
        ("RelativeEuclideanDistance", math.sqrt((0.25 + 4.0) / (1 + 6.25 + 9 + 4))),
        ("MeanAbsoluteError", 2.5 / 4),
        ("RootMeanSquareError", math.sqrt(4.25 / 4)),
        ("MaxRelativeError", 1.0),
        ("MeanRelativeError", 1.2 / 4),
    ],
)
def test_formula(name, expected):
    result = metrics(X, Y, [name])[name]
    assert result.value == pytest.approx(expected, rel=1e-6)
    assert result.text == f"{expected:.6f}"
    assert result.message == ""


def test_kl_divergence_follows_min_max_scaling():
    x = np.array([0.0, 1.0, 2.0, 3.0], dtype=F32)
    y = np.array([0.0, 1.0, 2.0, 4.0], dtype=F32)
    eps = float(np.finfo(np.float32).eps)
    p = np.maximum(x / 3, eps)
    q = np.maximum(y / 4, eps)
    p, q = p / p.sum(), q / q.sum()
    expected = float((p * np.log(p / q)).sum())
    assert metrics(x, y, ["KullbackLeiblerDivergence"])["KullbackLeiblerDivergence"].value == (
        pytest.approx(expected, rel=1e-5)
    )


def test_kl_divergence_of_disjoint_tensors_is_large_but_finite():
    # [1, 0] vs [0, 1]: the zero is floored to float32 eps, so KL = ln(1 / eps) (almost).
    result = metrics(np.array([1, 0], F32), np.array([0, 1], F32), ["KullbackLeiblerDivergence"])
    value = result["KullbackLeiblerDivergence"].value
    assert value == pytest.approx(-math.log(np.finfo(np.float32).eps), rel=1e-5)


def test_standard_deviation_cell_and_pair():
    x = np.array([1.0, 3.0], dtype=F32)
    y = np.array([0.0005, 0.0005], dtype=F32)  # mean below 0.001 prints as 0
    result = metrics(x, y, ["StandardDeviation"])["StandardDeviation"]
    assert result.text == "(2.000;1.000),(0.000;0.000)"
    assert result.value is None
    assert result.std == ((2.0, 1.0), (pytest.approx(0.0005), 0.0))


# ----------------------------------------------------------------------------- edge cases

ZEROS = np.zeros(8, dtype=F32)
ONES = np.ones(8, dtype=F32)


@pytest.mark.parametrize(
    ("x", "y", "name", "text", "message"),
    [
        (ZEROS, ZEROS, "CosineSimilarity", "1.0", ""),
        (ZEROS, ONES, "CosineSimilarity", NAN_TEXT,
         "Cannot compare by Cosine Similarity. All the data is zero in L."),
        (ONES, ZEROS, "CosineSimilarity", NAN_TEXT,
         "Cannot compare by Cosine Similarity. All the data is zero in R."),
        (ONES, ZEROS, "RelativeEuclideanDistance", "0.000000", ""),
        (ONES, ZEROS, "AccumulatedRelativeError", "0.000000", ""),  # |y| <= eps terms are 0
        (ONES, ZEROS, "KullbackLeiblerDivergence", "0.000000", ""),  # both floored to eps
        (np.array([np.nan, 1], F32), np.array([1, 1], F32), "MaxAbsoluteError", "nan", ""),
        (np.array([np.nan, 1], F32), np.array([1, 1], F32), "CosineSimilarity", "nan", ""),
        (np.array([np.inf, 1], F32), np.array([1, 1], F32), "MeanAbsoluteError", "inf", ""),
        (np.array([2.0], F32), np.array([1.0], F32), "CosineSimilarity", "1.000000",
         "This tensor is scalar."),
    ],
)  # fmt: skip
def test_edge_case(x, y, name, text, message):
    result = metrics(x, y, [name], scalar=x.size == 1)[name]
    assert (result.text, result.message) == (text, message)


def test_bool_tensors_get_only_cosine_and_red():
    x = np.array([True, False, True])
    y = np.array([True, True, False])
    found = metrics(x, y)
    assert found["CosineSimilarity"].text == format_value(0.5)
    assert found["RelativeEuclideanDistance"].value is None  # numpy refuses bool subtraction
    assert found["RelativeEuclideanDistance"].message.startswith(
        "Failed to execute 'compare' in 'RelativeEuclideanDistance'."
    )
    for name in set(ALGORITHMS) - {"CosineSimilarity", "RelativeEuclideanDistance"}:
        assert found[name].text == NAN_TEXT
        assert found[name].message == f"Algorithm {name} does not support Boolean types."


def test_empty_tensors():
    empty = np.array([], dtype=F32)
    found = metrics(empty, empty)
    assert found["CosineSimilarity"].text == "1.0"
    assert found["MaxAbsoluteError"].text == NAN_TEXT
    assert "zero-size array" in found["MaxAbsoluteError"].message
    assert found["MeanAbsoluteError"].text == "nan"
    assert found["StandardDeviation"].text == "(nan;nan),(nan;nan)"


def test_integer_and_half_inputs_are_cast_to_float32():
    x = np.array([1, 2, 3], dtype=np.int32)
    y = np.array([1, 2, 4], dtype=np.float16)
    assert metrics(x, y, ["MaxAbsoluteError"])["MaxAbsoluteError"].text == "1.000000"


def test_size_mismatch_is_an_error():
    with pytest.raises(SizeMismatchError, match=r"size \(3\) in 'L' does not match .* \(2\)"):
        metrics(np.ones(3, F32), np.ones(2, F32))


def test_max_cmp_size_compares_leading_elements_only():
    x = np.array([1, 1, 9], dtype=F32)
    y = np.array([1, 1, 1], dtype=F32)
    assert metrics(x, y, ["MaxAbsoluteError"], max_cmp_size=2)["MaxAbsoluteError"].value == 0.0


def test_fused_path_equals_reference_path_bit_for_bit():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(5000).astype(F32)
    y = (x + rng.standard_normal(5000).astype(F32) * 0.1).astype(F32)
    fused = {r.name: r for r in compute_metrics(x, y)}
    for name in ALGORITHMS:
        ref = reference.one_metric(name, x, y, False, False, "", "")
        assert (fused[name].text, fused[name].message) == (ref.text, ref.message), name
        assert fused[name].std == ref.std


# ----------------------------------------------------------------------------- selection


@pytest.mark.parametrize(
    ("selection", "expected"),
    [
        (None, list(ALGORITHMS)),
        ("all", list(ALGORITHMS)),
        ("ALL", list(ALGORITHMS)),
        ("0", ["CosineSimilarity"]),
        ("3,0", ["RelativeEuclideanDistance", "CosineSimilarity"]),
        ("0, 0 ,CosineSimilarity", ["CosineSimilarity"]),
        ("MaxAbsoluteError,9", ["MaxAbsoluteError", "MeanRelativeError"]),
        ([0, 5], ["CosineSimilarity", "StandardDeviation"]),
        ("0,Nope,10", ["CosineSimilarity"]),
    ],
)
def test_parse_algorithms(selection, expected):
    assert parse_algorithms(selection) == expected


VALID = "Valid: 0..9 or CosineSimilarity, MaxAbsoluteError, AccumulatedRelativeError, "


def test_parse_algorithms_warns_about_unknown_names():
    warnings: list[str] = []
    assert parse_algorithms("1,Cosine", warnings) == ["MaxAbsoluteError"]
    assert warnings == [
        "-alg Cosine: unknown algorithm, skipped; did you mean CosineSimilarity? "
        + VALID
        + "RelativeEuclideanDistance, KullbackLeiblerDivergence, StandardDeviation, "
        "MeanAbsoluteError, RootMeanSquareError, MaxRelativeError, MeanRelativeError (or all)."
    ]


@pytest.mark.parametrize(
    ("selection", "message"),
    [
        ("", "-alg: no algorithm selected. " + VALID),
        (",", "-alg: no algorithm selected. " + VALID),
        ("Cosine", "-alg Cosine: unknown algorithm; did you mean CosineSimilarity? " + VALID),
        ("12", "-alg 12: unknown algorithm (indexes go from 0 to 9). " + VALID),
        ("rmse", "-alg rmse: unknown algorithm; did you mean RootMeanSquareError? " + VALID),
        (
            "mae",
            "-alg mae: unknown algorithm; did you mean MaxAbsoluteError or MeanAbsoluteError? "
            + VALID,
        ),
        ("Nope", "-alg Nope: unknown algorithm. " + VALID),
        ("Nope,10", "-alg Nope: unknown algorithm. -alg 10: unknown algorithm (indexes go"),
        ("allx", "-alg allx: unknown algorithm. " + VALID),
        ([12], "-alg 12: unknown algorithm (indexes go from 0 to 9). "),
    ],
)
def test_parse_algorithms_rejects_an_empty_selection_naming_flag_and_names(selection, message):
    with pytest.raises(AlgorithmSelectionError) as info:
        parse_algorithms(selection)
    assert str(info.value).startswith(message), str(info.value)
    assert str(info.value).endswith("MeanRelativeError (or all).")


@pytest.mark.parametrize(
    ("item", "closest"),
    [
        ("cosinesimilarity", ["CosineSimilarity"]),  # case
        ("Cosine", ["CosineSimilarity"]),  # part of the name
        ("CosineSimilarty", ["CosineSimilarity"]),  # typo
        ("RMSE", ["RootMeanSquareError"]),  # initials
        ("mae", ["MaxAbsoluteError", "MeanAbsoluteError"]),  # ambiguous initials
        ("kl", ["KullbackLeiblerDivergence"]),  # start of the initials
        ("std", ["StandardDeviation"]),  # letters in order
        ("MaxError", ["MaxRelativeError", "MaxAbsoluteError"]),
        ("Error", []),  # six names contain it: no hint is better than all of them
        ("banana", []),
    ],
)
def test_closest_algorithms(item, closest):
    assert closest_algorithms(item) == closest


# ----------------------------------------------------------------------------- msaccucmp itself


# msaccucmp's own code warns on empty and NaN data; that is expected here.
ignore_runtime_warnings = pytest.mark.filterwarnings("ignore::RuntimeWarning")
oracle = pytest.mark.oracle


@pytest.fixture(scope="module")
def msaccucmp_compare():
    """msaccucmp's AlgorithmManager.compare, imported from the installed mindstudio-probe."""
    from oracle import make_importable

    make_importable()
    import logging

    from algorithm_manager.algorithm_manager import AlgorithmManager
    from cmp_utils import utils

    logging.disable(logging.WARNING)
    manager = AlgorithmManager("", "all", "")

    def compare(x: np.ndarray, y: np.ndarray) -> tuple[list[str], list[str]]:
        args = {
            "my_output_dump_file": "L",
            "ground_truth_dump_file": "R",
            "shape_type": utils.get_shape_type(list(x.shape)),
        }
        return manager.compare(x.reshape(-1), y.reshape(-1), args)

    yield compare
    logging.disable(logging.NOTSET)


def _same_cell(ours: str, theirs: str) -> bool:
    if ours == theirs:
        return True
    try:
        a, b = float(ours), float(theirs)
    except ValueError:
        return False
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)


def _check_against(msaccucmp_compare, x: np.ndarray, y: np.ndarray) -> None:
    theirs, their_messages = msaccucmp_compare(x, y)
    scalar = sum(x.shape) == len(x.shape)
    results = compute_metrics(x, y, scalar=scalar, left_path="L", right_path="R")
    for result, cell in zip(results, theirs, strict=True):
        assert _same_cell(result.text, cell), (result.name, result.text, cell)
    assert [r.message for r in results if r.message] == their_messages


FINITE = st.floats(-1e4, 1e4, allow_nan=False, width=32)
ANY = st.floats(width=32)


@oracle
@ignore_runtime_warnings
@settings(max_examples=60, deadline=None)
@given(
    dtype=st.sampled_from([np.float32, np.float16, np.int32, np.float64]),
    data=st.data(),
    n=st.integers(1, 300),
)
def test_same_cells_as_msaccucmp_on_random_tensors(msaccucmp_compare, dtype, data, n):
    x = data.draw(hnp.arrays(np.float32, n, elements=FINITE)).astype(dtype)
    noise = data.draw(hnp.arrays(np.float32, n, elements=st.floats(-1, 1, width=32)))
    y = (x.astype(np.float64) + noise).astype(dtype)
    _check_against(msaccucmp_compare, x, y)


@oracle
@ignore_runtime_warnings
@settings(max_examples=40, deadline=None)
@given(
    x=hnp.arrays(np.float32, st.integers(1, 40), elements=ANY),
    data=st.data(),
)
def test_same_cells_as_msaccucmp_with_nan_inf_and_zeros(msaccucmp_compare, x, data):
    y = data.draw(hnp.arrays(np.float32, x.shape, elements=ANY | st.just(0.0)))
    _check_against(msaccucmp_compare, x, y)


@oracle
@ignore_runtime_warnings
@pytest.mark.parametrize(
    ("x", "y"),
    [
        (np.zeros(5, F32), np.zeros(5, F32)),
        (np.zeros(5, F32), np.arange(5, dtype=F32)),
        (np.array([True, False]), np.array([False, False])),
        (np.array([], F32), np.array([], F32)),
        (np.full((1, 1), 3, F32), np.full((1, 1), 2, F32)),
        (np.arange(200000, dtype=F32) / 7, np.arange(200000, dtype=F32) / 7 + 0.5),
    ],
)
def test_same_cells_as_msaccucmp_on_edge_cases(msaccucmp_compare, x, y):
    _check_against(msaccucmp_compare, x, y)
