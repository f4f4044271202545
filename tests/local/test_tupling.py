"""The tupling mechanism: Monte Carlo against exact enumeration, Thm 3, loss, bad input."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from distpriv.errors import ParameterError, ParameterTypeError
from distpriv.local import (
    Domain,
    bayes_attack,
    matrix_mechanism,
    restricted_laplace,
    theorem3_bound,
    tupling_bound,
    tupling_distp,
    tupling_exact,
    tupling_mechanism,
    tupling_monte_carlo,
)

from .helpers import random_domain

DELTAS = (0.001, 0.01, 0.1)


@pytest.fixture(scope="module")
def six():
    """|Y| = 6, k = 2: 216 tuples, small enough to enumerate."""
    rng = np.random.default_rng(2019)
    dom = random_domain(rng, 6)
    tm = tupling_mechanism(restricted_laplace(dom, epsilon=1.0, radius=1.5), k=2)
    lam0, lam1 = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
    return tm, lam0, lam1, tupling_exact(tm, lam0, lam1)


def test_exact_distribution_matches_algorithm_1(six):
    tm, lam0, _, exact = six
    assert exact.mu0.size == 6**3 and exact.mu0.sum() == pytest.approx(1.0)
    # Sample Alg. 1 directly (x ~ λ₀, then the mechanism) and compare tuple frequencies.
    rng = np.random.default_rng(1)
    x = rng.choice(6, size=300_000, p=lam0)
    t = tm.sample(x, rng)
    assert t.shape == (x.size, 3)
    flat = t[:, 0] * 36 + t[:, 1] * 6 + t[:, 2]
    counts = np.bincount(flat, minlength=216)
    keep = exact.mu0 * x.size > 5
    assert (
        chisquare(
            counts[keep],
            exact.mu0[keep] * x.size * counts[keep].sum() / (exact.mu0[keep] * x.size).sum(),
        ).pvalue
        > 1e-4
    )
    # The likelihood ratio of a tuple is Σ A#(λ₀)[y_i] / Σ A#(λ₁)[y_i] (docs/architecture.md §4).
    tuples = np.array(list(itertools.product(range(6), repeat=3)))
    lr = tm.likelihood_ratio(tuples, six[1], six[2])
    np.testing.assert_allclose(lr, exact.mu0 / exact.mu1, rtol=1e-10)


def test_monte_carlo_agrees_with_enumeration(six):
    tm, lam0, lam1, exact = six
    mc = tupling_monte_carlo(tm, lam0, lam1, n_samples=200_000, rng=11)
    for d in DELTAS:
        est = mc.epsilon(d)
        truth = exact.epsilon(d)
        assert est.low <= truth <= est.high, (d, est, truth)
        assert est.high - est.low < 0.15
    assert mc.epsilon_pure == pytest.approx(exact.epsilon(0.0))
    assert mc.epsilon(0.0).method == "exact"
    # δ(ε) and its interval at a fixed ε.
    est, lo, hi = mc.delta(0.5)
    assert lo <= exact.delta(0.5) <= hi
    # Divergences within 5 standard errors; the Bayes attack within its interval.
    div, ex = mc.divergences(), exact.divergences()
    for name in ("kl", "tv", "hellinger", "chi2"):
        assert abs(div.forward[name] - ex.forward[name]) <= 5 * max(div.errors[name], 1e-12) + 1e-12
    json.dumps(mc.to_dict(), allow_nan=False)
    assert mc.to_dict()["epsilon"][0]["low"] == mc.epsilon(0.001).low
    att, att_ex = mc.attack(), bayes_attack(exact.mu0, exact.mu1)
    assert att.success_interval[0] <= att_ex.success_rate <= att.success_interval[1]
    assert att.accuracy_interval[0] <= att_ex.accuracy <= att.accuracy_interval[1]


def test_interval_width_follows_the_sample_size(six):
    tm, lam0, lam1, _ = six
    widths = []
    for n in (20_000, 320_000):
        est = tupling_distp(tm, lam0, lam1, delta=0.01, n_samples=n, rng=5)
        widths.append(est.high - est.low)
    # 16 times the samples: about a quarter of the width (√n law), certainly under half.
    assert widths[1] < 0.5 * widths[0]


def test_non_uniform_dummies_monte_carlo_against_exact():
    rng = np.random.default_rng(8)
    base = matrix_mechanism(rng.dirichlet(np.ones(4), size=3))
    nu = np.array([0.1, 0.2, 0.3, 0.4])
    tm = tupling_mechanism(base, k=3, dummy=nu)
    lam0, lam1 = np.array([0.7, 0.2, 0.1]), np.array([0.1, 0.3, 0.6])
    exact = tupling_exact(tm, lam0, lam1)
    mc = tupling_monte_carlo(tm, lam0, lam1, n_samples=100_000, rng=3)
    for d in (0.01, 0.1):
        est = mc.epsilon(d)
        assert est.low <= exact.epsilon(d) <= est.high
    assert not tm.uniform_dummies
    bound = tupling_bound(tm, lam0, lam1, delta=0.1)
    assert bound.assumptions[0].holds is False


def test_more_dummies_smaller_epsilon():
    # Exactly on a small instance …
    rng = np.random.default_rng(12)
    base = matrix_mechanism(rng.dirichlet(np.full(4, 0.5), size=4))
    lam0, lam1 = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(4))
    eps = [
        tupling_exact(tupling_mechanism(base, k=k), lam0, lam1).epsilon(0.05) for k in range(1, 7)
    ]
    assert np.all(np.diff(eps) <= 1e-12) and eps[-1] < eps[0]
    # … and within the Monte Carlo intervals on a larger one.
    dom = random_domain(rng, 30, 40)
    rl = restricted_laplace(dom, epsilon=2.0, radius=1.0)
    l0, l1 = rng.dirichlet(np.full(30, 0.5)), rng.dirichlet(np.full(30, 0.5))
    ests = [
        tupling_distp(tupling_mechanism(rl, k=k), l0, l1, delta=0.01, n_samples=50_000, rng=k)
        for k in (1, 4, 16)
    ]
    for a, b in itertools.pairwise(ests):
        assert b.low <= a.high  # monotone within noise
    assert ests[-1].high < ests[0].low  # and clearly smaller overall


@st.composite
def thm3_cases(draw):
    n_y = draw(st.integers(2, 4))
    k = draw(st.integers(1, 12 if n_y == 2 else (8 if n_y == 3 else 6)))
    n_x = draw(st.integers(2, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    conc = draw(st.sampled_from([0.3, 1.0, 5.0]))
    base = matrix_mechanism(rng.dirichlet(np.full(n_y, conc), size=n_x))
    lam0, lam1 = rng.dirichlet(np.full(n_x, conc)), rng.dirichlet(np.full(n_x, conc))
    delta = draw(st.sampled_from([0.01, 0.05, 0.2, 0.5, 0.9]))
    return tupling_mechanism(base, k=k), lam0, lam1, delta


@settings(max_examples=60)
@given(thm3_cases())
def test_theorem3_bound_never_below_exact(case):
    tm, lam0, lam1, delta = case
    bound = tupling_bound(tm, lam0, lam1, delta=delta)
    exact = tupling_exact(tm, lam0, lam1)
    if math.isfinite(bound.epsilon):
        assert bound.delta <= delta + 1e-12 and bound.eta == 0.0
        assert exact.epsilon(delta) <= bound.epsilon + 1e-9
        # The pair (ε_α, δ_α) itself holds exactly.
        assert exact.delta(bound.epsilon) <= bound.delta + 1e-9
    else:
        assert bound.assumptions[1].holds is None


def test_theorem3_with_eta_as_stated_can_fail():
    """The counterexample of tupling_bound's docstring: η > 0 is not covered by the proof."""
    dom = Domain(np.arange(6, dtype=float).reshape(-1, 1))
    identity = matrix_mechanism(np.eye(6), domain=dom)
    tm = tupling_mechanism(identity, k=2)
    lam0, lam1 = np.eye(6)[0], np.eye(6)[1]
    exact = tupling_exact(tm, lam0, lam1)
    stated = tupling_bound(tm, lam0, lam1, delta=0.5, allow_eta=True)
    assert stated.eta > 0 and stated.assumptions[1].holds is False
    # TV ≥ Pr_{λ₀}[no entry equals 1] = (5/6)² > 0.5, so ε(0.5) > 0.
    assert exact.delta(0.0) >= (5 / 6) ** 2 > 0.5
    assert stated.epsilon < exact.epsilon(0.5)
    sound = tupling_bound(tm, lam0, lam1, delta=0.5)
    assert sound.epsilon == math.inf or sound.epsilon >= exact.epsilon(0.5)


