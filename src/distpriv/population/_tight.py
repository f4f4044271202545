"""The gap statement of the "tight" population set (less noise at the same
confidence): the gap's output distance at the quantile of its sampling law, not at d̂ + z‖B‖₂.

The joint set of :mod:`distpriv.population.sets` bounds a pair's output distance
d = ‖MΔ‖ (M = ((Σᵢ + Σⱼ)/2 + Σ_Z)^(−1/2), Δ the population's mean gap, Δ̂ = Δ + e its
estimate, e ~ N(0, V), B = M V^(1/2)) by d̂ + z‖B‖₂: whatever direction the gap has, its
error is taken at the widest sd ‖B‖₂. The floored and optimal mechanisms put their noise
along the fitted gap and little across it, so M magnifies the error across the gap: on
Adult at 1,000 modelling rows ‖B‖₂ is 4-7× the sd along the gap, and this bound alone
multiplies the fitted floored noise by 2.2-2.5 where the population needs 1.06-1.3
(``benchmarks/diag/diag_price.py``; docs/guarantees.md).

What the distance really does. With any M (also one shaped from the table),
MΔ = MΔ̂ − Bξ, ξ = V^(−1/2)e ~ N(0, I), so d² = (d̂ − ûᵀBξ)² + ‖P⊥Bξ‖² (û = MΔ̂/d̂, P⊥
the projection across it): a first-order term along the gap, of sd s = ‖Bᵀû‖, and a
second-order term across it, which a noise shaped along the fitted gap magnifies (on the
tables above E‖P⊥Bξ‖² ≈ (8s)² against d̂ ≈ 22s: a bias of about 1.5 s, as large as z·s).

The statement used here. D = the q-quantile of ‖M(Δ̂ − V^(1/2)η)‖ over η ~ N(0, I)
(a parametric bootstrap of the error, by a fixed symmetric design of 8,192 points,
q = Φ(z) plus three binomial sds of the design); the member's gap is moved from Δ̂
towards the farthest point of the unit error ellipsoid until its distance is D (the joint
set's direction: a member along Δ̂ alone hid the directions across the gap from optimal-g's
program, and ``auto`` fell back to expm-g at 300 rows). To
first and second order, D − d̂ ≈ [tr Q + z·√(4d̂²s² + Var‖Bη‖²)]/(2d̂) (Q = BBᵀ), and
d − d̂ ≈ [−2d̂ ûᵀBξ + ‖P⊥Bξ‖²]/(2d̂), whose mean tr(P⊥QP⊥)/(2d̂) is at most tr Q/(2d̂)
and whose sd is at most the bracket's: so d ≤ D with probability ≈ Φ(z) — for a noise
fixed in advance and for one shaped from the table alike (M and û then converge to the
population's: Slutsky), which the floored mechanisms need. It is combined with the
strata's variances at the same one-sided z by :mod:`distpriv.population._corr` (the
linearised δ's sd with the errors' correlations: quadrature over independent strata, the
third and fourth cross moments within a stratum; docs/guarantees.md), so the level stays
Φ⁻¹(1 − β/P) for the whole statement.

Refuted on the way (kept out, figures in benchmarks/bench_price.py): d ≤ uᵀMΔ̂ + z‖Bᵀu‖
along the gap's own direction (exact for M fixed in advance) ignores the second-order
term: with M shaped along the fitted gap ``auto`` violated on 3 of 36 tables (2 of 5 on
Adult at 4,000 rows). The Scheffé ellipsoid's farthest point (‖ξ‖ ≤ √χ²_m(1 − β/2), valid
for any M, with the variances at β/2) is valid but wider than the joint set at 1,000 rows
(Adult: 461 against 361).

Refuted in round 8: that the member of largest distance is the member of largest δ when
the pair's covariances differ (the joint and box sets make the same reduction). On Adult
the population's gap, nearer than the member, had the larger δ on most tables that
violated (``benchmarks/diag/diag_tight_direction.py``). The tight set's member is therefore
made by :mod:`distpriv.population._direction` — this statement with δ's own distance ψ
in place of d (the same member when the covariances are equal) — at the pair's fitted
variances; this module's statement is its fallback where ψ cannot be computed, and gives
the joint corners of optimal-g's program. The laws are asymptotic and the bootstrap's
normal design is the central-limit law of e. Coverage is measured:
tests/central/test_population_tight.py, tests/central/test_population_direction.py,
benchmarks/bench_price.py.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import ndtr

from ..guarantees import Assumption
from ..querymodel import GaussianQueryModel

__all__: list[str] = []  # helpers of population.sets

# The design of the quantile (a fixed quadrature, not randomness: the same points on every
# call): _DRAWS standard normal points in m dimensions and their negatives (antithetic, so
# the design is symmetric and the linear term's quantile is exact in the mean).
_DRAWS = 4096
_SEED = 20251126
_DESIGNS: dict[int, np.ndarray] = {}
# Members per batch of the quantile (each one is _DRAWS·2·m doubles of draws).
_BATCH = 64
# Steps of the ascent to the farthest point of the error ellipsoid.
_ASCENT_STEPS = 60


def _design(m: int) -> np.ndarray:
    """The (2·_DRAWS, m) standard normal design for m statistics (cached per m)."""
    if m not in _DESIGNS:
        half = np.random.default_rng([_SEED, m]).standard_normal((_DRAWS, m))
        _DESIGNS[m] = np.concatenate([half, -half])
    return _DESIGNS[m]


def quantile_level(z: float) -> float:
    """The order statistic's level for the quantile Φ(z) of a design of K points: Φ(z) plus
    three binomial sds √(p(1 − p)/K), so that the design's quantile is above the law's
    (a Monte Carlo quantile's error is about one such sd)."""
    p = float(ndtr(z))
    k = 2 * _DRAWS
    return min(p + 3.0 * math.sqrt(p * (1.0 - p) / k), 1.0)


def quantile_shift_stack(
    gap: np.ndarray, metric: np.ndarray, spread: np.ndarray, z: float
) -> np.ndarray:
    """The shift putting each gap at the quantile :func:`quantile_level` (z) of
    ‖M(Δ̂ − V^(1/2)ξ)‖ over ξ ~ N(0, I) (module docstring), along the fitted gap.

    Parameters
    ----------
    gap : ndarray, shape (B, m)
    metric : ndarray, shape (B, m, m)
    spread : ndarray, shape (B, m, m)
        V^(1/2) of each member.
    z : float

    Returns
    -------
    ndarray, shape (B, m)
        Δ* − Δ̂: along the farthest point of the unit error ellipsoid, with ‖MΔ*‖ = D the
        quantile (no shift where D is the fitted distance).
    """
    gap = np.broadcast_to(gap, metric.shape[:-1])
    out = np.zeros(metric.shape[:-1])
    if z <= 0.0:
        return out
    m = gap.shape[-1]
    design = _design(m)
    level = quantile_level(z)
    a = np.einsum("bij,bj->bi", metric, gap)
    b = metric @ spread
    target = np.empty(a.shape[0])
    for lo in range(0, a.shape[0], _BATCH):
        # ‖a − Bξ‖ for every member of the batch and every point of the design.
        pts = a[lo : lo + _BATCH, None, :] - np.einsum("bij,kj->bki", b[lo : lo + _BATCH], design)
        target[lo : lo + _BATCH] = np.quantile(
            np.linalg.norm(pts, axis=-1), level, axis=1, method="higher"
        )
    target = np.maximum(target, np.linalg.norm(a, axis=-1))
    # The direction: the farthest point of the unit error ellipsoid, as the joint set's
    # member (the ascent of _stack.farthest_gap), so that optimal-g's program sees
    # the directions in which the error moves the distance (module docstring).
    bt = np.swapaxes(b, -1, -2)
    g = np.einsum("bij,bj->bi", bt, a)
    gn = np.linalg.norm(g, axis=-1, keepdims=True)
    widest = np.linalg.svd(b)[2][:, 0, :]
    w = np.where(gn > 0, g / np.where(gn > 0, gn, 1.0), widest)
    for _ in range(_ASCENT_STEPS):
        step = np.einsum("bij,bj->bi", bt, a + np.einsum("bij,bj->bi", b, w))
        nrm = np.linalg.norm(step, axis=-1, keepdims=True)
        new = np.where(nrm > 0, step / np.where(nrm > 0, nrm, 1.0), w)
        done = np.max(np.abs(new - w)) <= 1e-12
        w = new
        if done:
            break
    direction = np.einsum("bij,bj->bi", spread, w)
    return step_to_distance(gap, metric, direction, target)


def step_to_distance(
    gap: np.ndarray, metric: np.ndarray, direction: np.ndarray, target: np.ndarray
) -> np.ndarray:
    """t·direction with ‖M(Δ̂ + t·direction)‖ = target, t ≥ 0 (the larger root; no step
    where the target is not beyond the fitted distance). Shapes: gap and direction (B, m),
    metric (B, m, m), target (B,); returns (B, m)."""
    a = np.einsum("bij,bj->bi", metric, gap)
    c = np.einsum("bij,bj->bi", metric, direction)
    cc, ac, aa = np.sum(c * c, -1), np.sum(a * c, -1), np.sum(a * a, -1)
    ok = (cc > 0.0) & (target * target > aa)
    root = np.sqrt(np.where(ok, ac * ac + cc * (target * target - aa), 0.0))
    t = np.where(ok, (-ac + root) / np.where(ok, cc, 1.0), 0.0)
    return t[:, None] * direction


def tight_premise(gm: GaussianQueryModel, cs: Any, beta: float, selected: str) -> Assumption | None:
    """The population premise of a guarantee calibrated on the tight set (the joint set's,
    with this module's gap statement); ``None`` unless the tight set is ``selected`` (the
    caller's :func:`~distpriv.population.sets.selected_set`: that module imports this
    one) and used for ``gm`` (``cs.method == "joint"``)."""
    if cs.method != "joint" or selected != "tight":
        return None
    unc = gm.uncertainty
    method = getattr(unc, "method", "asymptotic laws of the strata moments")
    return Assumption(
        "population",
        f"with probability at least {1 - beta:g} over the draw of the modelling table "
        "(strata sampled at random from the population the protected datasets come "
        "from), the guarantee holds for that population's Gaussian model: for every "
        "pair of Psi, delta at the published noise is at most that of the worst member "
        "of a joint confidence set in the mean gap and the strata's variances",
        None,
        f"{method}; per pair, the mean gap at the {quantile_level(cs.z):.4g} quantile of "
        "the sampling law of delta's own distance psi (the equal-covariance Gaussian "
        "distance with the pair's delta: its gradient in the gap from the exact "
        "accountant, its curvature that of the output distance; a parametric bootstrap of "
        "the gap's error, fixed design), and the strata's log-variances moved along the "
        "gradient of delta by "
        f"the rest of {cs.z:.3g} sd of the linearised delta, z one-sided at level "
        f"1 - {beta:g}/{cs.pairs} per pair (Bonferroni over the {cs.pairs} pair(s) of "
        "Psi); that sd combines independent strata in quadrature and, within a stratum, "
        + (
            "the gap's and the log-variances' errors with the correlations estimated from "
            "the stratum's third and fourth cross moments"
            if getattr(unc, "shape_correlation", None) is not None
            else "the parts' sds summed (no cross moments for this model: their "
            "correlations are bounded, not estimated)"
        )
        + "; valid for delta linearised in these, with the gap's second-order term "
        "included; asymptotic (central-limit) laws; the member checked for the final noise",
    )
