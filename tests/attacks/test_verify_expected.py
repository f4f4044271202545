"""Expected hits (Rao–Blackwellised counts) and their empirical-Bernstein bound, against
known truths: simulated coverage, brute-force noise draws and exact Gaussian probabilities."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from distpriv import ParameterError
from distpriv.attacks.verify_expected import (
    HalfSpace,
    RunningMoments,
    choose_threshold,
    empirical_bernstein,
    fit_halfspace,
)

E = math.e


@given(
    st.lists(st.floats(-3.0, 1.0), min_size=1, max_size=60),
    st.integers(1, 7),
)
@settings(max_examples=60, deadline=None)
def test_running_moments_merge_equals_numpy_on_the_whole_stream(values, cut):
    x = np.array(values)
    mom = RunningMoments()
    for part in np.array_split(x, min(cut, x.size)):
        mom = mom.add(part)
    assert mom.n == x.size
    assert mom.mean == pytest.approx(float(np.mean(x)), abs=1e-12)
    ref = float(np.var(x, ddof=1)) if x.size > 1 else 0.0
    assert mom.variance == pytest.approx(ref, rel=1e-9, abs=1e-12)


def test_the_bound_is_maurer_pontil_theorem_4_computed_by_hand():
    x = np.random.default_rng(0).uniform(-E, 1.0, 500)
    lo, hi = empirical_bernstein(RunningMoments().add(x), low=-E, high=1.0, alpha=0.01)
    n, v, log_term = x.size, np.var(x, ddof=1), math.log(2 / 0.01)
    width = math.sqrt(2 * v * log_term / n) + 7 * (1 + E) * log_term / (3 * (n - 1))
    assert lo == pytest.approx(x.mean() - width) and hi == pytest.approx(x.mean() + width)
    with pytest.raises(ParameterError, match="alpha"):
        empirical_bernstein(RunningMoments().add(x), low=0.0, high=1.0, alpha=1.5)
    with pytest.raises(ParameterError, match="high"):
        empirical_bernstein(RunningMoments().add(x), low=1.0, high=1.0, alpha=0.1)


@pytest.mark.parametrize(
    ("law", "truth"),
    [
        # a skewed [0, 1] law with a small mean: Beta(0.3, 8)
        (lambda g, n: g.beta(0.3, 8.0, n), 0.3 / 8.3),
        # a two-point law at the ends of [0, 1] (the worst case for the variance term)
        (lambda g, n: (g.uniform(size=n) < 0.02).astype(float), 0.02),
    ],
)
def test_coverage_by_simulation_at_least_the_stated_level(law, truth):
    g = np.random.default_rng(1)
    reps, n, alpha = 4000, 300, 0.1
    miss_lo = miss_hi = 0
    for _ in range(reps):
        lo, hi = empirical_bernstein(RunningMoments().add(law(g, n)), low=0, high=1, alpha=alpha)
        miss_lo += lo > truth
        miss_hi += hi < truth
    # Each side errs at most alpha; the count of errors is binomial: 3 sd above is a
    # failure of the bound, not sampling noise.
    slack = 3 * math.sqrt(alpha * (1 - alpha) / reps)
    assert miss_lo / reps <= alpha + slack and miss_hi / reps <= alpha + slack


def _gaussian_case():
    mu = [np.array([0.0, 0.0]), np.array([0.6, -0.3])]
    cov_f = [np.array([[1.0, 0.2], [0.2, 0.8]]), np.array([[1.1, 0.1], [0.1, 0.9]])]
    cov_z = np.array([[4.0, 1.0], [1.0, 3.0]])
    return mu, cov_f, cov_z


def _exact_p(hs: HalfSpace, mu, cov_f, cov_z) -> float:
    """P(a·(f + Z) > t) for f ~ N(mu, cov_f): a·(f + Z) is normal."""
    a = hs.direction
    return float(stats.norm.sf(hs.threshold, loc=a @ mu, scale=math.sqrt(a @ (cov_f + cov_z) @ a)))


def test_expected_hits_against_brute_force_noise_draws_and_the_exact_probability():
    mu, cov_f, cov_z = _gaussian_case()
    g = np.random.default_rng(2)
    fit = [g.multivariate_normal(mu[k], cov_f[k], 4000) for k in (0, 1)]
    hs = fit_halfspace(fit[1], fit[0], cov_z)
    assert hs.noise_sd == 1.0 and hs.direction @ cov_z @ hs.direction == pytest.approx(1.0)
    hs = HalfSpace(hs.direction, 0.7, 1.0)
    # per dataset: the conditional probability against 200,000 noise draws
    f = g.multivariate_normal(mu[1], cov_f[1], 5)
    z = g.multivariate_normal(np.zeros(2), cov_z, 200_000)
    for row, h in zip(f, hs.expected_hits(f), strict=True):
        brute = np.mean((row + z) @ hs.direction > hs.threshold)
        assert abs(brute - h) < 4 * math.sqrt(h * (1 - h) / z.shape[0]) + 1e-9
    # the average over datasets: unbiased for the exact P(S)
    for k in (0, 1):
        h = hs.expected_hits(g.multivariate_normal(mu[k], cov_f[k], 200_000))
        exact = _exact_p(hs, mu[k], cov_f[k], cov_z)
        assert abs(h.mean() - exact) < 4 * h.std() / math.sqrt(h.size)
        # and far less variable than the 0/1 hit it replaces
        assert h.var() < 0.5 * exact * (1 - exact)


def test_coverage_of_the_delta_bound_on_a_gaussian_pair_with_known_truth():
    mu, cov_f, cov_z = _gaussian_case()
    g = np.random.default_rng(3)
    hs = fit_halfspace(
        g.multivariate_normal(mu[1], cov_f[1], 4000),
        g.multivariate_normal(mu[0], cov_f[0], 4000),
        cov_z,
    )
    hs, _ = choose_threshold(
        hs,
        g.multivariate_normal(mu[1], cov_f[1], 4000),
        g.multivariate_normal(mu[0], cov_f[0], 4000),
        1.0,
    )
    truth = _exact_p(hs, mu[1], cov_f[1], cov_z) - E * _exact_p(hs, mu[0], cov_f[0], cov_z)
    reps, n, alpha = 1500, 400, 0.1
    misses = 0
    for _ in range(reps):
        d = hs.expected_hits(g.multivariate_normal(mu[1], cov_f[1], n)) - E * hs.expected_hits(
            g.multivariate_normal(mu[0], cov_f[0], n)
        )
        lo, _ = empirical_bernstein(RunningMoments().add(d), low=-E, high=1.0, alpha=alpha)
        misses += lo > truth
    assert misses / reps <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / reps)


def test_a_direction_the_noise_misses_counts_hits_of_the_statistics():
    f = np.array([[0.0, 1.0], [0.0, -1.0], [0.0, 3.0]])
    cov_z = np.diag([1.0, 0.0])  # noise only on the first statistic
    fit_a = np.column_stack([np.zeros(50), np.linspace(1, 2, 50)])
    fit_b = np.column_stack([np.zeros(50), np.linspace(-2, -1, 50)])
    hs = fit_halfspace(fit_a, fit_b, cov_z)
    assert hs.noise_sd == 0.0
    h = HalfSpace(hs.direction, 0.0, 0.0).expected_hits(f)
    assert h.tolist() == [1.0, 0.0, 1.0]
