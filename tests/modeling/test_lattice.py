"""Lattice detection: counts, sums and means found exactly; continuous refused."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adult_setup import ADULT_QUERY, adult_income_model
from distpriv.errors import ParameterError
from distpriv.modeling import Query
from distpriv.modeling.lattice import detect_lattice, lattice_steps, query_lattices


def test_counts_sums_and_means_of_integer_data():
    rng = np.random.default_rng(0)
    counts = rng.binomial(100, 0.3, 500).astype(float)
    assert detect_lattice(counts).step == 1.0
    # Sums of a column whose values are multiples of 5 (e.g. rounded hours).
    sums = (5 * rng.integers(0, 20, (400, 30))).sum(axis=1).astype(float)
    assert detect_lattice(sums).step == 5.0
    # Means of integer columns over n rows, computed in floats as sum / n.
    for n in (7, 100, 999):
        means = rng.integers(17, 90, (300, n)).sum(axis=1) / n
        lat = detect_lattice(means)
        assert lat.step == float(Fraction(1, n)), (n, lat)
        assert lat.source == "values" and f"1/{n}" in lat.detail
    # Means of one-decimal columns (hospital-like) over 50 rows: step 0.1 / 50 = 0.002.
    dec = np.round(rng.normal(70, 5, (300, 50)), 1).mean(axis=1)
    assert detect_lattice(dec).step == 0.002


def test_offset_lattice_reports_origin():
    x = 0.25 + 3 * np.arange(20.0)
    lat = detect_lattice(x)
    assert lat.step == 3.0 and lat.origin == pytest.approx(0.25)


def test_continuous_values_are_refused():
    rng = np.random.default_rng(1)
    for x in (rng.normal(size=50), rng.normal(40, 3, size=3), rng.uniform(0, 1e6, 200)):
        lat = detect_lattice(x)
        assert lat.step is None and not lat.on_lattice
        assert "not on a lattice" in lat.detail
    # A grid value disturbed by more than the float tolerance is not on the grid.
    means = rng.integers(0, 50, (200, 100)).sum(axis=1) / 100
    assert detect_lattice(means + rng.normal(0, 1e-7, means.shape)).step is None


def test_too_few_constant_or_bad_values_are_refused():
    assert "constant" in detect_lattice([3.0, 3.0, 3.0]).detail
    assert "distinct" in detect_lattice([1.0, 2.0]).detail
    assert "finite" in detect_lattice([1.0, np.nan, 2.0]).detail
    assert detect_lattice([]).step is None
    with pytest.raises(ParameterError, match="ulps"):
        detect_lattice([1.0, 2.0, 3.0], ulps=0)


@settings(max_examples=60, deadline=None)
@given(
    ints=st.lists(st.integers(-(10**6), 10**6), min_size=3, max_size=40, unique=True),
    n=st.integers(1, 5000),
)
def test_means_of_integers_match_exact_gcd(ints, n):
    # Reference: the exact gcd of the integer differences, over n (pure integer arithmetic).
    g = 0
    for k in ints[1:]:
        g = math.gcd(g, k - ints[0])
    step = Fraction(g, n)
    lat = detect_lattice(np.array(ints, dtype=float) / n)
    assert lat.step == float(step)


def test_query_lattices_from_declared_types():
    rng = np.random.default_rng(2)
    frame = pd.DataFrame(
        {
            "age": rng.integers(17, 90, 500),
            "hours": 5 * rng.integers(1, 20, 500),
            "height": np.round(rng.normal(170, 8, 500), 1),
            "income": rng.normal(5e4, 1e4, 500),
            "sex": rng.choice(["F", "M"], 500),
        }
    )
    q = Query(
        {
            "n_f": "count_if(sex = 'F')",
            "avg_age": "avg(age)",
            "sum_hours": "sum(hours)",
            "avg_height": "avg(height)",
            "avg_income": "avg(income)",
        }
    )
    lats = query_lattices(frame, q, 100)
    got = {lat.statistic: lat for lat in lats}
    assert got["n_f"].step == 1.0 and "sum over 100 rows" in got["n_f"].detail
    assert got["avg_age"].step == 0.01 and "mean over 100 rows" in got["avg_age"].detail
    assert got["sum_hours"].step == 5.0
    assert got["avg_height"].step == pytest.approx(0.001, rel=1e-12)
    assert got["avg_income"].step is None and "not on a lattice" in got["avg_income"].detail
    assert all(lat.source == "declared" for lat in lats)
    steps = lattice_steps(lats)
    assert np.isnan(steps[4]) and steps[0] == 1.0
    for lat in lats:
        assert set(lat.to_dict()) == {"statistic", "step", "origin", "source", "detail"}


def test_adult_lattices_from_table_and_from_samples_agree(adult_modeling):
    declared = lattice_steps(query_lattices(adult_modeling, ADULT_QUERY, 100))
    mc = adult_income_model(adult_modeling, method="montecarlo", n_samples=500, quiet=True)
    pooled = np.vstack(mc.samples)
    observed = [detect_lattice(pooled[:, k]).step for k in range(pooled.shape[1])]
    assert declared.tolist() == [0.01, 0.01, 1.0, 1.0, 0.01]
    assert observed == declared.tolist()


def test_decoder_detection_is_the_floors_detection_per_column():
    # One definition of "on a lattice" for the floors and the decoder: the
    # decoder's per-column steps are detect_lattice's, and one continuous column refuses all.
    from distpriv.modeling.lattice import detect_lattice, detect_sample_lattice

    rng = np.random.default_rng(3)
    counts = rng.integers(0, 60, 400).astype(float)
    means = rng.integers(2000, 9000, 400) / 100.0
    x = np.column_stack([counts, means])
    origin, steps = detect_sample_lattice([x[:200], x[200:]])
    for k in range(2):
        lat = detect_lattice(x[:, k], min_distinct=2)
        assert steps[k] == lat.step
        # the origin is a lattice point of every value of the column
        r = (x[:, k] - origin[k]) / steps[k]
        assert np.max(np.abs(r - np.round(r))) < 1e-9
    np.testing.assert_allclose(steps, [1.0, 0.01], rtol=1e-12)
    continuous = np.column_stack([counts, rng.normal(size=400)])
    assert detect_sample_lattice([continuous]) is None
    assert detect_sample_lattice([np.column_stack([counts, np.full(400, 2.5)])]) is None
