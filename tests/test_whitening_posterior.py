"""The measured (a posteriori) whitening bound of the pair accountant (hundreds of statistics).

Beyond 24 statistics the accountant accepted the double (or long-double) whitening only
where its a priori rounding bound, which grows like m³·κ·u, put the first-order error of δ
below 1e-6; at hundreds of statistics no pair met it and δ = 1 was reported.
``accounting/_whitening_posterior.py`` measures the rounding instead. References that share
no code with it:

- the whitened pair of the same transform T in 40-digit mpmath (the bounds must contain
  the exact off-diagonal mass, the diagonals and the shift);
- Monte Carlo of the privacy loss, log-densities by Cholesky factors of the covariances as
  given (δ(ε) = E_P[(1 − e^{ε−L})₊]), on a pair of 200 statistics that was refused before.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from distpriv import gaussian_pair_profile
from distpriv.accounting import _whitening
from distpriv.accounting import _whitening_posterior as posterior
from distpriv.accounting._whitening_posterior import posterior_decomposition, transform


def _pair(m: int, df: int, seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    covs = []
    for _ in range(2):
        x = rng.normal(size=(df, m)) * rng.uniform(0.5, 2.0, size=m)
        covs.append(100.0 * (x.T @ x) / df)
    mp = rng.normal(size=m) * 10.0
    mq = mp + rng.normal(size=m) * 0.3
    return mp, covs[0], mq, covs[1]


def _white(sp: np.ndarray, sq: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    scale = 1.0 / np.sqrt(np.diagonal(sp + sq))
    w, u = np.linalg.eigh((sp + sq) * np.outer(scale, scale))
    return u / np.sqrt(w), scale, float(w[-1] / w[0])


def test_measured_bounds_contain_the_exact_whitened_pair() -> None:
    m = 30
    mp, sp, mq, sq = _pair(m, m + 4, seed=3)
    white, scale, cond = _white(sp, sq)
    post = posterior_decomposition(white, (mp, mq), sp, sq, scale)
    assert post is not None
    a, b, shift, err_a, err_b, err_shift = post
    assert cond > 1.0
    t = transform(white, sp * np.outer(scale, scale), sq * np.outer(scale, scale))
    assert t is not None
    # The exact pair in T's coordinates (inputs are exact doubles), 40 digits.
    with mpmath.workdps(40):
        tm = mpmath.matrix(t.tolist())
        sc = [mpmath.mpf(float(x)) for x in scale]
        d = mpmath.matrix([(mpmath.mpf(float(mp[i])) - float(mq[i])) * sc[i] for i in range(m)])
        s_exact = tm.T * d
        for cov, diag, err in ((sp, a, err_a), (sq, b, err_b)):
            c = mpmath.matrix(m, m)
            for i in range(m):
                for j in range(m):
                    c[i, j] = mpmath.mpf(float(cov[i, j])) * sc[i] * sc[j]
            exact = tm.T * c * tm
            resid = np.array(
                [
                    [float(exact[i, j] - (diag[i] if i == j else 0)) for j in range(m)]
                    for i in range(m)
                ]
            )
            # The whole error matrix (off-diagonal mass and diagonal rounding) within the
            # stated spectral bound; the bound is tight to a few orders, not loose by 1e3.
            spectral = float(np.linalg.norm(resid, 2))
            assert spectral <= float(err)
            assert float(err) < 1e-11
        shift_err = np.array([float(s_exact[i] - shift[i]) for i in range(m)])
        assert np.all(np.abs(shift_err) <= err_shift)


def _mc_delta(
    mp: np.ndarray, sp: np.ndarray, mq: np.ndarray, sq: np.ndarray, eps: float, n: int
) -> tuple[float, float]:
    """Monte Carlo δ(ε) of P against Q and its standard error (Cholesky log-densities)."""
    rng = np.random.default_rng(11)
    lp, lq = np.linalg.cholesky(sp), np.linalg.cholesky(sq)
    y = mp + rng.standard_normal((n, mp.size)) @ lp.T
    zp = np.linalg.solve(lp, (y - mp).T)
    zq = np.linalg.solve(lq, (y - mq).T)
    logdet = np.sum(np.log(np.diagonal(lq))) - np.sum(np.log(np.diagonal(lp)))
    loss = logdet - 0.5 * np.sum(zp * zp, axis=0) + 0.5 * np.sum(zq * zq, axis=0)
    pay = np.maximum(0.0, 1.0 - np.exp(np.minimum(eps - loss, 50.0)))
    return float(pay.mean()), float(pay.std(ddof=1) / math.sqrt(n))


def test_five_hundred_statistics_are_resolved_and_match_monte_carlo(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Covariances of condition number ~50, a pair of 500 statistics: the a priori bound's
    # first order is about 1e-5 even after the long-double re-whitening, and δ = 1 was
    # reported ("numerically unresolvable"); the measured bound is about 1e-13.
    m = 500
    mp, sp, mq, sq = _pair(m, 3 * m, seed=0)
    sq = 0.95 * sp + 0.05 * sq  # close covariances: δ(ε) of moderate size
    mq = mp + (mq - mp) * 0.3
    with monkeypatch.context() as patch:
        # Without the measured bound (the code before): refused.
        patch.setattr(posterior, "posterior_decomposition", lambda *a, **k: None)
        assert _whitening._decompose(mp, sp, mq, sq).kind == "different supports"
    dec = _whitening._decompose(mp, sp, mq, sq)
    assert dec.kind == "regular", dec.detail
    eps = 1.0
    prof = gaussian_pair_profile(mp, sp, mq, sq, epsilon=eps)
    est, se = _mc_delta(mp, sp, mq, sq, eps, 20_000)
    assert 0.1 < est < 0.9  # a δ the comparison can see
    # The reported δ is an upper bound (within Monte Carlo error) and close to it.
    assert prof.delta >= est - 5 * se
    assert abs(prof.estimate - est) <= 5 * se + prof.error_bound
