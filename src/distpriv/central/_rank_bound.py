"""A proven floor on δ(ε) for every noise of limited rank (to save calibration time).

optimal-g's convex program (Chen & Ohrimenko 2023, Cor. A.1) assumes equal covariances
within a pair; its optimum has rank at most p, the number of its constraints
(:mod:`distpriv.central._optimal_solver`, fact 2). Under the exact profile with different
covariances such a noise may be useless at *every* scale: the outputs projected on the
noise's null space N (dimension ≥ m − p) are N(Nᵀμ, NᵀΣN) whatever the noise, and a
projection is post-processing, so δ(ε) of the pair is at least δ(ε) of those projections.
Searching such a shape walks it up to huge scales (where the pair's profile needs the
50-digit whitening) before it finds that no scale will do; solving the program on the
population set's members costs more than the rest of the calibration at m = 50.

The floor, for a pair P = N(μ₁, Σ₁), Q = N(μ₂, Σ₂) and any noise of rank ≤ r. Let
ρ₁ ≥ … ≥ ρ_m be the generalised eigenvalues Σ₁v = ρΣ₂v. Every subspace N of dimension
m − r meets the span V of the top r + 1 generalised eigenvectors (dimensions add up to
more than m) in some v ≠ 0, and on V the ratio vᵀΣ₁v / vᵀΣ₂v is at least ρ_{r+1}. On the
line of v the pair is N(a, s₁²) against N(b, s₂²) with s₁²/s₂² = q ≥ ρ_{r+1}; when
ρ_{r+1} > 1 the event {|x − b| > c s₂} (the optimal one for a = b and ratio ρ_{r+1}) has
a P-probability that only grows with |a − b| (Anderson's inequality: a symmetric unimodal
law puts the most mass on a centred symmetric interval) and with q, so

    δ_P‖Q(ε) ≥ δ(N(0, ρ)‖N(0, 1)) = 2Φ̄(c/√ρ) − 2e^ε Φ̄(c),
    c² = (2ε + log ρ) / (1 − 1/ρ),   ρ = ρ_{r+1}

(the loss of N(0, ρ) against N(0, 1) is −½ log ρ + x²(1 − 1/ρ)/2, above ε exactly when
|x| > c). By symmetry the smallest ratios bound the direction Q‖P with 1/ρ_{m−r}. The floor
is only ever used to *skip* a candidate noise shape (never to certify a guarantee: every
published noise is checked by the exact accountant), so a skipped shape can only cost
optimality, and it is skipped only where no scale of it could meet the target.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr

from ..querymodel import GaussianQueryModel

__all__ = ["centred_ratio_delta", "rank_limited_floor"]


def _eigvalsh(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """scipy.linalg.eigh, imported here: not on ``distpriv verify``'s path (0.1 s of CPU,
    tests/test_cli_startup.py), where this floor is not reached."""
    from scipy.linalg import eigh

    return np.asarray(eigh(a, b, eigvals_only=True))


def centred_ratio_delta(ratio: float, epsilon: float) -> float:
    """δ(ε) of N(0, ratio) against N(0, 1) for ratio ≥ 1 (closed form; 0 at ratio 1).

    Parameters
    ----------
    ratio : float
        The variance ratio ρ ≥ 1.
    epsilon : float
        ε ≥ 0.

    Returns
    -------
    float
        2Φ̄(c/√ρ) − 2e^ε Φ̄(c) with c² = (2ε + log ρ)/(1 − 1/ρ), clipped at 0.
    """
    if not ratio > 1.0:
        return 0.0
    if math.isinf(ratio):
        return 1.0
    c = math.sqrt((2.0 * epsilon + math.log(ratio)) / (1.0 - 1.0 / ratio))
    value = 2.0 * float(ndtr(-c / math.sqrt(ratio))) - 2.0 * math.exp(epsilon) * float(ndtr(-c))
    return max(0.0, value)


def rank_limited_floor(
    model: GaussianQueryModel, rank: int, *, epsilon: float, level: float = math.inf
) -> float:
    """A lower bound on the largest δ(ε) of ``model``'s pairs under any noise of rank ≤ ``rank``.

    Parameters
    ----------
    model : GaussianQueryModel
        Its pairs (both directions).
    rank : int
        r: the noise's rank is at most this.
    epsilon : float
    level : float
        Stop as soon as a pair's floor exceeds this (the caller's target): the answer is
        then that pair's floor.

    Returns
    -------
    float
        max over pairs of the floor of the module notes; 0 when r ≥ m or a covariance is
        not positive definite (no bound claimed).
    """
    m = model.dim
    if rank >= m:
        return 0.0
    best = 0.0
    for i, j in model.pairs:
        a, b = model.covariances[i], model.covariances[j]
        if np.array_equal(a, b):
            continue
        try:
            rho = _eigvalsh((a + a.T) / 2, (b + b.T) / 2)  # ascending
        except np.linalg.LinAlgError:
            continue
        if not np.all(np.isfinite(rho)) or rho[0] <= 0:
            continue
        hi = float(rho[m - rank - 1])  # the (r + 1)-th largest
        lo = float(rho[rank])  # the (r + 1)-th smallest
        floor = max(centred_ratio_delta(hi, epsilon), centred_ratio_delta(1.0 / lo, epsilon))
        best = max(best, floor)
        if best > level:
            break
    return best
