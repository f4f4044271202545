"""Certified upper bounds on δ(ε) of many Gaussian pairs at once.

A range secret has hundreds of pairs; the exact profile (:mod:`.pair_profile`) costs about
a millisecond per pair and direction. Most pairs of a range are far from binding: a pair
whose δ(ε) is *certified* below the level that matters needs no exact profile. This module
gives that certificate for a whole stack of pairs in a few vectorised linear-algebra calls.

The bound (Rényi / Chernoff; e.g. Asoodeh et al. 2021, Canonne, Kamath & Steinke 2020,
Prop. 12). With L = log p(X)/q(X), X ~ P, δ_P‖Q(ε) = E_P[(1 − e^(ε−L))₊], and for every
λ > 0 and every real y, (1 − e^(−y))₊ ≤ c(λ) e^(λy) with c(λ) = (λ/(1+λ))^λ / (1+λ) (the
maximum of (1 − e^(−y)) e^(−λy), at e^(−y) = λ/(1+λ)). So

    δ_P‖Q(ε) ≤ c(λ) e^(−λε) E_P[e^(λL)] = c(λ) exp(λ(D_(1+λ)(P‖Q) − ε)),

and for Gaussians, with α = 1 + λ and S_α = α S_Q − λ S_P positive definite,

    λ D_α = α λ/2 · Δᵀ S_α⁻¹ Δ − ½ log det S_α − λ/2 log det S_P + α/2 log det S_Q

(Gil, Alajaji & Linder 2013, Rényi divergence of multivariate Gaussians). Every λ gives a
valid bound; the least over a grid of λ is reported. Where S_α is not positive definite
for any λ of the grid, or a matrix is too ill-conditioned for the rounding allowance
below to be small, the bound is +inf (the caller then computes the exact profile).

Rounding. The determinants and the quadratic form are computed on matrices standardised by
the diagonal of S_Q (the logarithms of the scaling cancel exactly in the combination above),
from symmetric eigendecompositions. A relative perturbation of a matrix of condition κ by
k·m·u moves log det by at most m·κ·k·m·u and the quadratic form by κ·k·m·u relatively; the
bound's logarithm is raised by 64·m²·κ·u times the sum of the absolute values of its terms
(a generous multiple of that first-order effect), and matrices with κ > 10⁸ are not
screened at all.
"""

from __future__ import annotations

import numpy as np

__all__ = ["LAMBDAS", "renyi_delta_bounds"]

# The grid of λ = α − 1, relative to each pair's own guess λ₀ = ε/D² − 1/2 (the optimum
# for equal covariances at Mahalanobis distance D, with D² taken on the mean covariance).
# Coarse is fine: the bound is used only to skip pairs far from the level that matters,
# and it changes slowly with λ near its optimum; any λ gives a valid bound.
LAMBDAS = np.geomspace(0.3, 3.0, 9)
_LAMBDA_RANGE = (0.02, 2000.0)
# Largest condition number (of a standardised matrix) screened; beyond it: +inf.
_MAX_COND = 1e8
_U = np.finfo(float).eps


