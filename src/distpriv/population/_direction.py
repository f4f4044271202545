"""The tight set's gap statement in δ's own distance: the direction of
the gap counts, not only its output distance.

The tight set (:mod:`distpriv.population._tight`) puts the gap's output distance
d = ‖MΔ‖, M = ((Σᵢ + Σⱼ)/2 + Σ_Z)^(−1/2), at the Φ(z)-quantile of its sampling law and
takes the member of that distance to be the worst. That holds when δ depends on the gap
through d alone — equal covariances, where δ is the Gaussian profile at distance d. When
the pair's covariances differ it does not: on Adult (1,000 and 4,000 modelling rows,
daum-floor's fitted shape scaled on the set; ``benchmarks/diag/diag_tight_direction.py``)
the population's gap was *nearer* than the set's member on 11 of the 16 tables that
violated (0.91-1.00 of its distance), yet the population's gap direction at the member's
distance gave δ 1.01-2.25× the claim on all 16. The set's coverage was 92 % there (24 of
300 tables violated for ``auto``; with this statement 15 of 300, ``benchmarks/
bench_price.py``, round 8).

The statement used here measures the gap by δ itself. ψ(Δ) is the distance at which the
equal-covariance Gaussian profile has the pair's δ (both directions, at the calibration's
ε): ψ = d exactly for equal covariances, and a monotone transform of δ always. In the
error's coordinates (Δ = Δ̂ + V^(1/2)u), f(u) = ψ² is taken to second order:
f(u) ≈ f₀ + gᵀu + ½uᵀHu with g from central differences of the exact accountant along the
columns of V^(1/2) (2m profiles) and H = 2BᵀB (B = MV^(1/2)), the curvature of d², so that
for equal covariances f *is* d² and the statement is the tight set's to the digit (up to
the accountant's rounding in g). Then, as for the distance:

* Q = the Φ(z)-quantile (plus three binomial sds of the design,
  :func:`~distpriv.population._tight.quantile_level`) of f over the fixed symmetric
  normal design of :mod:`~distpriv.population._tight`, never below f₀;
* the member's gap moves from Δ̂ along the ascent direction of the quadratic on the unit
  sphere (for d², the farthest point of the unit error ellipsoid, as before) until the
  *exact* ψ² is Q (a root of the accountant along that ray; the quadratic gives the
  bracket);
* the variance statement (:mod:`distpriv.population._corr`) linearises δ in the gap
  by ∂δ/∂ψ at the member times ∇ψ = V^(−1/2)g/(2ψ₀) instead of ∂δ/∂d times Mû.

Why coverage ≈ 1 − β: to first order the population's f is f₀ − gᵀξ (ξ the standardised
error) whatever g's direction, so the quantile of gᵀη is the right one; the second-order
term is the distance's, which is the part the tight set's argument covers. Where
ψ cannot be computed (δ at the fit below the accountant's range or 1; a ray on which ψ²
never reaches Q), the distance statement is used, as before.

Cost: 2m + 1 exact profiles for g and about 10-20 for the root, per pair and noise.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from ..accounting.pair_profile import gaussian_delta, pair_profiles_unchecked
from ._stack import inv_sqrt_in_units, sqrt_in_units
from ._tight import _design, quantile_level

__all__: list[str] = []  # helpers of population._corr

# Central differences of ψ² along V^(1/2)'s columns: steps of this many error sds.
_STEP = 1.0
# Accountant accuracy for the statement's profiles (relative to the δ met).
_TOL = 1e-10
# δ outside (_LOW, 1 − _LOW) has no usable ψ: the distance statement is used.
_LOW = 1e-280
# Steps of the ascent to the quadratic's maximum on the unit sphere.
_ASCENT_STEPS = 60


class GapStatement(NamedTuple):
    """The member's gap and what the variance statement needs of it."""

    shift: np.ndarray  # (m,) the member's gap minus the fitted gap
    slope: float  # ∂δ/∂ψ at the member
    grad_psi: np.ndarray  # (m,) ∇ψ at the fitted gap, in the gap's coordinates


