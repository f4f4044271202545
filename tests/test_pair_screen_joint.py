"""The Rényi screen's joint diagonalisation against its per-λ form and the exact profile.

accounting/pair_screen.py computes every λ of its grid from one joint diagonalisation of
each pair. The reference here is the screen as first written (an eigendecomposition of
S_α = α S_Q − λ S_P for each λ): both must give the same logarithm of the bound up to
rounding on well-conditioned pairs, and the bound must never fall below the exact δ(ε) of
the accountant (it certifies pairs away from the exact computation).
"""

from __future__ import annotations

import numpy as np
import pytest

from distpriv.accounting import gaussian_pair_delta
from distpriv.accounting.pair_screen import (
    _LAMBDA_RANGE,
    _MAX_COND,
    _U,
    LAMBDAS,
    _one_direction,
    renyi_delta_bounds,
)


def _ref_eig_std(mats: np.ndarray, inv_sd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigen-decomposition of D mats D (D = diag(inv_sd)), stacked over leading axes."""
    std = mats * inv_sd[..., :, None] * inv_sd[..., None, :]
    std = (std + np.swapaxes(std, -1, -2)) / 2
    return np.linalg.eigh(std)


def _reference_direction(
    diff: np.ndarray, cov_p: np.ndarray, cov_q: np.ndarray, epsilon: float
) -> np.ndarray:
    """The screen as first written: one eigendecomposition of S_α per λ (a stack)."""
    p, m = diff.shape
    out = np.full(p, np.inf)
    var_q = np.diagonal(cov_q, axis1=1, axis2=2)
    ok = np.all(var_q > 0, axis=1)
    if not np.any(ok):
        return out
    diff, cov_p, cov_q = diff[ok], cov_p[ok], cov_q[ok]
    inv_sd = 1.0 / np.sqrt(np.diagonal(cov_q, axis1=1, axis2=2))
    wp, _ = _ref_eig_std(cov_p, inv_sd)
    wq, _ = _ref_eig_std(cov_q, inv_sd)
    good = (wp[:, 0] > wp[:, -1] / _MAX_COND) & (wq[:, 0] > wq[:, -1] / _MAX_COND)
    logdet_p = np.sum(np.log(np.where(wp > 0, wp, 1.0)), axis=1)
    logdet_q = np.sum(np.log(np.where(wq > 0, wq, 1.0)), axis=1)
    kappa = np.maximum(
        wp[:, -1] / np.maximum(wp[:, 0], 1e-300), wq[:, -1] / np.maximum(wq[:, 0], 1e-300)
    )
    wm, vm = _ref_eig_std((cov_p + cov_q) / 2, inv_sd)
    zm = np.einsum("pmk,pm->pk", vm, diff * inv_sd)
    d2 = np.sum(zm**2 / np.maximum(wm, 1e-300), axis=1)  # only a guess: any λ is valid
    lam0 = np.clip(epsilon / np.maximum(d2, 1e-300) - 0.5, *_LAMBDA_RANGE)
    lam = np.clip(lam0[:, None] * LAMBDAS[None, :], *_LAMBDA_RANGE)
    alpha = 1.0 + lam
    # S_α for every pair and λ: (p, L, m, m), standardised.
    s_alpha = alpha[..., None, None] * cov_q[:, None] - lam[..., None, None] * cov_p[:, None]
    wa, va = _ref_eig_std(s_alpha, inv_sd[:, None, :])
    pd = (wa[..., 0] > wa[..., -1] / _MAX_COND) & good[:, None]
    z = np.einsum("plmk,pm->plk", va, diff * inv_sd)  # standardised Δ in S_α's eigenbasis
    quad = np.sum(z**2 / np.where(pd[..., None], wa, 1.0), axis=-1)
    logdet_a = np.sum(np.log(np.where(pd[..., None], wa, 1.0)), axis=-1)
    terms = (
        alpha * lam / 2 * quad,
        -0.5 * logdet_a,
        -lam / 2 * logdet_p[:, None],
        alpha / 2 * logdet_q[:, None],
    )
    log_mgf = sum(terms)
    kappa_a = np.maximum(kappa[:, None], wa[..., -1] / np.maximum(wa[..., 0], 1e-300))
    allowance = 64.0 * m * m * kappa_a * _U * sum(np.abs(t) for t in terms)
    log_c = lam * np.log(lam / alpha) - np.log(alpha)
    log_bound = log_c - lam * epsilon + log_mgf + allowance
    log_bound = np.where(pd, log_bound, np.inf)
    out[ok] = np.min(log_bound, axis=1)
    return out


def _pairs(p: int, m: int, seed: int, spread: float) -> tuple[np.ndarray, ...]:
    """p random pairs: covariances A Aᵀ/m + I with a per-statistic unit, mean gaps."""
    rng = np.random.default_rng(seed)
    units = np.exp(rng.normal(size=m) * 3.0)  # statistics in very different units
    covs = []
    for _ in range(2 * p):
        a = rng.normal(size=(m, m)) * spread
        covs.append((a @ a.T / m + np.eye(m)) * np.outer(units, units))
    ci, cj = np.stack(covs[:p]), np.stack(covs[p:])
    diff = rng.normal(size=(p, m)) * units * 0.3
    return diff, ci, cj


@pytest.mark.parametrize(("m", "seed", "spread"), [(3, 0, 0.5), (12, 1, 1.0), (40, 2, 0.3)])
def test_joint_diagonalisation_matches_per_lambda_reference(m: int, seed: int, spread: float):
    diff, ci, cj = _pairs(4, m, seed, spread)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        new = _one_direction(diff, ci, cj, 1.0)
        old = _reference_direction(diff, ci, cj, 1.0)
    finite = np.isfinite(old)
    assert np.all(np.isfinite(new) == finite)
    # The same λ grid and the same formula: equal up to rounding and the allowances.
    assert np.allclose(new[finite], old[finite], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_bounds_never_below_the_exact_delta(seed: int):
    m = 6
    diff, ci, cj = _pairs(3, m, seed + 10, 0.8)
    diff = diff * 0.2
    zeros = np.zeros((3, m))
    for eps in (0.5, 1.0, 2.0):
        bounds = renyi_delta_bounds(diff, ci, zeros, cj, epsilon=eps)
        for k in range(3):
            fwd = gaussian_pair_delta(diff[k], ci[k], zeros[k], cj[k], epsilon=eps)
            bwd = gaussian_pair_delta(zeros[k], cj[k], diff[k], ci[k], epsilon=eps)
            if np.isfinite(bounds[k, 0]):
                assert bounds[k, 0] >= fwd * (1 - 1e-9)
            if np.isfinite(bounds[k, 1]):
                assert bounds[k, 1] >= bwd * (1 - 1e-9)


def test_singular_or_ill_conditioned_pairs_are_not_screened():
    m = 4
    cov = np.eye(m)
    sing = np.eye(m)
    sing[0, 0] = 1e-12  # condition 1e12 > the screen's limit
    diff = np.full((1, m), 0.01)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        assert np.isinf(_one_direction(diff, sing[None], cov[None], 1.0)[0])
        assert np.isinf(_one_direction(diff, cov[None], sing[None], 1.0)[0])
