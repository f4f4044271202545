"""Expected hits: a Rao–Blackwellised count for the data-level check, with a certified bound.

The data-level check (:mod:`distpriv.attacks.verify`) bounds δ_{a→b}(ε) from below by
P_a(S) − e^ε P_b(S) for a set S of releases fixed before the evaluation draws. Counting
whether each evaluation release y = f + Z falls in S gives a 0/1 hit whose variance is
P(S)(1 − P(S)): with P(S) of order 10⁻² and δ of order 10⁻³ it needs hundreds of thousands
of datasets. The noise Z is known, so the hit can be replaced by its conditional
expectation given the statistics f (Rao–Blackwell):

    h_S(f) = P(f + Z ∈ S | f),   E_f[h_S(f)] = P(Y ∈ S)   (tower property),

whose variance Var(h_S(f)) = Var(1{Y ∈ S}) − E[Var(1{Y ∈ S} | f)] is smaller by the noise's
share of the hit's variance (all of it on a noise-dominated release).

**The set.** For Gaussian noise Z ~ N(0, Σ_Z) and a half-space S = {y : a·y > t},
a·Z ~ N(0, aᵀΣ_Z a), so h_S(f) = Φ((a·f − t)/s) with s² = aᵀΣ_Z a in closed form (and
h_S(f) = 1{a·f > t} where s = 0). The direction a is Fisher's discriminant of the fit
split's moments, a ∝ (Σ̄_f + Σ_Z)⁻¹(μ_a − μ_b) (computed in standardised coordinates), the
likelihood-ratio set of two Gaussians with a common covariance; its threshold maximises a
one-standard-error lower bound on the train split. Both are fixed before the evaluation
draws, so h_S(f) is an i.i.d. sequence on them.

**The bound (bounded averages; Clopper–Pearson is for 0/1 counts only).** On paired
evaluation datasets (f_{a,k}, f_{b,k}) the values D_k = h_S(f_{a,k}) − e^ε h_S(f_{b,k}) are
i.i.d. in [−e^ε, 1] with mean P_a(S) − e^ε P_b(S) ≤ δ_{a→b}(ε). For i.i.d. X_k in [0, 1]
with sample mean X̄ and unbiased sample variance V_n, Maurer & Pontil (2009, "Empirical
Bernstein bounds and sample variance penalization", COLT, Thm 4) give, with probability at
least 1 − α,

    E X ≥ X̄ − √(2 V_n ln(2/α) / n) − 7 ln(2/α) / (3(n − 1)).

Derivation: Bernstein's inequality with the true variance σ² gives
E X ≥ X̄ − √(2σ² ln(2/α)/n) − ln(2/α)/(3n) with probability 1 − α/2; their Thm 10 bounds
σ ≤ √V_n + √(2 ln(2/α)/(n − 1)) with probability 1 − α/2; substituting and the union bound
give the display (√(2σ²L/n) ≤ √(2V_nL/n) + 2L/√(n(n−1)) and 2L/√(n(n−1)) + L/(3n) ≤
7L/(3(n − 1))). Applied to X_k = (D_k + e^ε)/(1 + e^ε) and scaled back, the lower bound on
E D has the same form with V_n the sample variance of D and the last term multiplied by the
range 1 + e^ε; the upper bound is the same applied to −D. The bound needs nothing about
the law of D but its range, which is why Rao–Blackwellising keeps the check certified.
One bound for D (instead of one for each of P_a and P_b) uses the variance of the
difference, Var(h_a) + e^{2ε} Var(h_b), and spends no Bonferroni split between them.

tests/attacks/test_verify_expected.py measures the bound's coverage by simulation on
cases with known means and checks h_S against brute-force noise draws and P(S) against the
exact Gaussian probability.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from ..errors import ParameterError

__all__ = [
    "HalfSpace",
    "RunningMoments",
    "choose_threshold",
    "empirical_bernstein",
    "fit_halfspace",
]


@dataclass(frozen=True)
class RunningMoments:
    """Count, mean and sum of squared deviations of a stream (Chan et al. 1979 merge).

    Merging batch summaries this way keeps the variance exact to rounding whatever the
    batch sizes (no Σx² − (Σx)²/n cancellation).
    """

    n: int = 0
    mean: float = 0.0
    m2: float = 0.0

    def add(self, x: np.ndarray) -> RunningMoments:
        """The moments of the stream followed by the values ``x`` (1-D)."""
        k = int(x.size)
        if k == 0:
            return self
        mu = float(np.mean(x))
        m2 = float(np.sum((x - mu) ** 2))
        n = self.n + k
        d = mu - self.mean
        return RunningMoments(n, self.mean + d * k / n, self.m2 + m2 + d * d * self.n * k / n)

    @property
    def variance(self) -> float:
        """Unbiased sample variance (0 below two values)."""
        return self.m2 / (self.n - 1) if self.n > 1 else 0.0


def empirical_bernstein(
    moments: RunningMoments, *, low: float, high: float, alpha: float
) -> tuple[float, float]:
    """One-sided lower and upper bounds, each at level 1 − α, on the mean of i.i.d. values in
    [low, high] (Maurer & Pontil 2009, Thm 4; the module docstring derives it).

    Parameters
    ----------
    moments : RunningMoments
        Count n ≥ 2, mean and squared deviations of the values.
    low, high : float
        Known range of every value (low < high).
    alpha : float
        Error probability of each one-sided bound, in (0, 1).

    Returns
    -------
    (float, float)
        (lower, upper), clipped to [low, high].
    """
    if not high > low:
        raise ParameterError(f"empirical_bernstein: high {high} must exceed low {low}")
    if not 0.0 < alpha < 1.0:
        raise ParameterError(f"empirical_bernstein: alpha must be in (0, 1), got {alpha}")
    n = moments.n
    if n < 2:
        return low, high
    log_term = math.log(2.0 / alpha)
    width = math.sqrt(2.0 * max(moments.variance, 0.0) * log_term / n) + 7.0 * (
        high - low
    ) * log_term / (3.0 * (n - 1))
    return max(low, moments.mean - width), min(high, moments.mean + width)


@dataclass(frozen=True)
class HalfSpace:
    """The set S = {y : direction·y > threshold} of releases y = f + Z, Z ~ N(0, Σ_Z).

    ``direction`` is scaled so that its noise standard deviation s = √(aᵀΣ_Z a) is 1 (or
    0 when the noise misses it); :meth:`expected_hits` is P(f + Z ∈ S | f).
    """

    direction: np.ndarray  # (m,)
    threshold: float
    noise_sd: float  # 1.0, or 0.0 when the noise has no component along the direction

    def projections(self, f: np.ndarray) -> np.ndarray:
        """a·f per row of f, shape (n,)."""
        return np.asarray(f, dtype=np.float64) @ self.direction

    def expected_hits(self, f: np.ndarray, threshold: float | None = None) -> np.ndarray:
        """P(f_k + Z ∈ S | f_k) per row f_k of f (shape (n, m)) = Φ(a·f_k − t), in [0, 1]."""
        t = self.threshold if threshold is None else threshold
        z = self.projections(f) - t
        if self.noise_sd == 0.0:
            return (z > 0).astype(np.float64)
        return np.asarray(ndtr(z), dtype=np.float64)


# A direction whose noise variance is below this fraction of its spread's is noiseless.
_NOISELESS = 1e-12


def fit_halfspace(
    fit_a: np.ndarray, fit_b: np.ndarray, noise_cov: np.ndarray, sign: float = 1.0
) -> HalfSpace:
    """Fisher's discriminant direction of the fit split's moments (threshold 0 for now).

    a ∝ (½(Σ̂_a + Σ̂_b) + Σ_Z)⁻¹ (μ̂_a − μ̂_b), solved in coordinates standardised by the
    pooled standard deviations (spreads 1e-3 and 1e3 keep every direction; a least-squares
    solve where the matrix is singular), times ``sign`` (−1: the set for the other
    direction of the pair).

    Parameters
    ----------
    fit_a, fit_b : ndarray, shape (n_a, m), (n_b, m)
        Statistics of the fit split under θ_a and θ_b.
    noise_cov : ndarray, shape (m, m)
        Σ_Z of the (Gaussian) noise.
    sign : float
        +1 or −1.

    Returns
    -------
    HalfSpace
    """
    m = fit_a.shape[1]
    mu = fit_a.mean(axis=0) - fit_b.mean(axis=0)
    cov = 0.5 * (
        np.cov(fit_a, rowvar=False).reshape(m, m) + np.cov(fit_b, rowvar=False).reshape(m, m)
    )
    total = cov + noise_cov
    sd = np.sqrt(np.diag(total))
    scale = np.where(sd > 0, sd, 1.0)
    a_std = np.linalg.lstsq(total / np.outer(scale, scale), mu / scale, rcond=None)[0]
    a = sign * a_std / scale
    s2 = float(a @ noise_cov @ a)
    spread = float(a @ cov @ a)
    if s2 > _NOISELESS * max(spread, s2) and s2 > 0:
        return HalfSpace(a / math.sqrt(s2), 0.0, 1.0)
    norm = float(np.linalg.norm(a))
    return HalfSpace(a / norm if norm > 0 else a, 0.0, 0.0)


# Thresholds tried on the train split: quantiles of the projections, and beyond them.
_N_QUANTILES = 120
_N_TAIL = 40


def choose_threshold(
    hs: HalfSpace, train_a: np.ndarray, train_b: np.ndarray, epsilon: float
) -> tuple[HalfSpace, float]:
    """The half-space with the threshold maximising mean(D) − sd(D)/√n on the train split.

    D_k = h(f_{a,k}) − e^ε h(f_{b,k}) on paired train statistics (the first min(n_a, n_b)
    of each): a lower bound about one standard error below the estimate, which favours
    thresholds whose value is not a fluke of few draws (the selection need not be valid;
    the evaluation split's bound is).

    Returns
    -------
    (HalfSpace, float)
        The set with its threshold, and its criterion (comparable with the counted sets'
        one-standard-error Clopper–Pearson criterion).
    """
    k = min(train_a.shape[0], train_b.shape[0])
    pa, pb = hs.projections(train_a[:k]), hs.projections(train_b[:k])
    both = np.concatenate([pa, pb])
    lo, hi = float(both.min()), float(both.max())
    pad = 4.0 * (hs.noise_sd or 0.0)
    ts = np.unique(
        np.concatenate(
            [
                np.quantile(both, np.linspace(0.0, 1.0, _N_QUANTILES)),
                np.linspace(lo - pad, hi + pad, _N_TAIL),
            ]
        )
    )
    e = math.exp(epsilon)
    best_t, best_crit = 0.0, -math.inf
    # Blocks of thresholds: k × block values at a time (bounded memory at any k).
    block = max(1, 2_000_000 // max(k, 1))
    for start in range(0, ts.size, block):
        t = ts[start : start + block]
        if hs.noise_sd == 0.0:
            ha = (pa[:, None] > t[None, :]).astype(np.float64)
            hb = (pb[:, None] > t[None, :]).astype(np.float64)
        else:
            ha, hb = ndtr(pa[:, None] - t[None, :]), ndtr(pb[:, None] - t[None, :])
        d = ha - e * hb
        crit = d.mean(axis=0) - d.std(axis=0, ddof=1) / math.sqrt(k)
        i = int(np.argmax(crit))
        if crit[i] > best_crit:
            best_t, best_crit = float(t[i]), float(crit[i])
    return HalfSpace(hs.direction, best_t, hs.noise_sd), best_crit
