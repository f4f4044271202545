"""The tight set's gap statement in δ's own distance
(population/_direction.py) against independent references.

* With equal covariances δ depends on the gap through its output distance alone: the
  statement must then be the distance statement of population/_tight.py (same member),
  its ∇ψ the distance's gradient M²Δ̂/d̂, and its slope ∂δ/∂ψ the Gaussian profile's
  derivative — here from Balle & Wang's formula written with scipy's normal CDF (not the
  library's log-space code), by a finite difference of its own.
* With different covariances δ depends on the gap's direction too. On a known pair whose
  covariances differ (one direction with 4× the variance of the other, swapped between
  the hypotheses) and a noise along the estimated gap, gap estimates are drawn from their
  law (Monte Carlo, the covariances known): the member's δ must be at least the true δ on
  ≥ 1 − β of the draws within the binomial margin, and miss less often than the distance
  statement's member.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.special import ndtr, ndtri
from scipy.stats import binom

from distpriv.accounting.pair_profile import pair_profiles_unchecked
from distpriv.population._direction import gap_statement
from distpriv.population._stack import inv_sqrt_in_units, sqrt_in_units, unit_coordinates
from distpriv.population._tight import quantile_shift_stack

EPS, BETA = 1.0, 0.05
Z = float(ndtri(1 - BETA))


def _sqrt(a: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eigh(a)
    return (v * np.sqrt(np.clip(w, 0, None))) @ v.T


def _inv_sqrt(a: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eigh(a)
    return (v / np.sqrt(w)) @ v.T


def _pair(mean_i, mean_j, cov_i, cov_j, noise, err_cov):
    """The attributes of population.sets._Pair that the statement reads: one
    stratum whose error covariance is ``err_cov`` (weight 1)."""
    model = SimpleNamespace(means=np.stack([mean_i, mean_j]), covariances=np.stack([cov_i, cov_j]))
    return SimpleNamespace(
        model=model,
        i=0,
        j=1,
        z=Z,
        noise=noise,
        epsilon=EPS,
        err_w=np.array([1.0]),
        c_hat=err_cov[None],
        r=unit_coordinates(model.covariances),  # the pair's decompositions at unit spread
    )


def _bw_delta(d: float, eps: float) -> float:
    """Balle & Wang (2018, Thm 8) with scipy's normal CDF: δ(ε) at Mahalanobis distance d."""
    return float(ndtr(d / 2 - eps / d) - math.exp(eps) * ndtr(-d / 2 - eps / d))


def _delta(mean_i, cov_i, mean_j, cov_j, noise) -> float:
    fwd, bwd = pair_profiles_unchecked(mean_i, cov_i + noise, mean_j, cov_j + noise, EPS, 1e-12)
    return max(fwd.delta, bwd.delta)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equal_covariances_give_the_distance_statement(seed):
    rng = np.random.default_rng(seed)
    m = 4
    a = rng.standard_normal((m, m))
    cov = a @ a.T + m * np.eye(m)
    gap = rng.standard_normal(m) * 2.0
    direction = gap / np.linalg.norm(gap)
    noise = 30.0 * np.outer(direction, direction) + 0.5 * np.eye(m)  # along the gap
    b = rng.standard_normal((m, m))
    err = (b @ b.T + np.eye(m)) * 0.02
    mj = rng.standard_normal(m)
    stmt = gap_statement(_pair(mj + gap, mj, cov, cov, noise, err))
    assert stmt is not None
    metric = _inv_sqrt(cov + noise)
    # The distance statement's member, with the square roots the set takes (at unit spread
    # of each statistic: the fixed design of the quantile is then the same in any units).
    r = unit_coordinates(np.stack([cov, cov]))
    unit_metric, unit_root = inv_sqrt_in_units(cov + noise, r), sqrt_in_units(err, r)
    old = quantile_shift_stack(gap[None], unit_metric[None], unit_root[None], Z)[0]
    np.testing.assert_allclose(stmt.shift, old, rtol=1e-5, atol=1e-8 * np.linalg.norm(gap))
    d_hat = float(np.linalg.norm(metric @ gap))
    np.testing.assert_allclose(stmt.grad_psi, metric @ metric @ gap / d_hat, rtol=1e-5)
    d_member = float(np.linalg.norm(metric @ (gap + stmt.shift)))
    h = 1e-4 * d_member
    slope = (_bw_delta(d_member + h, EPS) - _bw_delta(d_member - h, EPS)) / (2 * h)
    assert stmt.slope == pytest.approx(slope, rel=1e-5)


def test_a_direction_dependent_delta_is_covered():
    """Gap estimates from their law, covariances known, the noise along the *estimated*
    gap (as the floored mechanisms shape it): δ at the member ≥ the true δ on ≥ 1 − β of
    the draws (99.9 % binomial margin), and on fewer draws than the distance statement's
    member misses (measured: 5 against 14 of 200)."""
    m, n = 3, 200
    cov_i = np.diag([4.0, 1.0, 2.0])
    cov_j = np.diag([1.0, 4.0, 2.0])
    gap = np.array([1.5, 1.5, 0.5])
    err = np.diag([0.1, 0.1, 0.05])
    root = _sqrt(err)
    mj = np.zeros(m)
    rng = np.random.default_rng(1)
    miss_new = miss_old = 0
    for _ in range(n):
        est = gap + root @ rng.standard_normal(m)
        u = est / np.linalg.norm(est)
        noise = 6.0 * np.outer(u, u) + 0.3 * np.eye(m)
        true = _delta(mj + gap, cov_i, mj, cov_j, noise)
        stmt = gap_statement(_pair(mj + est, mj, cov_i, cov_j, noise, err))
        assert stmt is not None
        miss_new += _delta(mj + est + stmt.shift, cov_i, mj, cov_j, noise) < true
        metric = _inv_sqrt((cov_i + cov_j) / 2 + noise)
        old = quantile_shift_stack(est[None], metric[None], root[None], Z)[0]
        miss_old += _delta(mj + est + old, cov_i, mj, cov_j, noise) < true
    print(f"misses of {n}: delta statement {miss_new}, distance statement {miss_old}")
    assert miss_new <= int(binom.ppf(0.999, n, BETA))
    assert miss_new < miss_old