def test_theorem3_formula_and_bad_alpha():
    # Paper's Table 2 setting: k = 10, |Y| = 276, β = 0.0046, η = 0, δ_α = 0.001.
    beta = 0.0045963
    alpha = beta * math.sqrt(10 * math.log(2 / 0.001) / 2)
    eps, delta = theorem3_bound(k=10, n_outputs=276, beta=beta, eta=0.0, alpha=alpha)
    assert eps == pytest.approx(2.170, abs=1e-3) and delta == pytest.approx(0.001)
    for bad in (0.0, 10 / 276, 1.0, -0.1):
        with pytest.raises(ParameterError, match=r"alpha must be in \(0, k/\|Y\|\)"):
            theorem3_bound(k=10, n_outputs=276, beta=beta, eta=0.0, alpha=bad)
    with pytest.raises(ParameterError, match="beta must be <= 1"):
        theorem3_bound(k=10, n_outputs=276, beta=1.5, eta=0.0, alpha=0.01)
    with pytest.raises(ParameterError, match="k must be >= 1"):
        theorem3_bound(k=0, n_outputs=276, beta=0.1, eta=0.0, alpha=0.01)


def test_expected_loss_def11_against_monte_carlo():
    rng = np.random.default_rng(21)
    dom = random_domain(rng, 8, 12)
    tm = tupling_mechanism(restricted_laplace(dom, epsilon=1.0, radius=1.2), k=4)
    lam = rng.dirichlet(np.ones(8))
    exact = tm.expected_loss(lam)
    x = rng.choice(8, size=200_000, p=lam)
    loss = dom.distances[x[:, None], tm.sample(x, rng)].min(axis=1)
    assert abs(loss.mean() - exact) < 5 * loss.std() / math.sqrt(x.size)
    # Dummies can only help: the tuple's loss is at most the base mechanism's.
    assert exact <= tm.base.expected_loss(lam) + 1e-12


