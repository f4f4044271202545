"""Monte Carlo DistP of the tupling mechanism, with confidence intervals.

The likelihood ratio of a tuple ȳ is Q(λ₀)[ȳ]/Q(λ₁)[ȳ] = Σ_i w₀[y_i] / Σ_i w₁[y_i] with
w_b = A#(λ_b)/ν (KM 2019a, proof of Props. 10–11; docs/architecture.md §4).
:func:`tupling_monte_carlo`
draws tuples from Q(λ₀) and from Q(λ₁) in vectorised numpy blocks and keeps the ratios;
:class:`TuplingMonteCarlo` turns them into ε(δ) with a confidence interval, δ(ε),
divergences and the Bayes attack. Exact enumeration for small domains is in
:mod:`distpriv.local.tupling`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import brentq

from ..guarantees import to_jsonable
from ..util.records import field_values
from ..util.validation import (
    RngLike,
    check_delta,
    check_positive_int,
    check_real,
    check_rng,
    readonly,
)
from .profiles import Divergences
from .tupling import TuplingMechanism, _pure_epsilon, _weights
from .utility import AttackResult

__all__ = ["DistPEstimate", "TuplingMonteCarlo", "tupling_distp", "tupling_monte_carlo"]

_DEFAULT_CHUNK = 1 << 16
# At most this many dummies (k × chunk int64) are held at once, whatever k is.
_MAX_DUMMIES_AT_ONCE = 1 << 23


def _importance_ratios(
    mech: TuplingMechanism,
    a_src: np.ndarray,
    w_src: np.ndarray,
    w_oth: np.ndarray,
    n: int,
    gen: np.random.Generator,
    chunk: int,
) -> np.ndarray:
    """Q_other/Q_src at n tuples drawn from Q_src, all in numpy, ``chunk`` tuples at a time."""
    k = mech.k
    chunk = max(1, min(chunk, _MAX_DUMMIES_AT_ONCE // k))  # memory O(k · chunk) bounded
    cdf = np.cumsum(a_src)
    cdf[-1] = 1.0
    out = np.empty(n)
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        real = np.minimum(np.searchsorted(cdf, gen.random(m), side="right"), cdf.size - 1)
        # Dummies laid out (k, m): contiguous rows make the gathers and the sum fast.
        dummies = mech.draw_dummies(gen, (k, m))
        s_src = np.take(w_src, dummies).sum(axis=0)
        s_src += w_src[real]
        s_oth = np.take(w_oth, dummies).sum(axis=0)
        s_oth += w_oth[real]
        out[start : start + m] = s_oth / s_src  # s_src ≥ w_src[real] > 0
    return out


def _kl_inverse(x: float, c: float, upper: bool) -> float:
    """The p on one side of x with kl(x ‖ p) = c (binary KL divergence), or 0 / 1.

    ``upper``: the p ≥ x (1 if even p → 1 stays within c); otherwise the p ≤ x (0 if
    even p → 0 stays within c).
    """

    def excess(p: float) -> float:
        out = -c
        if x > 0:
            out += x * math.log(x / p)
        if x < 1:
            out += (1 - x) * math.log((1 - x) / (1 - p))
        return out

    if upper:
        hi = 1.0 - 1e-16
        if x >= hi or excess(hi) <= 0:
            return 1.0
        return float(brentq(excess, x, hi, xtol=1e-300, rtol=1e-12, maxiter=500))
    lo = 1e-300
    if x <= lo or excess(lo) <= 0:
        return 0.0
    return float(brentq(excess, lo, x, xtol=1e-300, rtol=1e-12, maxiter=500))


def _epsilon_from_sorted(ratios_sorted: np.ndarray, cum_ratio: np.ndarray, delta: float) -> float:
    """inf{ε : mean (1 − e^ε r_i)_+ ≤ δ} from ratios r = Q_other/Q_src sorted ascending.

    Points sorted by decreasing privacy loss are a prefix of ``ratios_sorted``; the answer
    is max over prefixes m with m/n > δ of ln((m/n − δ) / (Σ_{i ≤ m} r_i / n)).
    """
    n = ratios_sorted.size
    m = np.arange(1, n + 1, dtype=np.float64) / n
    ok = m > delta
    if not np.any(ok):
        return -math.inf
    with np.errstate(divide="ignore"):
        vals = np.log(m[ok] - delta) - np.log(cum_ratio[ok] / n)
    return float(np.max(vals))


@dataclass(frozen=True)
class DistPEstimate:
    """(ε, δ)-DistP: the ε for a δ, with a confidence interval."""

    delta: float
    #: Point estimate (exact value when ``method`` is ``"exact"``).
    epsilon: float
    #: Confidence interval (equal to ``epsilon`` when exact).
    low: float
    high: float
    #: Coverage of [low, high] (``None`` when exact).
    confidence: float | None
    #: ``"exact"``, ``"enumeration"`` or ``"monte-carlo"``.
    method: str
    #: Tuples per direction for Monte Carlo.
    n_samples: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return to_jsonable(field_values(self))


@dataclass(frozen=True, eq=False)
class TuplingMonteCarlo:
    """Samples of the likelihood ratio of the tupling mechanism under λ₀ and under λ₁.

    Notes
    -----
    For fixed ε, δ_{0→1}(ε) = E_{ȳ~Q(λ₀)}[(1 − e^ε r(ȳ))_+] is the mean of a [0, 1]-valued
    variable; its empirical mean over n tuples is within the Chernoff–Hoeffding (binary
    KL) bound n·kl(δ̂ ‖ δ) ≤ ln(4/α) of the truth except with probability α/4 on each
    side. Because δ̂ decreases in ε, inverting the bound at δ gives an interval for ε(δ):
    ε_high is the empirical ε at the level δ⁻ < δ with n·kl(δ⁻ ‖ δ) = ln(4/α), ε_low the
    one at δ⁺ > δ. With the two directions (each with its own n tuples) the four one-sided
    bounds give joint coverage ≥ 1 − α. Widths shrink as √(δ ln(4/α)/n) in δ.
    """

    #: ndarray, shape (n,)
    #: Q(λ₁)[ȳ]/Q(λ₀)[ȳ] at ȳ ~ Q(λ₀), sorted ascending (= e^{−privacy loss}).
    ratios0: np.ndarray
    #: ndarray, shape (n,)
    #: Q(λ₀)[ȳ]/Q(λ₁)[ȳ] at ȳ ~ Q(λ₁), sorted ascending.
    ratios1: np.ndarray
    #: The exact ε at δ = 0 (closed form, see the module docstring).
    epsilon_pure: float
    #: Coverage of the intervals.
    confidence: float
    #: The mechanism's k and |Y|.
    k: int
    n_outputs: int
    _cum0: np.ndarray = field(init=False, repr=False)
    _cum1: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        r0 = readonly(np.sort(np.asarray(self.ratios0, dtype=np.float64)))
        r1 = readonly(np.sort(np.asarray(self.ratios1, dtype=np.float64)))
        object.__setattr__(self, "ratios0", r0)
        object.__setattr__(self, "ratios1", r1)
        object.__setattr__(self, "_cum0", readonly(np.cumsum(r0)))
        object.__setattr__(self, "_cum1", readonly(np.cumsum(r1)))

    @property
    def n_samples(self) -> int:
        """Tuples per direction."""
        return int(self.ratios0.size)

    def to_dict(self, deltas: tuple[float, ...] = (0.001, 0.01, 0.1)) -> dict[str, Any]:
        """JSON-safe summary: sizes, the exact pure ε and ε(δ) with intervals."""
        return to_jsonable(
            {
                **field_values(self, "k n_outputs n_samples confidence epsilon_pure"),
                "epsilon": [self.epsilon(d).to_dict() for d in deltas],
            }
        )

    def _eps(self, level: float) -> float:
        if level >= 1.0:
            return 0.0
        if level < 0.0:
            return math.inf
        e0 = _epsilon_from_sorted(self.ratios0, self._cum0, level)
        e1 = _epsilon_from_sorted(self.ratios1, self._cum1, level)
        return float(min(max(e0, e1, 0.0), self.epsilon_pure))

    def epsilon(self, delta: float) -> DistPEstimate:
        """ε of (ε, δ)-DistP with its confidence interval (see Notes of the class).

        Parameters
        ----------
        delta : float
            δ in (0, 1); at δ = 0 the exact closed form is returned.
        """
        dlt = check_delta(delta)
        if dlt == 0.0:
            e = self.epsilon_pure
            return DistPEstimate(0.0, e, e, e, None, "exact", self.n_samples)
        n = self.n_samples
        c = math.log(4.0 / (1.0 - self.confidence)) / n
        level_low = _kl_inverse(dlt, c, upper=False)  # δ⁻ < δ: certifies the upper end
        level_high = _kl_inverse(dlt, c, upper=True)
        high = self.epsilon_pure if level_low <= 0.0 else self._eps(level_low)
        return DistPEstimate(
            dlt, self._eps(dlt), self._eps(level_high), high, self.confidence, "monte-carlo", n
        )

    def delta(self, epsilon: float) -> tuple[float, float, float]:
        """δ(ε) estimate (max over directions) with its (low, high) confidence bounds."""
        eps = check_real(epsilon, "epsilon", low=0.0)
        factor = math.exp(eps) if eps < 709.0 else math.inf
        with np.errstate(invalid="ignore"):  # inf * 0: the tuple is impossible under λ₁
            d0 = float(
                np.mean(np.maximum(0.0, np.nan_to_num(1.0 - factor * self.ratios0, nan=1.0)))
            )
            d1 = float(
                np.mean(np.maximum(0.0, np.nan_to_num(1.0 - factor * self.ratios1, nan=1.0)))
            )
        c = math.log(4.0 / (1.0 - self.confidence)) / self.n_samples
        est = max(d0, d1)
        low = max(_kl_inverse(d0, c, upper=False), _kl_inverse(d1, c, upper=False))
        high = max(_kl_inverse(d0, c, upper=True), _kl_inverse(d1, c, upper=True))
        return est, low, high

    def divergences(self) -> Divergences:
        """Monte Carlo KL, TV, χ², Hellinger (and exact D∞) in both directions.

        KL(Q₀‖Q₁) = E₀[−ln r], TV = E₀[(1 − r)_+], χ²(Q₀‖Q₁) = E₀[1/r] − 1 and
        Hellinger = 1 − E₀[√r], with r the sampled ratios; standard errors (of the worse
        direction) are sample standard deviations over √n. χ² has heavy tails: its
        standard error can understate the error.
        """
        fwd, se0 = _mc_divergences(self.ratios0)
        bwd, se1 = _mc_divergences(self.ratios1)
        fwd["dinf"] = bwd["dinf"] = self.epsilon_pure
        errors = {}
        for name in fwd:
            errors[name] = se0.get(name, 0.0) if fwd[name] >= bwd[name] else se1.get(name, 0.0)
        return Divergences(fwd, bwd, 0.0, errors)

    def attack(self, prior: float = 0.5) -> AttackResult:
        """Success of the Bayes decision rule on one tuple, with 95 % normal intervals.

        The attacker guesses λ₀ when π₀ Q(λ₀)[ȳ] > π₁ Q(λ₁)[ȳ] (ties: a fair coin).
        """
        pi0 = check_real(
            prior, "prior", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False
        )
        thr0, thr1 = pi0 / (1 - pi0), (1 - pi0) / pi0
        s0 = _win_rate(self.ratios0, thr0)
        s1 = _win_rate(self.ratios1, thr1)
        n = self.n_samples
        half0 = 1.96 * math.sqrt(max(s0 * (1 - s0), 0.0) / n)
        acc = pi0 * s0 + (1 - pi0) * s1
        half_acc = 1.96 * math.sqrt((pi0**2 * s0 * (1 - s0) + (1 - pi0) ** 2 * s1 * (1 - s1)) / n)
        return AttackResult(
            success_rate=s0,
            accuracy=acc,
            prior=pi0,
            success_interval=(max(0.0, s0 - half0), min(1.0, s0 + half0)),
            accuracy_interval=(max(0.0, acc - half_acc), min(1.0, acc + half_acc)),
            method="monte-carlo",
        )


def _win_rate(ratios: np.ndarray, threshold: float) -> float:
    """Pr[ratio < threshold] + ½ Pr[ratio = threshold] (ties within 1e-12 relative)."""
    tol = 1e-12 * threshold
    lo = np.searchsorted(ratios, threshold - tol, side="left")
    hi = np.searchsorted(ratios, threshold + tol, side="right")
    return float((lo + 0.5 * (hi - lo)) / ratios.size)


def _mc_divergences(r: np.ndarray) -> tuple[dict[str, float], dict[str, float]]:
    n = r.size
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        neg_log = -np.log(r)
        inv = 1.0 / r
    terms = {
        "kl": neg_log,
        "tv": np.maximum(0.0, 1.0 - r),
        "chi2": inv - 1.0,
        "hellinger": 1.0 - np.sqrt(r),
    }
    est, se = {}, {}
    for name, t in terms.items():
        if np.all(np.isfinite(t)):
            est[name] = max(float(t.mean()), 0.0)  # every one is ≥ 0; noise can dip below
            se[name] = float(t.std(ddof=1) / math.sqrt(n)) if n > 1 else math.inf
        else:
            est[name], se[name] = math.inf, math.inf
    return est, se


def tupling_monte_carlo(
    mechanism: TuplingMechanism,
    lam0: ArrayLike,
    lam1: ArrayLike,
    *,
    n_samples: int = 1_000_000,
    confidence: float = 0.95,
    rng: RngLike = None,
    chunk_size: int = _DEFAULT_CHUNK,
) -> TuplingMonteCarlo:
    """Sample the tupling mechanism's likelihood ratio under both distributions.

    Draws ``n_samples`` tuples from Q(λ₀) and as many from Q(λ₁), vectorised in numpy
    (``chunk_size`` tuples at a time, so memory stays O(k · chunk_size)): the obfuscated
    entry from A#(λ_b) (by inverse CDF), the k dummies from ν, and the ratio
    Σ_i w_{1−b}[y_i] / Σ_i w_b[y_i]. The position of the real entry does not change the
    ratio and is not drawn.

    Parameters
    ----------
    mechanism : TuplingMechanism
    lam0, lam1 : array_like, shape (n_x,)
    n_samples : int
        Tuples per direction (≥ 2).
    confidence : float
        Joint coverage of the intervals of :meth:`TuplingMonteCarlo.epsilon`, in (0, 1).
    rng : int, Generator or None
    chunk_size : int
        Tuples per vectorised block.

    Returns
    -------
    TuplingMonteCarlo
    """
    a0, a1, w0, w1 = _weights(mechanism, lam0, lam1)
    n = check_positive_int(n_samples, "n_samples", minimum=2)
    conf = check_real(
        confidence, "confidence", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False
    )
    chunk = check_positive_int(chunk_size, "chunk_size", minimum=1)
    gen = check_rng(rng)
    r0 = _importance_ratios(mechanism, a0, w0, w1, n, gen, chunk)
    r1 = _importance_ratios(mechanism, a1, w1, w0, n, gen, chunk)
    return TuplingMonteCarlo(r0, r1, _pure_epsilon(a0, a1), conf, mechanism.k, mechanism.n_outputs)


def tupling_distp(
    mechanism: TuplingMechanism,
    lam0: ArrayLike,
    lam1: ArrayLike,
    *,
    delta: float,
    n_samples: int = 1_000_000,
    confidence: float = 0.95,
    rng: RngLike = None,
) -> DistPEstimate:
    """ε of (ε, δ)-DistP of the tupling mechanism by Monte Carlo, with a confidence interval.

    See :class:`TuplingMonteCarlo` for the method; :func:`tupling_exact` for small domains.
    """
    mc = tupling_monte_carlo(
        mechanism, lam0, lam1, n_samples=n_samples, confidence=confidence, rng=rng
    )
    return mc.epsilon(delta)
