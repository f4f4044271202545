"""The geometry of the population set's worst members (:mod:`distpriv.population.confidence`): the
upper confidence bound on a pair's output distance, the farthest point of the gap's error
ellipsoid and the shift that reaches the bound — for one member, and for a whole stack of
(pair, corner) at once (hundreds of pairs; arrays (..., m, m)). Shared by
the moment sets (confidence.py, sets.py) and the bootstrap set (bootstrap.py).
"""

from __future__ import annotations

import math

import numpy as np

__all__: list[str] = []  # helpers of population.confidence

# Ascent steps for the farthest point of an ellipsoid (a convex maximisation on a sphere;
# each step cannot decrease the objective); population.confidence's one-member ascent uses it too.
_ASCENT_STEPS = 60


def gap_bound(gap: np.ndarray, metric: np.ndarray, spread: np.ndarray, z: float) -> float:
    """An upper confidence bound on the output distance ‖metric · Δ‖ of the true gap Δ.

    With Δ̂ = Δ + spread·ξ, ξ ~ N(0, I), and u the unit direction of metric·Δ,
    ‖metric·Δ̂‖ ≥ uᵀ metric Δ̂ = ‖metric·Δ‖ + uᵀB ξ (B = metric·spread), and
    uᵀBξ ~ N(0, ‖Bᵀu‖²) with ‖Bᵀu‖ ≤ ‖B‖₂ whatever u is. So
    ‖metric·Δ‖ ≤ ‖metric·Δ̂‖ + z‖B‖₂ except with probability Φ(−z) — for a metric fixed
    before the draw; with z the Scheffé radius √χ²_m(1 − α) it holds for every metric at
    once, as ‖metric(Δ − Δ̂)‖ ≤ ‖B‖₂ ‖ξ‖.
    """
    b = metric @ spread
    top = float(np.linalg.norm(b, 2)) if b.size else 0.0
    return float(np.linalg.norm(metric @ gap)) + z * top


def _inv_sqrt(cov: np.ndarray) -> np.ndarray:
    """A symmetric inverse square root, with directions of (numerically) zero variance
    treated as having the smallest positive one (the caller's noise makes them finite)."""
    w, v = np.linalg.eigh((cov + cov.T) / 2)
    top = max(float(w.max()), 1e-300)
    w = np.maximum(w, 1e-12 * top)
    return (v / np.sqrt(w)) @ v.T