def test_bad_input():
    base = matrix_mechanism([[0.5, 0.5], [0.2, 0.8]])
    with pytest.raises(ParameterError, match="k must be >= 1"):
        tupling_mechanism(base, k=0)
    with pytest.raises(ParameterTypeError, match="k must be an integer"):
        tupling_mechanism(base, k=2.5)
    with pytest.raises(ParameterError, match="positive probability"):
        tupling_mechanism(base, k=2, dummy=[1.0, 0.0])
    with pytest.raises(ParameterError, match="dummy must sum to 1"):
        tupling_mechanism(base, k=2, dummy=[0.7, 0.7])
    with pytest.raises(ParameterTypeError):
        tupling_mechanism("rl", k=2)
    tm = tupling_mechanism(base, k=2)
    with pytest.raises(ParameterError, match="lam0 must sum to 1"):
        tupling_monte_carlo(tm, [0.6, 0.6], [0.5, 0.5], n_samples=10)
    with pytest.raises(ParameterError, match="lam1 must be non-negative"):
        tupling_monte_carlo(tm, [0.5, 0.5], [1.5, -0.5], n_samples=10)
    with pytest.raises(ParameterError, match="n_samples must be >= 2"):
        tupling_monte_carlo(tm, [0.5, 0.5], [0.5, 0.5], n_samples=1)
    with pytest.raises(ParameterError, match="delta must be > 0"):
        tupling_bound(tm, [0.5, 0.5], [0.5, 0.5], delta=0.0)
    with pytest.raises(ParameterError, match="max_tuples"):
        tupling_exact(tupling_mechanism(base, k=30), [0.5, 0.5], [0.5, 0.5])
    with pytest.raises(ParameterError, match="tuples must have shape"):
        tm.likelihood_ratio([[0, 1]], [0.5, 0.5], [0.5, 0.5])
