"""The variance statement of the "tight" population set (less noise at the same
confidence): the pair's errors combined with their correlations, not at the corners of a box.

The joint set (:mod:`distpriv.population.sets`) bounds the sd of the pair's
linearised δ, h(population) − h(fit) ≈ −L with L = a·ûᵀM e + Σ_sl b_sl η_sl (a = ∂h/∂d
along the gap's output distance, b_sl = ∂h/∂log σ²_sl, e the gap's error and η_sl the
log-variances' errors, both estimate − truth), by the *sum* of the parts' sds,
|a|‖Bᵀû‖ + Σ_sl |b_sl| τ_sl: every error perfectly correlated with every other in the
worst way. On Adult at 1,000 modelling rows this box takes the tight set's factor on the
fitted floored noise from 1.46-1.60 (the gap alone) to 1.71-2.03, where the population
needs 1.06-1.19 (``benchmarks/diag/diag_price.py``).

What is known about the correlations. The strata are sampled independently, so the errors
of different strata are independent: L = Σ_s L_s with independent L_s, and
sd(L)² = Σ_s sd(L_s)². Within a stratum, the stratum mean m̂_s and its log-variances
log σ̂²_s have the asymptotic covariances of :mod:`distpriv.modeling.shape_moments` (third
and fourth cross moments of the row features). So, per stratum s the pair weighs
(dw_s = w_is − w_js, v = Mû, C_s its row covariance, N_s its rows):

* G_s = |a|·|dw_s|·√(vᵀC_s v / N_s), the gap's first-order sd from stratum s;
* g_sl = b_sl τ_sl, with τ_sl = √((κ_l − 1)/N_s) at the set's kurtosis κ_l (the largest
  over the strata, as for the box: a small stratum's sample kurtosis understates a heavy
  tail);
* with the cross moments (``MomentUncertainty.shape_correlation``, R_s): V_s² = g_sᵀ R_ηη g_s
  and the cross term c_s = a·dw_s·Σ_jl v_j σ_sj/√N_s · ρ_jl · g_sl (ρ the correlations of
  the mean with the log-variances, each at its own stratum's estimate; the sds at the
  set's τ), so sd(L_s)² = G_s² + 2c_s + V_s²;
* without them (models whose path does not compute them: the several-secrets and
  mean-secret models, marginals): V_s = Σ_l |g_sl| and sd(L_s) ≤ G_s + V_s (the sd of a sum
  is at most the sum of the sds) — the box within a stratum, quadrature across strata.

Since round 8 the gap's part is δ's own gradient in the gap, a·v = ∂δ/∂ψ · ∇ψ
(:mod:`distpriv.population._direction`: ψ the Gaussian-profile distance with the pair's
δ), not ∂δ/∂d · Mû: the two agree when the pair's covariances are equal, and δ depends on
the gap's direction as well when they differ (Adult). The gap's member is then the same at
every point of the variances (the statement is made once, at the fitted variances); where
ψ cannot be computed the distance statement below is used, point by point, as before.

The member. The gap keeps the tight set's statement (:mod:`distpriv.population._tight`:
the quantile of its distance, which carries z·‖Bᵀû‖ = z·√ΣG_s² to first order and the
second-order term across the gap); the variances carry the rest of z·sd(L): the member's
log-variances are moved by t_s·d_s in stratum s, d_s = R_ηη g_s / V_s (or sign(g_s)) in
units of τ_s, t_s = λV_s, λ = z(sd(L) − √ΣG_s²)⁺ / Σ_s V_s², so that the linearised δ
rises by exactly z·sd(L) − z√ΣG_s² over the variances. Every t_s ≤ z and every
|d_sl| ≤ 1, so the member lies inside the joint set's box (never wider). Then
h(population) exceeds the member's h only if −L > z·sd(L) (to first order): probability
Φ(−z), z = Φ⁻¹(1 − β/P) per pair as for the joint set.

The gradient (a, b) is taken by central differences of the exact accountant at the fitted
variances with the gap at its quantile, 2·(S'm + 1) profiles per pair and noise (the box
search asks 40-60).

Premise, beyond the joint set's: δ is near linear in the errors over the set (the box search
found the corner of largest δ also when it was not), and the cross moments of a stratum
estimate its correlations (with few rows and heavy tails they are themselves noisy;
coverage is measured: tests/central/test_population_corr.py).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..accounting.pair_profile import pair_profiles_unchecked
from ._direction import gap_statement
from ._stack import _inv_sqrt_stack, inv_sqrt_in_units

__all__: list[str] = []  # helpers of population.sets

# The central differences' steps: the log-variances by ± this many of the box's half-width
# z·τ, the gap's output distance by ± this fraction.
_VAR_STEP = 0.25
_GAP_STEP = 0.02
# Accuracy of the accountant for the differences (relative to the δ met).
_TOL = 1e-10


def _delta(pair: Any, mi: np.ndarray, ci: np.ndarray, mj: np.ndarray, cj: np.ndarray) -> float:
    fwd, bwd = pair_profiles_unchecked(mi, ci + pair.noise, mj, cj + pair.noise, pair.epsilon, _TOL)
    return max(fwd.delta, bwd.delta)


def corr_signs(pair: Any) -> np.ndarray:
    """The member's point of the variance statement (module docstring), as the joint
    set's ``signs`` (η = signs · z·τ), for one :class:`~distpriv.population.sets._Pair`.

    Returns
    -------
    ndarray, shape (S', m)
        S' the strata the pair weighs; entries in [−1, 1].
    """
    unc, z = pair.unc, pair.z
    n_sup, m = pair.support.size, unc.dim
    zero = np.zeros((n_sup, m))
    signs = np.zeros((n_sup, m))
    if z <= 0.0:
        return signs
    # The gap's statement in δ's own distance (population/_direction.py): every member
    # below carries its gap; δ's gradient in the gap is ∂δ/∂ψ · ∇ψ.
    stmt = gap_statement(pair)
    if stmt is not None:
        pair.fixed_shift = stmt.shift
    if not pair.coords:
        return signs
    if stmt is None:
        # The distance statement: the member's gap (at its quantile) scaled by 1 ± step.
        mi, ci, mj, cj = (x[0] for x in pair.members(zero[None]))
        member_gap = mi - mj
        metric = inv_sqrt_in_units((ci + cj) / 2 + pair.noise, pair.r)
        dist = float(np.linalg.norm(metric @ member_gap))
        if dist <= 0.0:
            return signs
        up = _delta(pair, mj + member_gap * (1 + _GAP_STEP), ci, mj, cj)
        down = _delta(pair, mj + member_gap * (1 - _GAP_STEP), ci, mj, cj)
        a = (up - down) / (2 * _GAP_STEP * dist)
    # Each log-variance's derivative, per τ: g_sl = b_sl τ_sl.
    pts = []
    for r, c in pair.coords:
        for sgn in (1.0, -1.0):
            p = zero.copy()
            p[r, c] = sgn * _VAR_STEP
            pts.append(p)
    mi_b, ci_b, mj_b, cj_b = pair.members(np.stack(pts))
    g = np.zeros((n_sup, m))
    for t, (r, c) in enumerate(pair.coords):
        hi = _delta(pair, mi_b[2 * t], ci_b[2 * t], mj_b[2 * t], cj_b[2 * t])
        lo = _delta(pair, mi_b[2 * t + 1], ci_b[2 * t + 1], mj_b[2 * t + 1], cj_b[2 * t + 1])
        g[r, c] = (hi - lo) / (2 * _VAR_STEP * z)
    if stmt is not None:
        a, v = stmt.slope, stmt.grad_psi
    else:
        # The gap's direction of the first-order term: v = Mû at the fitted gap.
        fit_metric = _inv_sqrt_stack(
            ((pair.model.covariances[pair.i] + pair.model.covariances[pair.j]) / 2 + pair.noise)[
                None
            ]
        )[0]
        w = fit_metric @ pair.gap
        nw = float(np.linalg.norm(w))
        v = fit_metric @ (w / nw) if nw > 0 else np.zeros(m)
    sizes = np.asarray(unc.stratum_sizes, dtype=float)
    shape = getattr(unc, "shape_correlation", None)
    gap_sd2, sd2, v_norm, dirs = 0.0, 0.0, np.zeros(n_sup), np.zeros((n_sup, m))
    for r, s in enumerate(pair.support):
        dw = float(unc.weights[pair.i, s] - unc.weights[pair.j, s])
        c_s = unc.row_covariances[s]
        g_gap = abs(a) * abs(dw) * math.sqrt(max(float(v @ c_s @ v), 0.0) / sizes[s])
        gs = g[r]
        if shape is not None:
            rho = shape[s]
            r_eta = rho[m:, m:]
            cov_g = r_eta @ gs
            var = math.sqrt(max(float(gs @ cov_g), 0.0))
            sig = np.sqrt(np.clip(np.diag(c_s), 0.0, None))
            cross = a * dw * float((v * sig / math.sqrt(sizes[s])) @ rho[:m, m:] @ gs)
            part2 = max(g_gap**2 + 2.0 * cross + var**2, 0.0)
            dirs[r] = cov_g / var if var > 0 else 0.0
        else:
            var = float(np.sum(np.abs(gs)))
            part2 = (g_gap + var) ** 2
            dirs[r] = np.sign(gs)
        gap_sd2 += g_gap**2
        sd2 += part2
        v_norm[r] = var
    excess = z * max(math.sqrt(sd2) - math.sqrt(gap_sd2), 0.0)
    total = float(np.sum(v_norm**2))
    if total <= 0.0 or excess <= 0.0:
        return signs
    lam = excess / total
    # η = t_s d_s τ in the joint set's signs (η = signs · z τ); t_s ≤ z, |d_sl| ≤ 1.
    signs = np.clip((lam * v_norm)[:, None] * dirs / z, -1.0, 1.0)
    return signs