def _psi2(pair: Any, mean_i: np.ndarray, ci: np.ndarray, mj: np.ndarray, cj: np.ndarray) -> float:
    """ψ² of the pair (module docstring), or NaN where δ has no usable ψ."""
    # Imported here: the cold commands (verify) never make the statement, and
    # accounting.calibration loads scipy.optimize (tests/test_cli_startup.py).
    from ..accounting.calibration import _analytic_distance

    fwd, bwd = pair_profiles_unchecked(
        mean_i, ci + pair.noise, mj, cj + pair.noise, pair.epsilon, _TOL
    )
    dlt = max(fwd.delta, bwd.delta)
    if not _LOW < dlt < 1.0 - 1e-12:
        return math.nan
    return _analytic_distance(pair.epsilon, dlt) ** 2


def gap_statement(pair: Any) -> GapStatement | None:
    """The member's gap of the δ-distance statement for one tight-set pair (a
    :class:`~distpriv.population.sets._Pair`), at its fitted variances; None where
    the distance statement is used instead (module docstring)."""
    z = pair.z
    if z <= 0.0:
        return None
    model = pair.model
    mi, mj = model.means[pair.i], model.means[pair.j]
    ci, cj = model.covariances[pair.i], model.covariances[pair.j]
    m = mi.shape[0]
    spread = sqrt_in_units(np.einsum("s,sxy->xy", pair.err_w, pair.c_hat), pair.r)
    metric = inv_sqrt_in_units((ci + cj) / 2 + pair.noise, pair.r)
    b = metric @ spread

    def f(u: np.ndarray) -> float:
        return _psi2(pair, mi + spread @ u, ci, mj, cj)

    f0 = f(np.zeros(m))
    if not math.isfinite(f0) or f0 <= 0.0:
        return None
    g = np.zeros(m)
    for k in range(m):
        e = np.zeros(m)
        e[k] = _STEP
        hi, lo = f(e), f(-e)
        if not (math.isfinite(hi) and math.isfinite(lo)):
            return None
        g[k] = (hi - lo) / (2.0 * _STEP)
    h = 2.0 * b.T @ b
    design = _design(m)
    vals = f0 + design @ g + 0.5 * np.einsum("ki,ij,kj->k", design, h, design)
    q = max(float(np.quantile(vals, quantile_level(z), method="higher")), f0)
    # The ascent direction of the quadratic on the unit sphere (for d²: the farthest point
    # of the unit error ellipsoid, the distance statement's direction).
    gn = float(np.linalg.norm(g))
    u = g / gn if gn > 0 else np.linalg.eigh(h)[1][:, -1]
    for _ in range(_ASCENT_STEPS):
        step = g + h @ u
        nrm = float(np.linalg.norm(step))
        new = step / nrm if nrm > 0 else u
        done = float(np.max(np.abs(new - u))) <= 1e-12
        u = new
        if done:
            break
    shift = np.zeros(m)
    if q > f0:
        # Bracket from the quadratic's root along u, then the exact ψ² on the ray.
        qa, qb = 0.5 * float(u @ h @ u), float(g @ u)
        disc = qb * qb + 4.0 * qa * (q - f0)
        t0 = (-qb + math.sqrt(disc)) / (2.0 * qa) if qa > 0 else (q - f0) / max(qb, 1e-300)
        if not math.isfinite(t0) or t0 <= 0.0:
            return None

        def resid(t: float) -> float:
            return f(t * u) - q

        hi_t = t0
        for _ in range(30):
            r = resid(hi_t)
            if not math.isfinite(r):
                return None
            if r >= 0.0:
                break
            hi_t *= 1.5
        else:
            return None
        from scipy.optimize import brentq

        try:
            t = brentq(resid, 0.0, hi_t, xtol=1e-6 * hi_t, rtol=1e-10, maxiter=100)
        except (ValueError, RuntimeError):  # ψ undefined inside the bracket (δ at 1)
            return None
        shift = spread @ (t * u)
    # ∂δ/∂ψ at the member: the Gaussian profile's slope (δ = δ_G(ψ) by ψ's definition).
    psi = math.sqrt(q)
    dpsi = 1e-5 * psi
    slope = float(
        (
            gaussian_delta(psi + dpsi, epsilon=pair.epsilon)
            - gaussian_delta(psi - dpsi, epsilon=pair.epsilon)
        )
        / (2.0 * dpsi)
    )
    # gap = m + S u, so ∇_gap ψ = S⁻ᵀ ∇_u ψ (S is any square root of the error covariance,
    # not necessarily symmetric: it is taken at unit spread).
    grad_psi = np.linalg.pinv(spread).T @ g / (2.0 * math.sqrt(f0))
    return GapStatement(shift, slope, grad_psi)
