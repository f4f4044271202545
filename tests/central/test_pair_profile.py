"""The exact privacy profile of two Gaussians with different covariances.

Checked against an independent Monte Carlo of the privacy loss (random pairs, dimension
1–6, condition numbers up to 1e10, covariances differing by up to 100×), against the
Balle–Wang closed form when the covariances are equal, and on singular supports.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from distpriv import (
    ParameterError,
    gaussian_delta,
    gaussian_pair_delta,
    gaussian_pair_epsilon,
    gaussian_pair_profile,
)
from distpriv.accounting._whitening import _decompose
from distpriv.accounting.pair_profile import _profile_from

from ._mc import mc_delta


def _spd(rng, m, cond):
    q, _ = np.linalg.qr(rng.normal(size=(m, m)))
    return (q * np.geomspace(1.0, cond, m)) @ q.T


def _random_pair(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 7))
    cond = 10.0 ** rng.uniform(0, 10)
    sp = _spd(rng, m, cond) * 10.0 ** rng.uniform(-6, 6)  # arbitrary units
    # Q's covariance: P's, deformed by a random factor of up to 100x per direction.
    q, _ = np.linalg.qr(rng.normal(size=(m, m)))
    root = np.linalg.cholesky(sp)
    deform = (q * 10.0 ** rng.uniform(-1, 1, m)) @ q.T
    sq = root @ deform @ root.T
    sq = (sq + sq.T) / 2
    mp = rng.normal(size=m) * 1e3
    mq = mp + root @ rng.normal(size=m) * rng.uniform(0.0, 2.0)
    eps = float(rng.choice([0.1, 0.5, 1.0, 2.0, 5.0]))
    return mp, sp, mq, sq, eps, m, cond


@pytest.mark.parametrize("seed", range(16))
def test_matches_monte_carlo_on_random_pairs(seed):
    mp, sp, mq, sq, eps, m, cond = _random_pair(seed)
    rng = np.random.default_rng(1000 + seed)
    for a, sa, b, sb in ((mp, sp, mq, sq), (mq, sq, mp, sp)):
        prof = gaussian_pair_profile(a, sa, b, sb, epsilon=eps)
        est, se = mc_delta(a, sa, b, sb, eps, rng, n=200_000)
        print(
            f"m={m} cond={cond:.1e} eps={eps}: exact {prof.estimate:.6g} +- "
            f"{prof.error_bound:.1e}, MC {est:.6g} +- {se:.1e}"
        )
        assert prof.delta >= prof.estimate
        # The bound includes first-order rounding of the whitening (κ·u, κ up to 1e10).
        assert prof.error_bound <= 1e-9 + 1e-2 * prof.estimate
        # Never below the Monte Carlo estimate by more than its error (4 standard errors;
        # 3/n when no draw hit, the rule-of-three bound).
        tol = 4 * se + 3.0 / 200_000
        assert prof.delta >= est - tol
        assert abs(prof.estimate - est) <= tol + prof.error_bound


def _mp_distance(mp, s, mq) -> mpmath.mpf:
    """Mahalanobis distance at 60 digits, of the symmetrised matrix the accountant takes.

    (A double-precision solve is off by up to 1e-11 in δ at condition 3.5e7 (seed 4):
    more than the accountant's own error on near-singular pairs, so it cannot be the reference.)
    """
    with mpmath.workdps(60):
        sym = s / 2 + s.T / 2
        d = mpmath.matrix(
            [mpmath.mpf(float(x)) - mpmath.mpf(float(y)) for x, y in zip(mp, mq, strict=True)]
        )
        return mpmath.sqrt((d.T * mpmath.lu_solve(mpmath.matrix(sym.tolist()), d))[0])


def _mp_closed_form(dist: mpmath.mpf, eps: float) -> float:
    """Balle & Wang's δ(ε; D) at 60 digits."""
    with mpmath.workdps(60):
        e = mpmath.mpf(eps)
        return float(
            mpmath.ncdf(dist / 2 - e / dist) - mpmath.exp(e) * mpmath.ncdf(-dist / 2 - e / dist)
        )


@pytest.mark.parametrize("seed", range(6))
def test_equal_covariances_reduce_to_closed_form(seed):
    rng = np.random.default_rng(seed)
    m = seed + 1
    s = _spd(rng, m, 10.0 ** rng.uniform(0, 8))
    mp = rng.normal(size=m)
    mq = mp + np.linalg.cholesky(s) @ rng.normal(size=m)
    dist = _mp_distance(mp, s, mq)
    for eps in (0.2, 1.0, 4.0):
        closed = _mp_closed_form(dist, eps)
        prof = gaussian_pair_profile(mp, s, mq, s, epsilon=eps)
        assert prof.method == "closed form"
        assert prof.estimate == pytest.approx(closed, rel=1e-7, abs=1e-15)
        assert prof.delta >= closed
        # The numerical inversion agrees with the closed form as well.
        cf = _profile_from(_decompose(mp, s, mq, s), eps, 1e-13, reverse=False)
        # One whitened coordinate carrying the difference: the exact quadratic region.
        assert cf.method in ("characteristic function", "quadratic region")
        assert cf.estimate == pytest.approx(closed, abs=1e-13 + cf.error_bound)


def test_scale_free():
    rng = np.random.default_rng(3)
    mp, sp, mq, sq, eps, m, _ = _random_pair(7)
    d = np.diag(10.0 ** rng.uniform(-8, 8, m))
    ref = gaussian_pair_profile(mp, sp, mq, sq, epsilon=eps).estimate
    got = gaussian_pair_profile(d @ mp, d @ sp @ d, d @ mq, d @ sq @ d, epsilon=eps).estimate
    assert got == pytest.approx(ref, rel=1e-6, abs=1e-12)


def test_small_unit_statistic_with_4x_variance_is_not_equal():
    # docs/architecture.md §4: a statistic in small units whose variance differs 4x must count.
    sp = np.diag([1e6, 4e-6])
    sq = np.diag([1e6, 1e-6])
    d = gaussian_pair_delta([0.0, 0.0], sp, [0.0, 0.0], sq, epsilon=1.0)
    one_d = gaussian_pair_delta([0.0], [[4.0]], [0.0], [[1.0]], epsilon=1.0)
    assert d == pytest.approx(one_d, rel=1e-6) and d > 0.01


def test_singular_supports():
    # Same support (a shared null direction, means differ only in the range): finite.
    s = np.diag([1.0, 0.0])
    assert gaussian_pair_delta([0, 5], s, [1, 5], s * 2, epsilon=1.0) < 1
    # Means differ in the shared null direction: different parallel supports.
    assert gaussian_pair_delta([0, 5], s, [0, 5 + 1e-9], s, epsilon=1.0) == 1.0
    # One covariance is singular where the other is not.
    assert gaussian_pair_delta([0, 0], s, [0, 0], np.eye(2), epsilon=3.0) == 1.0
    assert gaussian_pair_delta([0, 0], np.eye(2), [0, 0], s, epsilon=3.0) == 1.0
    assert gaussian_pair_epsilon([0, 0], np.eye(2), [0, 0], s, delta=1e-3) == math.inf
    # Exactly constant statistics with equal values are dropped, not a difference.
    z = np.zeros((2, 2))
    z[0, 0] = 1.0
    assert gaussian_pair_delta([0, 3], z, [0, 3], z, epsilon=0.5) == 0.0


def test_epsilon_inverts_delta():
    rng = np.random.default_rng(11)
    sp, sq = _spd(rng, 3, 100.0), _spd(rng, 3, 30.0)
    mp, mq = np.zeros(3), np.array([0.5, -0.2, 0.1])
    eps = gaussian_pair_epsilon(mp, sp, mq, sq, delta=1e-3)
    assert math.isfinite(eps) and eps > 0
    assert gaussian_pair_delta(mp, sp, mq, sq, epsilon=eps) <= 1e-3
    assert gaussian_pair_delta(mp, sp, mq, sq, epsilon=eps * 0.999) > 1e-3
    # Equal covariances: the Balle-Wang inverse.
    s = np.eye(2)
    e2 = gaussian_pair_epsilon([0, 0], s, [0.3, 0.4], s, delta=1e-4)
    assert e2 == pytest.approx(0.0, abs=1e-12) or gaussian_delta(0.5, epsilon=e2) <= 1e-4


def test_bad_input_and_overflow():
    with pytest.raises(ParameterError, match="overflow"):
        gaussian_pair_delta([1e308, 0], np.eye(2), [-1e308, 0], np.eye(2) * 2, epsilon=1.0)
    # 1e300 standard deviations apart: delta = 1, never a silent 0.
    assert gaussian_pair_delta([1e200], [[1e-200]], [0.0], [[2e-200]], epsilon=1.0) == 1.0
    with pytest.raises(ParameterError, match="epsilon"):
        gaussian_pair_delta([0], [[1]], [1], [[1]], epsilon=-1.0)
    with pytest.raises(ParameterError, match="cov_q"):
        gaussian_pair_delta([0], [[1]], [1], [[-1]], epsilon=1.0)
    with pytest.raises(ParameterError, match="mean_q"):
        gaussian_pair_delta([0, 1], np.eye(2), [1], np.eye(2), epsilon=1.0)
    with pytest.raises(ParameterError, match="delta"):
        gaussian_pair_epsilon([0], [[1]], [1], [[2]], delta=0.0)
