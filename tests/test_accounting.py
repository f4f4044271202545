"""Accounting: classical constant, exact Gaussian privacy profile, D*(ε, δ)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import integrate, stats

from distpriv import (
    AssumptionWarning,
    ParameterError,
    ParameterTypeError,
    gaussian_constant,
    gaussian_delta,
    gaussian_epsilon,
    max_mahalanobis_distance,
)


def hockey_stick(epsilon: float, distance: float) -> float:
    """δ(ε) = ∫ max(0, p(x) − e^ε q(x)) dx for p = N(0,1), q = N(D,1), by quadrature.

    An implementation independent of the closed form: the integrand is positive exactly
    for x < D/2 − ε/D, so integrate the difference over that half-line.
    """
    cut = distance / 2 - epsilon / distance
    val, _ = integrate.quad(
        lambda x: stats.norm.pdf(x) - math.exp(epsilon) * stats.norm.pdf(x - distance),
        -np.inf,
        cut,
        epsabs=1e-15,
        epsrel=1e-10,
    )
    return val


def test_analytic_and_classical_values_at_one_and_1e3():
    analytic = max_mahalanobis_distance(epsilon=1.0, delta=1e-3)
    assert analytic == pytest.approx(0.3884, abs=5e-5)
    with pytest.warns(AssumptionWarning, match="epsilon < 1"):
        classical = max_mahalanobis_distance(epsilon=1.0, delta=1e-3, calibration="classical")
    assert classical == pytest.approx(0.2648, abs=5e-5)
    assert gaussian_delta(analytic, epsilon=1.0) == pytest.approx(1e-3, rel=1e-9)


def test_design_note_classical_under_noises_at_large_epsilon():
    # docs/architecture.md §4: at ε = 10, δ = 1e-3 the classical constant allows 2.648 where the
    # exact limit is 2.463 — the classical noise is too small there.
    with pytest.warns(AssumptionWarning):
        classical = max_mahalanobis_distance(epsilon=10.0, delta=1e-3, calibration="classical")
    exact = max_mahalanobis_distance(epsilon=10.0, delta=1e-3)
    assert classical == pytest.approx(2.648, abs=5e-4)
    assert exact == pytest.approx(2.463, abs=5e-4)
    assert gaussian_delta(classical, epsilon=10.0) > 1e-3


def test_classical_constant():
    assert gaussian_constant(1e-3) == pytest.approx(math.sqrt(2 * math.log(1250)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning below ε = 1
        d = max_mahalanobis_distance(epsilon=0.5, delta=1e-5, calibration="classical")
    assert d == pytest.approx(0.5 / gaussian_constant(1e-5))


@given(
    eps=st.floats(0.01, 30.0),
    dist=st.floats(0.05, 12.0),
)
def test_gaussian_delta_matches_quadrature(eps, dist):
    exact = gaussian_delta(dist, epsilon=eps)
    ref = hockey_stick(eps, dist)
    assert exact == pytest.approx(ref, rel=1e-6, abs=1e-13)


@given(
    eps=st.floats(0.001, 60.0),
    log_delta=st.floats(math.log(1e-15), math.log(0.5)),
)
def test_root_is_accurate(eps, log_delta):
    delta = math.exp(log_delta)
    d = max_mahalanobis_distance(epsilon=eps, delta=delta)
    assert gaussian_delta(d, epsilon=eps) == pytest.approx(delta, rel=1e-9)
    # D* is the largest admissible distance: slightly beyond it δ(ε) exceeds δ.
    assert gaussian_delta(d * (1 + 1e-6), epsilon=eps) > delta
    if eps < 1:  # the classical constant is valid, so never larger than exact
        assert eps / gaussian_constant(delta) <= d


def test_log_space_stability_large_epsilon_tiny_delta():
    # Direct evaluation Φ(a) − e^ε Φ(b) underflows/cancels here; log space does not.
    d = max_mahalanobis_distance(epsilon=200.0, delta=1e-300)
    val = gaussian_delta(d, epsilon=200.0)
    assert val == pytest.approx(1e-300, rel=1e-9)
    assert np.isfinite(d) and d > 0
    assert gaussian_delta(0.0, epsilon=5.0) == 0.0


def test_gaussian_delta_monotone_and_vectorised():
    ds = np.linspace(0.0, 8.0, 50)
    vals = gaussian_delta(ds, epsilon=1.0)
    assert vals.shape == ds.shape
    assert np.all(np.diff(vals) > 0)
    assert np.all((vals >= 0) & (vals < 1))


@given(eps=st.floats(0.05, 20.0), log_delta=st.floats(math.log(1e-12), math.log(0.3)))
def test_gaussian_epsilon_inverts_profile(eps, log_delta):
    delta = math.exp(log_delta)
    d = max_mahalanobis_distance(epsilon=eps, delta=delta)
    assert gaussian_epsilon(d, delta=delta) == pytest.approx(eps, rel=1e-7)


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"epsilon": 0.0, "delta": 1e-3}, ParameterError, "epsilon"),
        ({"epsilon": -1.0, "delta": 1e-3}, ParameterError, "epsilon"),
        ({"epsilon": float("nan"), "delta": 1e-3}, ParameterError, "epsilon.*nan"),
        ({"epsilon": float("inf"), "delta": 1e-3}, ParameterError, "epsilon.*inf"),
        ({"epsilon": "1", "delta": 1e-3}, ParameterTypeError, "epsilon"),
        ({"epsilon": True, "delta": 1e-3}, ParameterTypeError, "epsilon"),
        ({"epsilon": 1.0, "delta": 0.0}, ParameterError, "delta"),
        ({"epsilon": 1.0, "delta": 1.0}, ParameterError, "delta"),
        ({"epsilon": 1.0, "delta": -0.1}, ParameterError, "delta"),
        ({"epsilon": 1.0, "delta": float("nan")}, ParameterError, "delta"),
        ({"epsilon": 1.0, "delta": 1e-3, "calibration": "exact"}, ParameterError, "calibration"),
    ],
)
def test_bad_parameters(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        max_mahalanobis_distance(**kwargs)


def test_errors_are_builtin_subclasses():
    with pytest.raises(ValueError):
        gaussian_constant(0.0)
    with pytest.raises(TypeError):
        gaussian_constant(None)
    with pytest.raises(ParameterError, match="distance"):
        gaussian_delta(-1.0, epsilon=1.0)
    with pytest.raises(ParameterError, match="distance"):
        gaussian_delta(float("nan"), epsilon=1.0)
