"""distpriv.util.distributions against scipy.stats (the reference it replaces on the cold path)
and, for the tails, against mpmath in extended precision."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from distpriv.util.distributions import GaussianDensity, beta_ppf, binom_sf


def test_beta_ppf_is_scipy_beta_ppf():
    n = 200
    k = np.arange(1, n + 1)
    for q in (1e-9, 0.0125, 0.16, 0.5, 0.84, 0.975, 1 - 1e-9):
        np.testing.assert_allclose(
            beta_ppf(q, k, n - k + 1), stats.beta.ppf(q, k, n - k + 1), rtol=1e-13, atol=0
        )
    # Invalid shapes give NaN, as scipy.stats (the callers mask them).
    assert np.isnan(beta_ppf(0.5, 0.0, 3.0)) and np.isnan(stats.beta.ppf(0.5, 0.0, 3.0))


def test_beta_ppf_inverts_the_incomplete_beta_in_extended_precision():
    mpmath.mp.dps = 40
    for q, a, b in ((0.025, 3, 98), (0.975, 97, 4), (1e-6, 1, 10_000), (0.5, 5000, 5001)):
        x = float(beta_ppf(q, a, b))
        assert float(mpmath.betainc(a, b, 0, x, regularized=True)) == pytest.approx(q, rel=1e-10)


def test_binom_sf_is_scipy_binom_sf():
    p = np.linspace(0.0, 1.0, 201)
    for n, k in ((1, 0), (100, 37), (10_000, 123), (10_000, 9_990), (50, -1), (50, 50)):
        np.testing.assert_allclose(
            binom_sf(k, n, p), stats.binom.sf(k, n, p), rtol=1e-12, atol=1e-300
        )


def test_binom_sf_tail_in_extended_precision():
    mpmath.mp.dps = 50
    n, k, p = 10_000, 60, 0.003
    exact = mpmath.fsum(
        mpmath.binomial(n, j) * p**j * (1 - p) ** (n - j) for j in range(k + 1, n + 1)
    )
    assert float(binom_sf(k, n, p)) == pytest.approx(float(exact), rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(
    m=st.integers(1, 6),
    deficit=st.integers(0, 3),
    seed=st.integers(0, 2**32 - 1),
    log_spread=st.floats(-3, 3),
)
def test_gaussian_density_is_scipy_multivariate_normal(m, deficit, seed, log_spread):
    """Full-rank, singular and badly scaled covariances; points on and off the support."""
    rng = np.random.default_rng(seed)
    rank = max(1, m - deficit)
    factor = rng.normal(size=(m, rank)) * 10.0 ** (log_spread * np.linspace(-1, 1, rank))
    cov = factor @ factor.T
    mean = rng.normal(size=m) * 10
    ref = stats.multivariate_normal(mean, cov, allow_singular=True)
    ours = GaussianDensity(mean, cov)
    on = mean + rng.normal(size=(50, rank)) @ factor.T  # in the support
    off = mean + rng.normal(size=(20, m)) * 3.0  # off it when the rank is deficient
    for x in (on, off):
        expected = np.atleast_1d(ref.logpdf(x))
        got = ours.logpdf(x)
        assert got.shape == (x.shape[0],)
        finite = np.isfinite(expected)
        np.testing.assert_array_equal(np.isfinite(got), finite)
        np.testing.assert_allclose(got[finite], expected[finite], rtol=1e-9, atol=1e-9)


def test_gaussian_density_one_dimension_reads_a_vector_as_points():
    ours, ref = GaussianDensity(np.array([1.0]), np.array([[4.0]])), stats.norm(1.0, 2.0)
    x = np.array([-3.0, 0.0, 1.0, 7.5])
    np.testing.assert_allclose(ours.logpdf(x), ref.logpdf(x), rtol=1e-13)


@pytest.mark.parametrize("seed", range(5))
def test_numpy_eigh_range_agrees_with_scipy_far_below_the_tolerance(seed):
    """Up to the condition number where GaussianDensity uses numpy's eigh (syevd) instead
    of scipy.linalg's (syevr, scipy.stats' own), the densities agree to 1e-11 relative,
    on and far off the mean; above it scipy.linalg's is used (the hypothesis test above
    covers condition numbers to 1e12)."""
    from distpriv.util.distributions import _NUMPY_EIGH_CONDITION

    rng = np.random.default_rng(seed)
    m = 5
    q, _ = np.linalg.qr(rng.normal(size=(m, m)))
    s = np.geomspace(1.0, 0.99 * _NUMPY_EIGH_CONDITION, m) * 10.0 ** rng.uniform(-3, 3)
    cov = (q * s) @ q.T
    cov = (cov + cov.T) / 2
    mean = rng.normal(size=m)
    x = mean + rng.normal(size=(200, m)) * np.sqrt(s.max()) * rng.uniform(0.01, 30, (200, 1))
    ours = GaussianDensity(mean, cov)
    ref = stats.multivariate_normal(mean, cov, allow_singular=True)
    np.testing.assert_allclose(ours.logpdf(x), ref.logpdf(x), rtol=1e-11, atol=0)


def test_gaussian_density_refuses_a_non_finite_matrix():
    """As scipy.stats (scipy.linalg.eigh's check_finite): a NaN or an infinity is an error,
    not a density."""
    for bad in (np.nan, np.inf):
        cov = np.eye(3)
        cov[1, 2] = cov[2, 1] = bad
        with pytest.raises(ValueError, match="infs or NaNs"):
            stats.multivariate_normal(np.zeros(3), cov, allow_singular=True)
        with pytest.raises(ValueError, match="infs or NaNs"):
            GaussianDensity(np.zeros(3), cov)


def test_gaussian_density_refuses_an_indefinite_matrix():
    with pytest.raises(ValueError, match="positive semidefinite"):
        GaussianDensity(np.zeros(2), np.array([[1.0, 0.0], [0.0, -1.0]]))