def _one_direction(
    diff: np.ndarray, cov_p: np.ndarray, cov_q: np.ndarray, epsilon: float
) -> np.ndarray:
    """log of the certified bound on δ_P‖Q(ε), shape (p,); +inf where not certified.

    One joint diagonalisation per pair serves every λ of the grid: with S_Q standardised
    (unit diagonal) = U diag(w) Uᵀ, W = U diag(w)^(−1/2) and Wᵀ S_P W = V diag(r) Vᵀ,
    S_α = α S_Q − λ S_P = W⁻ᵀ V diag(α − λ r) Vᵀ W⁻¹, so that
    log det S_α = log det S_Q + Σ log(α − λ r_k) and Δᵀ S_α⁻¹ Δ = Σ z_k² / (α − λ r_k)
    with z = Vᵀ Wᵀ Δ. Two eigendecompositions per pair (not one per λ), and no stack of
    (pairs × λ × m × m) matrices: at m = 1,000 and 8 pairs that stack alone was 0.6 GB.

    Rounding: an eigenvalue r_k is known to about m·κ_Q·u·r_max (the whitening by S_Q of
    condition κ_Q, then a symmetric eigendecomposition), so α − λ r_k to a relative
    m·κ_Q·u·(α + λ r_max)/(α − λ r_k), which includes the cancellation of α S_Q against
    λ S_P. The allowance is the module's 64·m²·κ·u times the sum of the absolute values of
    the terms, with κ = κ_Q · max(r_max / r_min, max_k (α + λ r_max)/(α − λ r_k)): at least
    the condition numbers of S_P and of S_α the per-λ decompositions used (κ(S_P) ≤ κ_Q
    r_max/r_min, κ(S_α) ≤ κ_Q max(α − λ r)/min(α − λ r)); beyond :data:`_MAX_COND` the
    pair is not screened.
    """
    p, m = diff.shape
    out = np.full(p, np.inf)
    var_q = np.diagonal(cov_q, axis1=1, axis2=2)
    ok = np.all(var_q > 0, axis=1)
    if not np.any(ok):
        return out
    diff, cov_p, cov_q = diff[ok], cov_p[ok], cov_q[ok]
    inv_sd = 1.0 / np.sqrt(np.diagonal(cov_q, axis1=1, axis2=2))
    outer = inv_sd[:, :, None] * inv_sd[:, None, :]
    std_q = cov_q * outer
    wq, uq = np.linalg.eigh((std_q + np.swapaxes(std_q, -1, -2)) / 2)
    del std_q
    q_pos = wq[:, 0] > 0
    kappa_q = wq[:, -1] / np.where(q_pos, wq[:, 0], 1.0)
    # W = U diag(w)^(-1/2); M = Wᵀ S_P W (each pair's S_P standardised by S_Q's diagonal).
    white = uq / np.sqrt(np.where(wq > 0, wq, 1.0))[:, None, :]
    del uq
    std_p = cov_p * outer
    # Two matrix products (BLAS), not a three-operand einsum (O(m⁴) unoptimised).
    mid = np.swapaxes(white, -1, -2) @ ((std_p + np.swapaxes(std_p, -1, -2)) / 2) @ white
    del std_p
    r, vr = np.linalg.eigh((mid + np.swapaxes(mid, -1, -2)) / 2)
    del mid
    z = np.einsum("pkl,pk->pl", vr, np.einsum("pmk,pm->pk", white, diff * inv_sd))
    del vr, white
    p_pos = r[:, 0] > 0
    kappa_r = r[:, -1] / np.where(p_pos, r[:, 0], 1.0)
    good = q_pos & p_pos & (kappa_q <= _MAX_COND) & (kappa_q * kappa_r <= _MAX_COND)
    logdet_q = np.sum(np.log(np.where(wq > 0, wq, 1.0)), axis=1)
    logdet_p = logdet_q + np.sum(np.log(np.where(r > 0, r, 1.0)), axis=1)
    d2 = np.sum(z**2 / np.maximum((r + 1.0) / 2.0, 1e-300), axis=1)  # only a guess
    lam0 = np.clip(epsilon / np.maximum(d2, 1e-300) - 0.5, *_LAMBDA_RANGE)
    lam = np.clip(lam0[:, None] * LAMBDAS[None, :], *_LAMBDA_RANGE)
    alpha = 1.0 + lam
    # α − λ r_k for every pair, λ and k: (p, L, m) numbers, not matrices.
    a = alpha[..., None] - lam[..., None] * r[:, None, :]
    a_min = a.min(axis=-1)
    pos = a_min > 0
    safe = np.where(pos[..., None], a, 1.0)
    cancel = (alpha + lam * r[:, -1:]) / np.where(pos, a_min, 1.0)
    kappa = kappa_q[:, None] * np.maximum(kappa_r[:, None], cancel)
    pd = pos & good[:, None] & (kappa <= _MAX_COND)
    quad = np.sum(z[:, None, :] ** 2 / safe, axis=-1)
    logdet_a = logdet_q[:, None] + np.sum(np.log(safe), axis=-1)
    terms = (
        alpha * lam / 2 * quad,
        -0.5 * logdet_a,
        -lam / 2 * logdet_p[:, None],
        alpha / 2 * logdet_q[:, None],
    )
    log_mgf = sum(terms)
    allowance = 64.0 * m * m * kappa * _U * sum(np.abs(t) for t in terms)
    log_c = lam * np.log(lam / alpha) - np.log(alpha)
    log_bound = log_c - lam * epsilon + log_mgf + allowance
    log_bound = np.where(pd, log_bound, np.inf)
    out[ok] = np.min(log_bound, axis=1)
    return out


def renyi_delta_bounds(
    means_i: np.ndarray,
    covs_i: np.ndarray,
    means_j: np.ndarray,
    covs_j: np.ndarray,
    *,
    epsilon: float,
    level: float | None = None,
) -> np.ndarray:
    """Certified upper bounds on δ(ε) of N(μᵢ, Sᵢ) against N(μⱼ, Sⱼ), both directions.

    Parameters
    ----------
    means_i, means_j : ndarray, shape (p, m)
    covs_i, covs_j : ndarray, shape (p, m, m)
        The output covariances (model plus noise) of each pair's two hypotheses.
    epsilon : float
        ε ≥ 0.
    level : float, optional
        Only whether both bounds are ≤ ``level`` matters to the caller (a screen): the
        reverse direction is then bounded only for pairs whose forward bound is ≤ ``level``
        (+inf elsewhere, for calibration time: a binding pair paid twelve
        eigendecompositions per direction for nothing). The bounds given are the same.

    Returns
    -------
    ndarray, shape (p, 2)
        Column 0 bounds δ of i against j, column 1 of j against i; each in (0, 1], or
        +inf where no certificate is given (singular or ill-conditioned matrices, or S_α
        not positive definite on the whole grid). Never below the true δ(ε) (module
        docstring).
    """
    diff = np.asarray(means_i, dtype=float) - np.asarray(means_j, dtype=float)
    ci = np.asarray(covs_i, dtype=float)
    cj = np.asarray(covs_j, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        forward = _one_direction(diff, ci, cj, epsilon)
        if level is None:
            backward = _one_direction(-diff, cj, ci, epsilon)
        else:
            need = np.isfinite(forward) & (np.minimum(np.exp(forward), 1.0) <= level)
            backward = np.full(forward.shape, np.inf)
            if np.any(need):
                backward[need] = _one_direction(-diff[need], cj[need], ci[need], epsilon)
    log_b = np.stack([forward, backward], axis=1)
    log_b = np.where(np.isnan(log_b), np.inf, log_b)
    # A bound above 1 says nothing: exp of a large finite logarithm overflows to inf, which
    # is capped at 1 like any other (not a warning: a pair far from private).
    with np.errstate(over="ignore"):
        return np.where(np.isfinite(log_b), np.minimum(np.exp(log_b), 1.0), np.inf)