def _sqrt_psd(cov: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eigh((cov + cov.T) / 2)
    return (v * np.sqrt(np.clip(w, 0.0, None))) @ v.T


def farthest_gap(gap: np.ndarray, metric: np.ndarray, spread: np.ndarray) -> np.ndarray:
    """The point of the ellipsoid {gap + spread·w : ‖w‖ ≤ 1} with the largest ‖metric · x‖.

    A convex function's maximum over a ball is on its sphere; the fixed-point ascent
    w ← normalise(Bᵀ(a + Bw)) (a = metric·gap, B = metric·spread) never decreases
    ‖a + Bw‖ (it is the minorise-maximise step of the convex objective).

    Returns
    -------
    ndarray, shape (m,)
        The shift spread·w* to add to the gap.
    """
    a = metric @ gap
    b = metric @ spread
    g = b.T @ a
    # Start along the gradient at the fitted gap (or the widest axis when there is none).
    w = g / np.linalg.norm(g) if np.linalg.norm(g) > 0 else np.linalg.svd(b)[2][0]
    for _ in range(_ASCENT_STEPS):
        g = b.T @ (a + b @ w)
        nrm = np.linalg.norm(g)
        if nrm == 0:
            break
        w_new = g / nrm
        if np.allclose(w_new, w, rtol=0, atol=1e-12):
            break
        w = w_new
    return spread @ w


def _worst_shift(gap: np.ndarray, metric: np.ndarray, spread: np.ndarray, z: float) -> np.ndarray:
    """A gap error whose output distance is the upper confidence bound :func:`gap_bound`,
    along the farthest point of the unit error ellipsoid (the direction in which the
    distance grows fastest), scaled to reach the bound exactly."""
    target = gap_bound(gap, metric, spread, z)
    direction = farthest_gap(gap, metric, spread)
    a, c = metric @ gap, metric @ direction
    cc, ac, aa = float(c @ c), float(a @ c), float(a @ a)
    if cc <= 0.0 or target * target <= aa:
        return np.zeros_like(gap)
    # ‖a + t c‖ = target, the positive root (aa < target², so it exists and is > 0).
    t = (-ac + math.sqrt(ac * ac + cc * (target * target - aa))) / cc
    return t * direction


def _clip_psd_stack(cov: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eigh((cov + np.swapaxes(cov, -1, -2)) / 2)
    return (v * np.clip(w, 0.0, None)[..., None, :]) @ np.swapaxes(v, -1, -2)


def _sqrt_psd_stack(cov: np.ndarray) -> np.ndarray:
    """:func:`_sqrt_psd` of every matrix of a stack."""
    w, v = np.linalg.eigh((cov + np.swapaxes(cov, -1, -2)) / 2)
    return (v * np.sqrt(np.clip(w, 0.0, None))[..., None, :]) @ np.swapaxes(v, -1, -2)


def _inv_sqrt_stack(cov: np.ndarray) -> np.ndarray:
    """:func:`_inv_sqrt` of every matrix of a stack."""
    w, v = np.linalg.eigh((cov + np.swapaxes(cov, -1, -2)) / 2)
    top = np.maximum(w.max(axis=-1, keepdims=True), 1e-300)
    w = np.maximum(w, 1e-12 * top)
    return (v / np.sqrt(w)[..., None, :]) @ np.swapaxes(v, -1, -2)


def _worst_shift_stack(
    gap: np.ndarray, metric: np.ndarray, spread: np.ndarray, z: float
) -> np.ndarray:
    """:func:`_worst_shift` for every member of a stack: gap (..., m), metric and spread
    (..., m, m). The ascent of :func:`farthest_gap` runs on all members, each stopping
    (its iterate frozen) when its own step moves less than 1e-12, as one member alone."""
    a = np.einsum("...ij,...j->...i", metric, gap)
    b = metric @ spread
    bt = np.swapaxes(b, -1, -2)
    # gap_bound: observed distance + z·‖B‖₂.
    top = np.linalg.norm(b, ord=2, axis=(-2, -1)) if b.size else np.zeros(a.shape[:-1])
    target = np.linalg.norm(a, axis=-1) + z * top
    g = np.einsum("...ij,...j->...i", bt, a)
    gn = np.linalg.norm(g, axis=-1, keepdims=True)
    widest = np.linalg.svd(b)[2][..., 0, :]
    wv = np.where(gn > 0, g / np.where(gn > 0, gn, 1.0), widest)
    live = np.ones(a.shape[:-1], dtype=bool)
    for _ in range(_ASCENT_STEPS):
        g = np.einsum("...ij,...j->...i", bt, a + np.einsum("...ij,...j->...i", b, wv))
        nrm = np.linalg.norm(g, axis=-1, keepdims=True)
        step = live & (nrm[..., 0] > 0)
        w_new = g / np.where(nrm > 0, nrm, 1.0)
        moved = np.any(np.abs(w_new - wv) > 1e-12, axis=-1)
        wv = np.where((step & moved)[..., None], w_new, wv)
        live = step & moved
        if not np.any(live):
            break
    direction = np.einsum("...ij,...j->...i", spread, wv)
    c = np.einsum("...ij,...j->...i", metric, direction)
    cc = np.sum(c * c, axis=-1)
    ac = np.sum(a * c, axis=-1)
    aa = np.sum(a * a, axis=-1)
    ok = (cc > 0.0) & (target * target > aa)
    root = np.sqrt(np.where(ok, ac * ac + cc * (target * target - aa), 0.0))
    t = np.where(ok, (-ac + root) / np.where(ok, cc, 1.0), 0.0)
    return t[..., None] * direction


def unit_coordinates(covariances: np.ndarray, means: np.ndarray | None = None) -> np.ndarray:
    """r_k = 1/sd_k, sd_k the statistic's spread under the model (the root of the mean over
    θ of Σ_θ's diagonal), 1 where it is 0 — or no more than the rounding of the statistic's
    own values (sd_k ≤ 64 ε max_θ |μ_θk|, given ``means``: a statistic that does not vary,
    such as the average a mean secret fixes, whose computed variance is rounding of order
    1e-31): the members are computed in the coordinates
    x_k r_k, where no statistic's units reach an eigen-decomposition. Every decomposition
    below is of a matrix with unit diagonal there, so a statistic in cents and one in
    fractions keep their digits alike and rescaling a statistic rescales its members
    exactly (the relative objective relies on it: central/objective.py)."""
    covs = np.asarray(covariances, dtype=float)
    var = np.diagonal(covs.reshape(-1, *covs.shape[-2:]), axis1=1, axis2=2).mean(axis=0)
    floor = 0.0
    if means is not None:  # scale-free: against the statistic's own magnitude
        mu = np.asarray(means, dtype=float).reshape(-1, var.size)
        floor = (64.0 * np.finfo(float).eps * np.max(np.abs(mu), axis=0)) ** 2
    ok = np.isfinite(var) & (var > floor)
    return np.where(ok, 1.0 / np.sqrt(np.where(ok, var, 1.0)), 1.0)


def sqrt_in_units(cov: np.ndarray, r: np.ndarray) -> np.ndarray:
    """A square root S of ``cov`` (S Sᵀ = cov, not symmetric), taken at unit spread:
    R⁻¹ (R cov R)^(1/2) with R = diag(r). Any square root serves the spread: the ellipsoid
    {gap + S w : ‖w‖ ≤ 1} is the same."""
    rr = r[:, None] * r[None, :]
    return _sqrt_psd_stack(cov * rr) / r[:, None]


def inv_sqrt_in_units(cov: np.ndarray, r: np.ndarray) -> np.ndarray:
    """A metric L with Lᵀ L = cov⁻¹ (not symmetric), taken at unit spread:
    (R cov R)^(−1/2) R. ‖L x‖ is the Mahalanobis length of x whichever root is used."""
    rr = r[:, None] * r[None, :]
    return _inv_sqrt_stack(cov * rr) * r[None, :]


def clip_psd_in_units(cov: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``cov`` with its negative eigenvalues clipped to 0 at unit spread (rounding repair)."""
    rr = r[:, None] * r[None, :]
    return _clip_psd_stack(cov * rr) / rr
