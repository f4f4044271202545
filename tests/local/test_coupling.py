"""The coupling mechanism (KM 2019b): exact knowledge, Thm 3 bounds, W1/W∞ optimality."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog
from scipy.stats import wasserstein_distance

from distpriv.distances import winf_distance
from distpriv.errors import ParameterError, ParameterTypeError
from distpriv.local import (
    Domain,
    coupling_guarantee,
    coupling_mechanism,
    distp_profile,
    north_west_corner,
    optimal_coupling,
)

from .helpers import random_domain


def lp_w1(a, b, cost):
    """W1 by a dense linear program over the full coupling (independent of POT)."""
    n, m = cost.shape
    a_eq = np.zeros((n + m, n * m))
    for i in range(n):
        a_eq[i, i * m : (i + 1) * m] = 1
    for j in range(m):
        a_eq[n + j, j::m] = 1
    res = linprog(
        cost.ravel(), A_eq=a_eq, b_eq=np.concatenate([a, b]), bounds=(0, None), method="highs"
    )
    return res.fun


def test_exact_knowledge_outputs_the_target():
    rng = np.random.default_rng(1)
    dom = random_domain(rng, 7, 9)
    lams = rng.dirichlet(np.ones(7), size=2)
    mu = rng.dirichlet(np.ones(9))
    for method in ("emd", "winf"):
        cm = coupling_mechanism(dom, lams, mu, method=method)
        for s in (0, 1):
            np.testing.assert_allclose(cm.lift(lams[s], s), mu, atol=1e-12)
            np.testing.assert_allclose(cm.couplings[s].sum(axis=1), lams[s], atol=1e-12)
        div = distp_profile(cm, lams[0], lams[1]).divergences(0.0)
        for name in ("dinf", "kl", "tv", "chi2", "hellinger"):
            assert div.worst(name) == pytest.approx(0.0, abs=1e-9)
        g = coupling_guarantee(lams, lams)
        assert g.closeness == 0.0 and all(v == 0.0 for v in g.bounds.values())


def test_default_target_is_the_mixture():
    dom = Domain(np.arange(5, dtype=float).reshape(-1, 1))
    lams = np.array([[0.6, 0.4, 0, 0, 0], [0, 0, 0, 0.5, 0.5]])
    cm = coupling_mechanism(dom, lams)
    np.testing.assert_allclose(cm.target, lams.mean(axis=0))
    assert cm.method == "nwc"  # 1-D: north-west corner
    # Barycentre: the two losses add up to W1(λ̂₀, λ̂₁).
    total = cm.expected_loss(lams[0], 0) + cm.expected_loss(lams[1], 1)
    assert total == pytest.approx(
        wasserstein_distance(np.arange(5), np.arange(5), lams[0], lams[1])
    )


@settings(max_examples=25)
@given(st.integers(0, 2**31), st.floats(0.01, 0.5))
def test_thm3_bounds_hold_with_approximate_knowledge(seed, eps):
    rng = np.random.default_rng(seed)
    dom = random_domain(rng, 6, 5)
    lams = rng.dirichlet(np.ones(6), size=2)
    # Estimates within a factor e^{±ε/2} before renormalising: D∞ both ways ≤ ε.
    hats = lams * np.exp(rng.uniform(-eps / 2, eps / 2, size=lams.shape))
    hats /= hats.sum(axis=1, keepdims=True)
    g = coupling_guarantee(hats, lams)
    assert g.closeness <= eps + 1e-12
    cm = coupling_mechanism(dom, hats, rng.dirichlet(np.ones(5)))
    div = distp_profile(cm, lams[0], lams[1]).divergences(0.0)
    for name in ("dinf", "kl", "tv", "chi2", "hellinger"):
        assert div.worst(name) <= g.bounds[name] + 1e-12, name
    c = g.closeness
    assert g.bounds["dinf"] == pytest.approx(2 * c)
    assert g.bounds["kl"] == pytest.approx(2 * c * math.exp(c))
    assert g.bounds["tv"] == pytest.approx(math.exp(c) * 0.5 * (math.exp(2 * c) - 1))


def test_utility_optimal_loss_is_w1_computed_independently():
    rng = np.random.default_rng(4)
    dom = random_domain(rng, 6, 7)
    hats = rng.dirichlet(np.ones(6), size=2)
    mu = rng.dirichlet(np.ones(7))
    cm = coupling_mechanism(dom, hats, mu, method="emd")
    for s in (0, 1):
        assert cm.expected_loss(hats[s], s) == pytest.approx(
            lp_w1(hats[s], mu, dom.distances), abs=1e-9
        )


def test_north_west_corner_on_a_line():
    rng = np.random.default_rng(5)
    x = np.sort(rng.uniform(0, 10, 8))
    y = np.sort(rng.uniform(0, 10, 6))
    a, b = rng.dirichlet(np.ones(8)), rng.dirichlet(np.ones(6))
    gamma = north_west_corner(a, b)
    np.testing.assert_allclose(gamma.sum(axis=1), a, atol=1e-12)
    np.testing.assert_allclose(gamma.sum(axis=0), b, atol=1e-12)
    cost = np.abs(x[:, None] - y[None, :])
    assert (gamma * cost).sum() == pytest.approx(wasserstein_distance(x, y, a, b))
    assert (gamma * cost).sum() == pytest.approx((optimal_coupling(a, b, cost) * cost).sum())
    # Through the mechanism on an unsorted 1-D domain.
    perm = rng.permutation(8)
    dom = Domain(x[perm].reshape(-1, 1), y.reshape(-1, 1))
    cm = coupling_mechanism(dom, a[perm][None, :], b)
    assert cm.expected_loss(a[perm], 0) == pytest.approx(wasserstein_distance(x, y, a, b))


def test_winf_coupling_minimises_the_largest_move():
    rng = np.random.default_rng(6)
    dom = random_domain(rng, 6, 6)
    hats = rng.dirichlet(np.ones(6), size=1)
    mu = rng.dirichlet(np.ones(6))
    cw = coupling_mechanism(dom, hats, mu, method="winf")
    ce = coupling_mechanism(dom, hats, mu, method="emd")
    w = winf_distance(dom.inputs, dom.outputs, u_weights=hats[0], v_weights=mu, metric="l2")
    worst = dom.distances[cw.couplings[0] > 1e-12].max()
    assert worst == pytest.approx(w) and cw.winf == (pytest.approx(w),)
    assert worst <= dom.distances[ce.couplings[0] > 1e-12].max() + 1e-12
    # … and pays for it in expectation at most as W1 allows (never below it).
    assert cw.expected_loss(hats[0], 0) >= ce.expected_loss(hats[0], 0) - 1e-12
    assert cw.name == "coupling-winf"


def test_sampler_and_zero_estimate_rows():
    dom = Domain(np.arange(3, dtype=float).reshape(-1, 1))
    cm = coupling_mechanism(dom, [[0.5, 0.5, 0.0]], [0.2, 0.3, 0.5], method="emd")
    np.testing.assert_allclose(cm.matrices[0][2], [0.2, 0.3, 0.5])  # λ̂[x] = 0: output μ
    y = cm.sample(0, np.zeros(50_000, dtype=int), rng=0)
    freq = np.bincount(y, minlength=3) / y.size
    np.testing.assert_allclose(freq, cm.matrices[0][0], atol=0.01)


def test_bad_input():
    dom = Domain(np.arange(3, dtype=float).reshape(-1, 1))
    with pytest.raises(ParameterError, match="estimates must sum to 1"):
        coupling_mechanism(dom, [[0.5, 0.6, 0.0]])
    with pytest.raises(ParameterError, match="target must be non-negative"):
        coupling_mechanism(dom, [[0.5, 0.5, 0.0]], [1.5, -0.5, 0.0])
    with pytest.raises(ParameterError, match="method must be one of"):
        coupling_mechanism(dom, [[0.5, 0.5, 0.0]], method="sinkhorn")
    plane = random_domain(np.random.default_rng(0), 3)
    with pytest.raises(ParameterError, match="only on a line"):
        coupling_mechanism(plane, [[0.5, 0.5, 0.0]], method="nwc")
    with pytest.raises(ParameterTypeError):
        coupling_mechanism("domain", [[1.0]])
    cm = coupling_mechanism(dom, [[0.5, 0.5, 0.0], [0.2, 0.2, 0.6]], labels=["a", "b"])
    assert cm.mechanism("b") is cm.mechanism(1)
    with pytest.raises(ParameterError, match="state must be"):
        cm.lift([1.0, 0.0, 0.0], 2)
    with pytest.raises(ParameterError, match="same shape"):
        coupling_guarantee([[0.5, 0.5]], [[0.5, 0.5], [0.5, 0.5]])
    g = coupling_guarantee([[0.5, 0.5, 0.0]], [[0.4, 0.4, 0.2]])
    assert g.closeness == math.inf and g.bounds["kl"] == math.inf
