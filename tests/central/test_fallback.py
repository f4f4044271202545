"""The Thm 4.6 fallback guarantee for unequal covariances, checked against the true profile."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from distpriv import GaussianQueryModel, calibrate
from distpriv.central.fallback import gaussian_covariance_divergence


def privacy_loss(x, mp, cp, mq, cq):
    return multivariate_normal(mp, cp).logpdf(x) - multivariate_normal(mq, cq).logpdf(x)


@pytest.mark.parametrize("seed", range(4))
def test_divergence_bound_tail(seed):
    # The bound λ must satisfy P(L > λ) ≤ η for L the privacy loss under P.
    rng = np.random.default_rng(seed)
    m = 3
    a = rng.normal(size=(m, m))
    cov_q = a @ a.T + np.eye(m)
    pert = rng.normal(size=(m, m)) * 0.15
    cov_p = cov_q + pert @ pert.T - 0.05 * np.eye(m) * (seed % 2)
    eta = 1e-3
    lam = gaussian_covariance_divergence(cov_p, cov_q, eta)
    x = rng.multivariate_normal(np.zeros(m), cov_p, size=400_000)
    loss = privacy_loss(x, np.zeros(m), cov_p, np.zeros(m), cov_q)
    assert np.mean(loss > lam) <= eta
    assert gaussian_covariance_divergence(cov_q, cov_q, eta) == pytest.approx(0.0, abs=1e-9)


def test_fallback_holds_for_the_true_outputs():
    # Covariances differ by ~10% between the two hypotheses, as on real data.
    rng = np.random.default_rng(11)
    a = rng.normal(size=(3, 3))
    base = a @ a.T + np.eye(3)
    model = GaussianQueryModel([[0.0, 0.0, 0.0], [1.0, 0.5, -0.3]], np.stack([base, base * 1.1]))
    eps, delta = 1.0, 1e-3
    for name in ("expm-g", "eigm", "daum"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mech = calibrate(name, model, epsilon=eps, delta=delta, calibration="analytic")
        fb = mech.guarantee.fallback
        assert fb is not None and fb.epsilon > eps and fb.delta > delta
        assert fb.holds in (True, None)
        # True outputs: N(μ_θ, Σ_θ + Σ_Z). Estimate δ(ε') = E_P[(1 − e^(ε' − L))₊] in both
        # directions by Monte Carlo and compare with the claimed δ' (with 5 se of slack).
        outs = [(model.means[t], model.covariances[t] + mech.noise_covariance) for t in (0, 1)]
        for (mp, cp), (mq, cq) in (outs, outs[::-1]):
            x = rng.multivariate_normal(mp, cp, size=300_000)
            loss = privacy_loss(x, mp, cp, mq, cq)
            terms = np.clip(1.0 - np.exp(fb.epsilon - loss), 0.0, None)
            est, se = terms.mean(), terms.std() / np.sqrt(terms.size)
            assert est - 5 * se <= fb.delta


def test_no_fallback_when_assumptions_hold(paper_model):
    mech = calibrate("eigm", paper_model, epsilon=1.0, delta=1e-3)
    assert mech.guarantee.fallback is None
    assert mech.to_dict()["guarantee"]["fallback"] is None


def _unequal_model(m=200, seed=0):
    """A case auto crashed on: 200 statistics whose variances differ by up to 8x
    between the two hypotheses (lambda of Thm 4.6 in the thousands)."""
    rng = np.random.default_rng(seed)
    means = np.stack([np.zeros(m), rng.normal(size=m) * 0.1])
    c0 = np.diag(rng.uniform(0.5, 2.0, size=m))
    c1 = np.diag(np.diag(c0) * rng.uniform(0.2, 8.0, size=m))
    return GaussianQueryModel(means, np.stack([c0, c1]))


def test_fallback_delta_matches_extended_precision():
    import mpmath

    from distpriv.central.fallback import fallback_delta

    mpmath.mp.dps = 50
    for eps, delta, lam, eta in [
        (1.0, 1e-3, 0.0, 1e-4),
        (1.0, 1e-3, 0.5, 1e-4),
        (0.1, 1e-6, 3.0, 1e-7),
        (1.0, 0.0, 2.0, 1e-9),
        (1.0, 1e-3, 700.0, 1e-4),
        (1.0, 1e-3, 720.0, 1e-4),  # e^(eps + lam) overflows a float
        (5.0, 1e-12, 1e4, 1e-13),
        (1.0, 1e-3, math.inf, 1e-4),
    ]:
        if math.isinf(lam):
            exact = mpmath.mpf(1)
        else:
            e, d, la, et = (mpmath.mpf(x) for x in (eps, delta, lam, eta))
            exact = min(mpmath.mpf(1), (1 + mpmath.exp(e + la)) * et + mpmath.exp(la) * d)
        got = fallback_delta(eps, delta, lam, eta)
        assert 0 < got <= 1
        assert abs(got - float(exact)) <= 1e-13 * float(exact)


def test_fallback_on_200_unequal_statistics_does_not_overflow():
    # The reproducer: calibrate("dirm-l") raised OverflowError in math.exp(eps + lam).
    model = _unequal_model()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mech = calibrate("dirm-l", model, epsilon=1.0, delta=1e-3)
    fb = mech.guarantee.fallback
    assert fb is not None
    lam = (fb.epsilon - 1.0) / 2
    assert lam > 709  # e^lam is not a float: the bound is computed in log space
    assert fb.delta == 1.0  # true (if empty): the weaker guarantee says nothing here
