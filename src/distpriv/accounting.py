"""Gaussian accounting: the classical constant, the exact (analytic) privacy profile of two
Gaussians with one covariance, and the exact profile of two Gaussians with different
(possibly singular) covariances.

Two Gaussians with the same covariance S and means μᵢ, μⱼ are (ε, δ)-indistinguishable
in both directions iff, with the Mahalanobis distance D = ‖S^(-1/2)(μᵢ − μⱼ)‖₂,

    δ(ε; D) = Φ(D/2 − ε/D) − e^ε Φ(−D/2 − ε/D) ≤ δ

(Balle & Wang 2018, Thm 8; the same profile as N(0, 1) vs N(D, 1)). The classical constant
c = √(2 ln(1.25/δ)) used by Chen & Ohrimenko 2023 (Thm 4.2, 4.4, 4.5) and Zhang et al.
2022 (Alg. 1) is only proven for ε < 1 and can under-noise above it (DESIGN.md §4).

Two Gaussians with different covariances (issue 18): one statistic, or one whitened
direction carrying the whole difference, is exact through the quadratic loss region
(normal CDF differences, ``method="quadratic region"``); several directions use the
Laplace inversion of the loss's moment generating function along two contours that must
agree (``"characteristic function"``; when P is more than ~100× wider than Q in a
direction, on the reverse pair through δ_PQ(ε) = 1 − e^ε + e^ε δ_QP(−ε)); where both
directions are ill-conditioned, or the contours disagree, the result is the certified
Rényi/Chernoff upper bound, labelled ``"Renyi bound"``. The ``gx2`` package (Das &
Geisler) was measured and not adopted: it computes CDFs rather than the hockey-stick
divergence, its ray-trace method is unseeded Monte Carlo above 4 dimensions (two calls on
one 5-D tail gave 0.7872 and 0.7696) and its Imhof/IFFT methods carry no certified bound
(0.49996 on the first reproducer, exact 0.99996). See docs/guarantees.md, "The accountant
on every pair".

References
----------
Balle, B. and Wang, Y.-X. (2018). Improving the Gaussian mechanism for differential
privacy: analytical calibration and optimal denoising. ICML.
Imhof, J. P. (1961). Computing the distribution of quadratic forms in normal variables.
Biometrika 48, 419–426.
Davies, R. B. (1980). The distribution of a linear combination of χ² random variables.
Applied Statistics 29, 323–333.
Canonne, C., Kamath, G. and Steinke, T. (2020). The discrete Gaussian for differential
privacy. NeurIPS (Prop. 12: Rényi divergence to (ε, δ)).
Das, A. and Geisler, W. S. (2021). A method to integrate and classify normal
distributions. Journal of Vision 21(10):1.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.integrate import IntegrationWarning, quad
from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtr

from ._validation import (
    check_array,
    check_choice,
    check_covariance,
    check_delta,
    check_epsilon,
    check_privacy,
    check_real,
)
from .errors import AssumptionWarning, ParameterError

__all__ = [
    "CALIBRATIONS",
    "GaussianPairProfile",
    "classical_covers",
    "gaussian_constant",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_pair_delta",
    "gaussian_pair_epsilon",
    "gaussian_pair_profile",
    "max_mahalanobis_distance",
]

# "exact": the noise meets (ε, δ) under the exact profile of the model's own covariances
# (gaussian_pair_delta); "analytic"/"classical": the papers' equal-covariance calibrations.
CALIBRATIONS = ("exact", "analytic", "classical")
# The two calibrations of the papers, from a Mahalanobis distance D*(ε, δ).
DISTANCE_CALIBRATIONS = ("analytic", "classical")


def gaussian_constant(delta: float) -> float:
    """Classical Gaussian constant c = √(2 ln(1.25/δ)).

    Valid only for ε < 1 (Dwork & Roth 2014, Thm A.1; Chen & Ohrimenko 2023, Thm 4.2).

    Parameters
    ----------
    delta : float
        δ in (0, 1).

    Returns
    -------
    float
        The constant c, so that σ = cΔ/ε gives (ε, δ)-DP for ε < 1.
    """
    dlt = check_delta(delta, positive=True)
    return math.sqrt(2.0 * math.log(1.25 / dlt))


def classical_covers(epsilon: float) -> bool:
    """Whether the classical constant's proof covers ``epsilon`` (it needs ε < 1)."""
    return epsilon < 1.0


def _log_gaussian_delta(epsilon: float, distance: np.ndarray) -> np.ndarray:
    """log δ(ε; D) for D > 0, computed without cancellation.

    δ = e^a − e^b with a = log Φ(D/2 − ε/D), b = ε + log Φ(−D/2 − ε/D) and b < a, so
    log δ = a + log(−expm1(b − a)).
    """
    d = distance
    a = log_ndtr(d / 2.0 - epsilon / d)
    b = epsilon + log_ndtr(-d / 2.0 - epsilon / d)
    with np.errstate(divide="ignore"):
        return a + np.log(-np.expm1(np.minimum(b - a, 0.0)))


def gaussian_delta(distance: float | np.ndarray, *, epsilon: float) -> float | np.ndarray:
    """Exact privacy profile δ(ε) of N(0, 1) versus N(distance, 1).

    Equivalently, of two Gaussians with a shared covariance at Mahalanobis distance
    ``distance``. Computed in log space, so it is accurate for large ε and tiny δ.

    Parameters
    ----------
    epsilon : float
        ε > 0.
    distance : float or array_like
        Mahalanobis distance(s) D ≥ 0 (any shape; broadcast).

    Returns
    -------
    float or ndarray
        δ(ε; D) in [0, 1), of the same shape as ``distance``. δ(ε; 0) = 0.

    References
    ----------
    Balle & Wang (2018), Thm 8.
    """
    eps = check_epsilon(epsilon)
    scalar = np.ndim(distance) == 0
    d = np.asarray(distance, dtype=np.float64)
    if not np.all(np.isfinite(d)):
        from .errors import ParameterError

        raise ParameterError(f"distance must be finite, got {distance!r}")
    if np.any(d < 0):
        from .errors import ParameterError

        raise ParameterError(f"distance must be >= 0, got {distance!r}")
    out = np.zeros_like(d)
    pos = d > 0
    if np.any(pos):
        out[pos] = np.exp(_log_gaussian_delta(eps, d[pos]))
    return float(out) if scalar else out


def gaussian_epsilon(distance: float, *, delta: float) -> float:
    """Smallest ε with δ(ε; D) ≤ δ for two Gaussians at Mahalanobis distance D.

    Parameters
    ----------
    delta : float
        δ in (0, 1).
    distance : float
        Mahalanobis distance D ≥ 0.

    Returns
    -------
    float
        ε ≥ 0 (0 when D = 0 or when δ(0; D) ≤ δ already).
    """
    dlt = check_delta(delta, positive=True)
    dist = check_real(distance, "distance", low=0.0)
    if dist == 0.0:
        return 0.0
    log_target = math.log(dlt)

    def f(e: float) -> float:
        return float(_log_gaussian_delta(e, np.array([dist]))[0]) - log_target

    if f(1e-300) <= 0:  # δ(0; D) = 2Φ(D/2) − 1 already within δ
        return 0.0
    hi = max(1.0, dist * dist)
    while f(hi) > 0:
        hi *= 2.0
    return float(brentq(f, 0.0, hi, xtol=1e-14, rtol=4 * np.finfo(float).eps, maxiter=500))


def _analytic_distance(epsilon: float, delta: float) -> float:
    """Root D of δ(ε; D) = δ; δ(ε; D) is strictly increasing in D."""
    log_target = math.log(delta)

    def f(log_d: float) -> float:
        return float(_log_gaussian_delta(epsilon, np.array([math.exp(log_d)]))[0]) - log_target

    # Search in log D: δ(ε; D) spans many orders of magnitude, and this keeps the
    # root-finder's relative accuracy uniform (the tests ask δ to 1e-9 relative).
    lo, hi = (
        math.log(epsilon / gaussian_constant_unchecked(delta)) - 1.0,
        math.log(max(4.0, 4.0 * math.sqrt(epsilon))),
    )
    while f(lo) > 0:
        lo -= 2.0
    while f(hi) < 0:
        hi += 1.0
    log_d = brentq(f, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
    return math.exp(log_d)


def gaussian_constant_unchecked(delta: float) -> float:
    """c = √(2 ln(1.25/δ)) without validation (internal use)."""
    return math.sqrt(2.0 * math.log(1.25 / delta))


def max_distance(epsilon: float, delta: float, calibration: str) -> float:
    """Largest admissible Mahalanobis distance D*(ε, δ), without validation or warnings.

    Internal helper of :func:`max_mahalanobis_distance`; mechanisms call it after they have
    validated the parameters and recorded their own assumption about the calibration.
    """
    if calibration == "classical":
        return epsilon / gaussian_constant_unchecked(delta)
    return _analytic_distance(epsilon, delta)


def max_mahalanobis_distance(
    *, epsilon: float, delta: float, calibration: str = "analytic"
) -> float:
    """Largest D such that two Gaussians at Mahalanobis distance D are (ε, δ)-indistinguishable.

    Parameters
    ----------
    epsilon : float
        ε > 0.
    delta : float
        δ in (0, 1); a Gaussian cannot give δ = 0.
    calibration : {"analytic", "classical"}
        ``"analytic"`` (default): the exact root of :func:`gaussian_delta` (Balle & Wang
        2018). ``"classical"``: ε / c with c = √(2 ln(1.25/δ)) (Chen & Ohrimenko 2023,
        Thm 4.2/4.4), proven only for ε < 1; an :class:`AssumptionWarning` is issued for
        ε ≥ 1.

    Returns
    -------
    float
        D*(ε, δ). A Gaussian mechanism with sensitivity Δ (in the metric of the noise
        covariance) needs σ = Δ / D*.

    Examples
    --------
    >>> round(max_mahalanobis_distance(epsilon=1.0, delta=1e-3), 4)
    0.3884
    >>> round(max_mahalanobis_distance(epsilon=1.0, delta=1e-3, calibration="classical"), 4)
    0.2648
    """
    eps, dlt = check_privacy(epsilon, delta, delta_positive=True)
    cal = check_choice(calibration, "calibration", DISTANCE_CALIBRATIONS)
    if cal == "classical" and not classical_covers(eps):
        warnings.warn(
            f"the classical Gaussian constant is only proven for epsilon < 1 "
            f"(Chen & Ohrimenko 2023, Thm 4.2); epsilon={eps:g} is outside it and may "
            "under-noise: use calibration='analytic'",
            AssumptionWarning,
            stacklevel=2,
        )
    return max_distance(eps, dlt, cal)


# ---------------------------------------------------------------------------------------
# Two Gaussians with different covariances: the privacy loss is a generalised chi-square.
# ---------------------------------------------------------------------------------------

# Eigenvalues of the standardised covariance sum at rounding level (relative to the
# largest) are its null space: there both covariances vanish and only the means can
# differ. Nothing above rounding is dropped: a small eigenvalue is a real direction.
_NULL_RTOL = 64 * np.finfo(float).eps
# Beyond this condition number of the retained directions the whitening cannot resolve
# how the covariances differ: δ = 1 is reported (an upper bound), never a guess.
_MAX_CONDITION = 1e13
# A mean difference whose part in that null space is above this fraction of its norm is
# a real difference, not rounding: the supports are parallel affine spaces and δ = 1.
_NULL_DIFF_RTOL = 1e-10
# A whitened variance below this means one Gaussian is degenerate in a direction where
# the other is not (up to 1e-12 of the sum): the supports differ and δ = 1 is reported,
# which is an upper bound whatever the true tiny variance is.
_DEGENERATE_TOL = 1e-12
# Default absolute accuracy requested from the characteristic-function inversion.
_DEFAULT_TOL = 1e-12
_GAUSS_NODES, _GAUSS_WEIGHTS = np.polynomial.legendre.leggauss(15)
_FINE_NODES, _FINE_WEIGHTS = np.polynomial.legendre.leggauss(30)


@dataclass(frozen=True)
class GaussianPairProfile:
    """δ(ε) of P = N(μ_p, Σ_p) against Q = N(μ_q, Σ_q), one direction, with its error.

    Attributes
    ----------
    epsilon : float
        ε at which the profile was evaluated.
    delta : float
        An upper bound on δ(ε) = sup_S P(S) − e^ε Q(S): ``estimate + error_bound``,
        rounded up and capped at 1. This is the value to compare against a target.
    estimate : float
        The computed value of δ(ε) (without the error bound).
    error_bound : float
        Absolute error bound of ``estimate``: a rigorous truncation bound of the
        inversion integral, plus the quadrature's error estimate (difference of a 15- and
        a 30-point Gauss–Legendre rule on every subinterval, QUADPACK's estimate on the
        oscillatory tail), plus rounding (of the integrand, and first-order rounding of
        the joint whitening, κ·u relative with κ the condition number of the
        standardised covariance sum); a few ulps for the closed forms.
    method : str
        ``"closed form"`` (equal covariances: Balle & Wang 2018), ``"identical"``
        (P = Q), ``"different supports"`` (δ = 1), ``"point mass"`` (constant privacy
        loss), ``"quadratic region"`` (one statistic or one differing direction: exact
        normal CDF differences), ``"characteristic function"`` (two inversion contours
        that agree) or ``"Renyi bound"`` (a certified upper bound where the inversion is
        ill-conditioned; then ``estimate`` is 0 and ``error_bound`` equals ``delta``).
    dim : int
        Dimension of the common support after removing directions where both
        covariances vanish.
    detail : str
        Why a shortcut was taken, in words.
    """

    epsilon: float
    delta: float
    estimate: float
    error_bound: float
    method: str
    dim: int
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "estimate": self.estimate,
            "error_bound": self.error_bound,
            "method": self.method,
            "dim": self.dim,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class _Loss:
    """L = c + Σ_k (λ_k Z_k² + β_k Z_k), Z ~ N(0, I): the privacy loss under P."""

    lam: np.ndarray
    beta: np.ndarray
    const: float


@dataclass(frozen=True)
class _Decomposition:
    """P and Q in common whitened coordinates where both covariances are diagonal.

    P: y ~ N(shift, diag(a)), Q: y ~ N(0, diag(b)), a + b = 1 (up to rounding). ``kind``
    is ``"regular"`` or a shortcut: ``"different supports"`` or ``"identical"``.
    """

    kind: str
    a: np.ndarray
    b: np.ndarray
    shift: np.ndarray
    detail: str = ""
    condition: float = 1.0
    degenerate: str = ""  # "P" or "Q": which one is degenerate (kind "different supports")

    def swapped(self) -> _Decomposition:
        """Q against P in the same whitening: a and b exchanged, the shift negated.

        Exchanging P and Q leaves the standardised sum and its eigendecomposition as they
        are (floating-point addition commutes) and negates A − B, whose eigenvectors are
        the same: the whitening of (Q, P) is this one, up to the order, signs and rounding
        of its eigenvectors, none of which changes the privacy loss's distribution.
        """
        who = {"P": "Q", "Q": "P"}.get(self.degenerate, "")
        detail = _degenerate_detail(who) if who else self.detail
        return _Decomposition(self.kind, self.b, self.a, -self.shift, detail, self.condition, who)


def _degenerate_detail(who: str) -> str:
    return f"{who} is degenerate in a direction where the other is not"


def _check_pair(
    mean_p: Any, cov_p: Any, mean_q: Any, cov_q: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    mp = check_array(mean_p, "mean_p", ndim=1)
    mq = check_array(mean_q, "mean_q", shape=(mp.shape[0],))
    sp = check_covariance(cov_p, "cov_p", dim=mp.shape[0])
    sq = check_covariance(cov_q, "cov_q", dim=mp.shape[0])
    if sp.ndim != 2 or sq.ndim != 2:
        raise ParameterError("cov_p and cov_q must each be one (m, m) matrix")
    return mp, sp, mq, sq


def _finite(x: np.ndarray, what: str) -> np.ndarray:
    if not np.all(np.isfinite(x)):
        raise ParameterError(
            f"{what} overflows double precision; rescale the statistics (the guarantee "
            "does not depend on their units)"
        )
    return x


def _decompose(mp: np.ndarray, sp: np.ndarray, mq: np.ndarray, sq: np.ndarray) -> _Decomposition:
    """Whiten both Gaussians jointly; scale-free (standardised per statistic first)."""
    with np.errstate(over="ignore", invalid="ignore"):
        diff = _finite(mp - mq, "the mean difference mean_p - mean_q")
        total = _finite(sp + sq, "cov_p + cov_q")
    var = np.diagonal(total)
    zero = var == 0.0  # both variances exactly zero (PSD): the statistic is a constant
    if np.any(diff[zero] != 0.0):
        k = int(np.flatnonzero(zero & (diff != 0.0))[0])
        return _Decomposition(
            "different supports",
            *(np.zeros(0),) * 3,
            detail=f"statistic {k} is constant under both with different values",
        )
    keep = ~zero
    if not np.any(keep):
        return _Decomposition("identical", *(np.zeros(0),) * 3, detail="both are point masses")
    scale = 1.0 / np.sqrt(var[keep])
    with np.errstate(over="ignore", invalid="ignore"):
        d = _finite(diff[keep] * scale, "the standardised mean difference")
        ap = sp[np.ix_(keep, keep)] * np.outer(scale, scale)
        aq = sq[np.ix_(keep, keep)] * np.outer(scale, scale)
    w, u = np.linalg.eigh(ap + aq)
    null = w <= _NULL_RTOL * w.size * w[-1]
    if np.any(null):
        part = np.linalg.norm(u[:, null].T @ d)
        if part > _NULL_DIFF_RTOL * max(float(np.linalg.norm(d)), 1e-300) and part > 0:
            return _Decomposition(
                "different supports",
                *(np.zeros(0),) * 3,
                detail="the means differ in a direction where both covariances vanish",
            )
    cond = float(w[-1] / w[~null].min())
    if cond > _MAX_CONDITION:
        return _Decomposition(
            "different supports",
            *(np.zeros(0),) * 3,
            detail=f"numerically unresolvable: the standardised covariance sum has condition "
            f"number {cond:.2g} > {_MAX_CONDITION:.0e}; delta = 1 is the upper bound reported",
        )
    white = u[:, ~null] / np.sqrt(w[~null])
    a_mat = white.T @ ap @ white
    b_mat = white.T @ aq @ white
    a_mat, b_mat = (a_mat + a_mat.T) / 2, (b_mat + b_mat.T) / 2
    _, v = np.linalg.eigh(a_mat - b_mat)
    a = np.einsum("ik,ij,jk->k", v, a_mat, v)
    b = np.einsum("ik,ij,jk->k", v, b_mat, v)
    tot = a + b
    a, b = a / tot, b / tot
    shift = v.T @ (white.T @ d)
    if np.min(a) <= _DEGENERATE_TOL or np.min(b) <= _DEGENERATE_TOL:
        who = "P" if np.min(a) <= np.min(b) else "Q"
        return _Decomposition(
            "different supports",
            *(np.zeros(0),) * 3,
            detail=_degenerate_detail(who),
            degenerate=who,
        )
    if float(np.max(np.abs(shift))) > 1e50:
        # The means are more than 1e50 standard deviations apart: δ = 1 to double
        # precision (and 1 is always an upper bound); the squares would overflow.
        return _Decomposition(
            "different supports",
            *(np.zeros(0),) * 3,
            detail="the means are more than 1e50 standard deviations apart",
        )
    return _Decomposition("regular", a, b, shift, condition=cond)


def _loss(dec: _Decomposition) -> _Loss:
    """Coefficients of the privacy loss log p/q (y) with y ~ P, as a quadratic form in Z."""
    a, b, m = dec.a, dec.b, dec.shift
    lam = (a - b) / (2.0 * b)
    beta = m * np.sqrt(a) / b
    const = float(np.sum(0.5 * np.log(b / a) + m * m / (2.0 * b)))
    return _Loss(lam, beta, const)


def _log_mgf(loss: _Loss, z: np.ndarray) -> np.ndarray:
    """log E[e^{zL}] for complex z (shape (n,)) in the strip where it is finite."""
    zz = z[:, None]
    w = 1.0 - 2.0 * loss.lam[None, :] * zz
    terms = -0.5 * np.log(w) + (loss.beta[None, :] ** 2) * zz * zz / (2.0 * w)
    return zz[:, 0] * loss.const + terms.sum(axis=1)


def _log_mgf_real(loss: _Loss, z: np.ndarray) -> np.ndarray:
    """log E[e^{zL}] for real z (shape (n,)) with 1 − 2λz > 0."""
    zz = z[:, None]
    w = 1.0 - 2.0 * loss.lam[None, :] * zz
    with np.errstate(invalid="ignore", divide="ignore"):
        terms = -0.5 * np.log(w) + (loss.beta[None, :] ** 2) * zz * zz / (2.0 * w)
    return z * loss.const + terms.sum(axis=1)


def _hockey_stick(
    loss: _Loss, epsilon: float, tol: float, alpha_scale: float = 1.0
) -> tuple[float, float]:
    """E[(1 − e^{ε−L})₊] by Laplace inversion along Re z = α, with an error bound.

    For g(x) = (1 − e^{ε−x})₊, ∫ g(x) e^{−zx} dx = e^{−zε}/(z(z+1)) (Re z > 0), so

        E g(L) = (1/π) ∫₀^∞ Re[M(α+it) e^{−(α+it)ε} / ((α+it)(α+1+it))] dt,

    M the moment generating function of L. g is continuous, so the integrand decays like
    |M(α+it)|/t² whatever the λ_k (unlike Imhof's formula for P[L > ε], whose 1/t decay
    makes the tail of nearly degenerate forms hard to integrate). α minimises the modulus
    at t = 0 (a saddle point: no linear phase there). |M(α+it)| is non-increasing in t
    (true for each factor (1−2λz)^{-1/2} exp(β²z²/(2(1−2λz)))), so the tail beyond T is at
    most |M(α+iT)| e^{−αε}/(πT): a rigorous truncation bound. The same argument gives the
    Chernoff-type bound E g(L) ≤ M(α) e^{−αε} (α/(1+α))^α/(1+α), used as a cap.
    """
    lam_pos = loss.lam[loss.lam > 0]
    alpha_max = float(0.5 / lam_pos.max()) if lam_pos.size else math.inf
    hi = min(alpha_max * (1.0 - 1e-9), 1e8)

    # α minimises the integrand's modulus at t = 0 (convex in α); any α in the strip
    # gives the same integral, so a vectorised grid search is enough.
    grid_a = np.exp(np.linspace(math.log(min(1e-10, hi * 1e-6)), math.log(hi), 97))
    for _ in range(2):
        obj = _log_mgf_real(loss, grid_a) - grid_a * epsilon - np.log(grid_a) - np.log1p(grid_a)
        obj = np.where(np.isfinite(obj), obj, np.inf)
        k = int(np.argmin(obj))
        lo_k, hi_k = grid_a[max(k - 1, 0)], grid_a[min(k + 1, grid_a.size - 1)]
        grid_a = np.exp(np.linspace(math.log(lo_k), math.log(hi_k), 33))
    alpha = float(grid_a[int(np.argmin(np.where(np.isfinite(obj), obj, np.inf)))])
    log_m_opt = float(_log_mgf_real(loss, np.array([alpha]))[0]) - alpha * epsilon
    log_chernoff_opt = log_m_opt + alpha * math.log(alpha / (1 + alpha)) - math.log1p(alpha)
    # A second contour (alpha_scale < 1) gives the same integral through a different
    # integrand: the cross-check of _inversion_checked.
    alpha *= alpha_scale
    log_m_alpha = float(_log_mgf_real(loss, np.array([alpha]))[0]) - alpha * epsilon
    log_chernoff = log_m_alpha + alpha * math.log(alpha / (1 + alpha)) - math.log1p(alpha)
    if log_chernoff < math.log(tol) - 5.0:
        bound = math.exp(log_chernoff)
        return 0.0, bound  # below the accuracy asked for: report the bound itself

    def integrand(t: np.ndarray) -> np.ndarray:
        z = alpha + 1j * t
        log_i = _log_mgf(loss, z) - z * epsilon - np.log(z) - np.log1p(z)
        return np.exp(log_i).real / math.pi

    # Natural unit of t: 1 / (standard deviation of L under the tilted law).
    spread = float(
        np.sqrt(
            np.sum(2 * loss.lam**2 / (1 - 2 * loss.lam * alpha) ** 2)
            + np.sum(loss.beta**2 / (1 - 2 * loss.lam * alpha) ** 3)
        )
    )
    unit = 1.0 / max(spread, 1e-300)
    unit = min(unit, 1e6 * max(alpha, 1.0))
    # Truncation point: the first T = unit·2^j with tail bound below tol/4.
    grid = unit * np.exp2(np.arange(-4, 80, dtype=float))
    env = np.exp(_log_mgf(loss, alpha + 1j * grid).real - alpha * epsilon) / (math.pi * grid)
    ok = np.flatnonzero(env <= tol / 4.0)
    j = int(ok[0]) if ok.size else grid.size - 1
    trunc = float(env[j])
    # Beyond T1 = unit·2^10 the integrand is A(t)·e^{iωt} with A smooth and ω the
    # asymptotic phase slope: integrate that part with QUADPACK's QAWO (Fourier weights),
    # which does not need a panel per oscillation.
    j1 = min(j, 14)
    tail_val, tail_err = 0.0, 0.0
    if j > j1:
        tail_val, tail_err = _oscillatory_tail(loss, alpha, epsilon, grid[j1], grid[j], tol)
        j = j1
    edges = np.concatenate([[0.0], grid[: j + 1]])
    lo, hi_e = edges[:-1], edges[1:]
    # Error budget: tol/2 shared equally by the initial (geometric) panels, halved on
    # every split, so that the panels where the mass is get their fair share.
    budget = np.full(lo.size, tol / (2.0 * lo.size))
    total = 0.0
    err = 0.0
    for _ in range(60):
        half = (hi_e - lo)[:, None] / 2.0
        mid = (hi_e + lo)[:, None] / 2.0
        tc = (mid + half * _GAUSS_NODES[None, :]).ravel()
        tf = (mid + half * _FINE_NODES[None, :]).ravel()
        vals = integrand(np.concatenate([tc, tf]))
        coarse = (vals[: tc.size].reshape(lo.size, -1) * _GAUSS_WEIGHTS).sum(1) * half[:, 0]
        fine = (vals[tc.size :].reshape(lo.size, -1) * _FINE_WEIGHTS).sum(1) * half[:, 0]
        diff = np.abs(fine - coarse)
        # Rounding in each panel: a few ulps of its absolute mass.
        absmass = (np.abs(vals[tc.size :]).reshape(lo.size, -1) * _FINE_WEIGHTS).sum(1)
        rounding = 1e-14 * absmass * half[:, 0]
        done = (diff <= budget) | (lo.size > 4000)
        total += float(fine[done].sum())
        err += float(diff[done].sum() + rounding[done].sum())
        if np.all(done):
            break
        keep = ~done
        lo, hi_e, budget = lo[keep], hi_e[keep], budget[keep] / 2.0
        mids = (lo + hi_e) / 2.0
        lo, hi_e = np.concatenate([lo, mids]), np.concatenate([mids, hi_e])
        budget = np.concatenate([budget, budget])
    else:
        total += float(fine[~done].sum())
        err += float(diff[~done].sum())
    total += tail_val
    err += trunc + tail_err
    cap = math.exp(min(log_chernoff, log_chernoff_opt, 0.0))
    if total + err > cap:  # the Chernoff-type bound is the better upper bound
        return min(max(total, 0.0), cap), cap - min(max(total, 0.0), cap)
    return total, err


def _oscillatory_tail(
    loss: _Loss, alpha: float, epsilon: float, t0: float, t1: float, tol: float
) -> tuple[float, float]:
    """∫_{t0}^{t1} of the inversion integrand, as Re[A(t) e^{iωt}] with QAWO weights."""
    nz = loss.lam != 0.0
    omega = loss.const - float(np.sum(loss.beta[nz] ** 2 / (4.0 * loss.lam[nz]))) - epsilon

    def amp(t: float) -> complex:
        z = alpha + 1j * t
        log_i = _log_mgf(loss, np.array([z]))[0] - z * epsilon - np.log(z) - np.log1p(z)
        return complex(np.exp(log_i - 1j * omega * t)) / math.pi

    opts = {"epsabs": tol / 8.0, "epsrel": 0.0, "limit": 2000}
    if abs(omega) * (t1 - t0) < 50.0:
        val, err = quad(lambda t: amp(t).real, t0, t1, **opts)
        return float(val), float(err)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IntegrationWarning)
        # Re[A e^{iωt}] = Re A cos ωt − Im A sin ωt.
        c_val, c_err = quad(lambda t: amp(t).real, t0, t1, weight="cos", wvar=omega, **opts)
        s_val, s_err = quad(lambda t: amp(t).imag, t0, t1, weight="sin", wvar=omega, **opts)
    return float(c_val - s_val), float(c_err + s_err)


# ---------------------------------------------------------------------------------------
# One dimension: the loss region {log p/q > ε} is given by a quadratic, so δ(ε) is a sum
# of normal CDF differences, computed in each Gaussian's own standardised coordinates.
# ---------------------------------------------------------------------------------------

_U = float(np.finfo(float).eps)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _log_sum(a: float, b: float) -> float:
    """log(e^a + e^b) without overflow (−inf allowed)."""
    hi, lo = max(a, b), min(a, b)
    if hi == -math.inf:
        return -math.inf
    return hi + math.log1p(math.exp(lo - hi))


def _log_interval(lo: float, hi: float) -> float:
    """log P(lo < Z < hi), Z ~ N(0, 1), accurate in either tail and for short intervals."""
    if not lo < hi:
        return -math.inf
    if hi - lo <= 1.0:
        # Short interval: a difference of CDFs would cancel; φ is entire, so 30-point
        # Gauss–Legendre of the positive integrand is exact to rounding (in log space).
        half, mid = (hi - lo) / 2.0, (hi + lo) / 2.0
        x = mid + half * _FINE_NODES
        terms = -0.5 * x * x + np.log(_FINE_WEIGHTS)
        top = float(terms.max())
        return top + math.log(float(np.exp(terms - top).sum())) + math.log(half) - _LOG_SQRT_2PI
    if lo >= 0.0:  # upper tail: mirror, so both CDFs are small and accurate
        lo, hi = -hi, -lo
    if hi <= 0.0:
        a, b = float(log_ndtr(hi)), float(log_ndtr(lo))
        return a + math.log(-math.expm1(b - a)) if b < a else -math.inf
    # lo < 0 < hi: two positive halves (erf is relatively accurate near 0).
    return math.log(0.5 * (math.erf(hi / math.sqrt(2.0)) + math.erf(-lo / math.sqrt(2.0))))


def _log_outside(lo: float, hi: float) -> float:
    """log P(Z < lo or Z > hi), Z ~ N(0, 1): a sum of two positive tails."""
    return _log_sum(float(log_ndtr(lo)), float(log_ndtr(-hi)))


def _log_phi(z: float) -> float:
    return -0.5 * z * z - _LOG_SQRT_2PI


def _region_1d(d: float, r: float, rm1: float, lr: float, t: float):
    """{u : log f(u) − log φ(u) > t} for f = N(d, r), φ = N(0, 1), with root errors.

    Multiplying the inequality by 2r: A u² + B u + C > 0 with A = r − 1 (passed as
    ``rm1``, computed without cancellation), B = 2d, C = −(d² + r(log r + 2t)).

    Returns
    -------
    (kind, lo, hi, dlo, dhi)
        kind "inside" (the set is (lo, hi)), "outside" (its complement), "none" or "all";
        dlo, dhi bound the rounding error of the roots (first order: relative error of
        the discriminant, of C and of the stable quadratic formula).
    """
    big_c = d * d + r * (lr + 2.0 * t)
    # Discriminant over 4r: d² + (r − 1)(log r + 2t); its terms bound its rounding.
    disc = d * d + rm1 * (lr + 2.0 * t)
    disc_scale = d * d + abs(rm1) * (abs(lr) + 2.0 * abs(t))
    rel_c = 4.0 * _U * (d * d + r * (abs(lr) + 2.0 * abs(t)) + 1e-300) / max(abs(big_c), 1e-300)
    if rm1 == 0.0:
        # Equal variances: the region is a half-line 2du > d² + log-terms.
        if d == 0.0:
            return ("all" if big_c < 0 else "none"), 0.0, 0.0, 0.0, 0.0
        x = big_c / (2.0 * d)
        err_x = (rel_c + 8.0 * _U) * abs(x)
        return ("outside" if d > 0 else "inside"), -math.inf, x, 0.0, err_x
    if disc <= 0.0:
        return ("all" if rm1 > 0 else "none"), 0.0, 0.0, 0.0, 0.0
    root = 2.0 * math.sqrt(r) * math.sqrt(disc)
    qq = -(2.0 * d + math.copysign(root, d)) / 2.0
    u1 = qq / rm1
    u2 = -big_c / qq
    lo, hi = min(u1, u2), max(u1, u2)
    # Relative errors: of √disc (half that of disc), of C, and a few roundings.
    rel_disc = 4.0 * _U * disc_scale / disc
    rel = rel_disc + rel_c + 16.0 * _U
    return ("outside" if rm1 > 0 else "inside"), lo, hi, rel * abs(lo), rel * abs(hi)


def _profile_1d(
    mean_p: float, var_p: float, mean_q: float, var_q: float, epsilon: float
) -> tuple[float, float, str]:
    """δ(ε) of N(mean_p, var_p) against N(mean_q, var_q), both variances > 0 and unequal.

    S = {x : log p(x)/q(x) > ε} is an interval or the complement of one. P(S) is computed
    in P's standardised coordinate and Q(S) in Q's, each as normal CDF differences in log
    space, and δ = P(S)(1 − e^{ε + log Q(S) − log P(S)}).

    Error bound (first order). Each coordinate system standardises its own Gaussian
    exactly, so arithmetic only moves the computed boundary; since p = e^ε q on the
    boundary, a move of Δz (in that Gaussian's standard units) changes δ by at most
    φ(z)Δz. Added: a few ulps of every CDF and of the final combination.

    Returns
    -------
    (estimate, error_bound, detail)
    """
    sd_p, sd_q = math.sqrt(var_p), math.sqrt(var_q)
    diff = mean_p - mean_q
    if diff == 0.0 and var_p == var_q:
        # P = Q: the loss is 0 everywhere and δ(ε) = (1 − e^ε)₊ (positive only for ε < 0).
        val = max(0.0, -math.expm1(epsilon))
        return val, 4.0 * _U * val, "identical"
    # P's view (Q relative to P) and Q's view (P relative to Q).
    d_q, d_p = diff / sd_q, -diff / sd_p
    r_q, r_p = var_p / var_q, var_q / var_p
    rm1_q, rm1_p = (var_p - var_q) / var_q, (var_q - var_p) / var_p
    lr_q = math.log(var_p) - math.log(var_q)
    if not all(math.isfinite(x) for x in (d_q, d_p, r_q, r_p, rm1_q, rm1_p, lr_q)):
        raise ParameterError(
            "the standardised mean difference or variance ratio overflows double precision; "
            "rescale the statistics (the guarantee does not depend on their units)"
        )
    # In Q's coordinate: S = {log p/q > ε}. In P's: S = complement of {log q/p > −ε}.
    kq, lo_q, hi_q, elo_q, ehi_q = _region_1d(d_q, r_q, rm1_q, lr_q, epsilon)
    kp, lo_p, hi_p, elo_p, ehi_p = _region_1d(d_p, r_p, rm1_p, -lr_q, -epsilon)
    kp = {"inside": "outside", "outside": "inside", "all": "none", "none": "all"}[kp]

    def log_prob(kind: str, lo: float, hi: float) -> float:
        if kind == "all":
            return 0.0
        if kind == "none":
            return -math.inf
        return _log_interval(lo, hi) if kind == "inside" else _log_outside(lo, hi)

    log_ps = log_prob(kp, lo_p, hi_p)
    log_qs = log_prob(kq, lo_q, hi_q)
    if log_ps == -math.inf:
        est = 0.0
        x = -math.inf
    else:
        x = epsilon + log_qs - log_ps  # ≤ 0 up to rounding: S is where p > e^ε q
        est = max(0.0, math.exp(log_ps) * -math.expm1(min(x, 0.0)))
    # Boundary moves (both views; p(x) = e^ε q(x) there, so both terms are comparable).
    err = 0.0
    if kp in ("inside", "outside"):
        err += math.exp(_log_phi(lo_p)) * elo_p + math.exp(_log_phi(hi_p)) * ehi_p
    if kq in ("inside", "outside"):
        err += math.exp(min(epsilon + _log_phi(lo_q), 700.0)) * elo_q
        err += math.exp(min(epsilon + _log_phi(hi_q), 700.0)) * ehi_q
    # CDFs to a few ulps (relative), and the combination's rounding.
    mass_p = math.exp(log_ps) if log_ps > -math.inf else 0.0
    mass_q = math.exp(min(epsilon + log_qs, 700.0)) if log_qs > -math.inf else 0.0
    err += 32.0 * _U * (mass_p + mass_q)
    if mass_q > 0.0:
        err += 4.0 * _U * mass_q * (abs(epsilon) + abs(log_qs) + abs(log_ps))
    err += 1e-300
    detail = f"variance ratio {r_q:.6g}, loss region {kq} in Q's coordinate"
    return min(est, 1.0), err, detail


def _chernoff_bound(loss: _Loss, epsilon: float) -> float:
    """Certified upper bound on δ(ε) from the moment generating function (Rényi divergence).

    (1 − e^{ε−x})₊ ≤ C(α) e^{α(x−ε)} for every α > 0 with C(α) = (α/(1+α))^α / (1+α), so
    δ(ε) ≤ C(α) M(α) e^{−αε}, M(α) = E_P e^{αL} = exp(α D_{α+1}(P‖Q)) in closed form for
    Gaussians (the RDP-to-(ε, δ) conversion of Canonne, Kamath & Steinke 2020, Prop. 12;
    Asoodeh et al. 2021). Any α in the strip gives a valid bound; the best of a grid is taken.
    """
    lam_pos = loss.lam[loss.lam > 0]
    alpha_max = float(0.5 / lam_pos.max()) if lam_pos.size else 1e8
    hi = min(alpha_max * (1.0 - 1e-6), 1e8)
    grid = np.exp(np.linspace(math.log(min(1e-10, hi * 1e-6)), math.log(hi), 257))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        logb = (
            _log_mgf_real(loss, grid)
            - grid * epsilon
            + grid * np.log(grid / (1.0 + grid))
            - np.log1p(grid)
        )
    logb = logb[np.isfinite(logb)]
    if logb.size == 0:
        return 1.0
    # Rounded up by a relative 1e-12 (the closed form's own rounding).
    return min(1.0, math.exp(float(logb.min())) * (1.0 + 1e-12))


# Beyond this loss coefficient (P more than 2·50 + 1 times wider than Q in a whitened
# direction) the multivariate inversion is not trusted: its tail decays like t^(−1/2).
_MAX_LAMBDA = 50.0


def _renyi_profile(loss: _Loss, epsilon: float, dim: int, why: str) -> GaussianPairProfile:
    """The certified Rényi/Chernoff upper bound, reported as such (estimate 0, error = bound)."""
    bound = _chernoff_bound(loss, epsilon)
    detail = (
        f"characteristic-function inversion ill-conditioned here ({why}); delta is the "
        "certified upper bound from the Renyi divergences of the two Gaussians, not the "
        "exact value"
    )
    return GaussianPairProfile(epsilon, bound, 0.0, bound, "Renyi bound", dim, detail)


def _profile_1d_result(
    mean_p: float, var_p: float, mean_q: float, var_q: float, epsilon: float, dim: int, extra: float
) -> GaussianPairProfile:
    est, err, detail = _profile_1d(mean_p, var_p, mean_q, var_q, epsilon)
    err += extra * max(est, 1e-300)
    upper = min(1.0, float(np.nextafter(est + err, math.inf)))
    return GaussianPairProfile(epsilon, upper, est, err, "quadratic region", dim, detail)


def _profile_raw_1d(
    mp: np.ndarray, sp: np.ndarray, mq: np.ndarray, sq: np.ndarray, epsilon: float
) -> GaussianPairProfile:
    """One statistic: exact, through the quadratic loss region (no inversion)."""
    vp, vq = max(float(sp[0, 0]), 0.0), max(float(sq[0, 0]), 0.0)
    m_p, m_q = float(mp[0]), float(mq[0])
    if vp == 0.0 or vq == 0.0:
        if vp == vq and m_p == m_q:
            return GaussianPairProfile(epsilon, 0.0, 0.0, 0.0, "identical", 0, "equal point masses")
        if vp == vq:
            detail = "both are point masses at different values"
        else:
            detail = f"{'P' if vp == 0.0 else 'Q'} is a point mass and the other is not"
        return GaussianPairProfile(epsilon, 1.0, 1.0, 0.0, "different supports", 0, detail)
    with np.errstate(over="ignore", invalid="ignore"):
        _finite(np.array([m_p - m_q]), "the mean difference mean_p - mean_q")
    return _profile_1d_result(m_p, vp, m_q, vq, epsilon, 1, 0.0)


def _profile_raw(
    mp: np.ndarray, sp: np.ndarray, mq: np.ndarray, sq: np.ndarray, epsilon: float, tol: float
) -> GaussianPairProfile:
    """Dispatch: equal covariances, one statistic, or the joint whitening."""
    if np.array_equal(sp, sq):
        return _equal_covariance_profile(mp - mq, sp, epsilon)
    if mp.shape[0] == 1:
        return _profile_raw_1d(mp, sp, mq, sq, epsilon)
    return _profile_from(_decompose(mp, sp, mq, sq), epsilon, tol, reverse=False)


def _profile_from(
    dec: _Decomposition, epsilon: float, tol: float, *, reverse: bool
) -> GaussianPairProfile:
    if reverse:
        dec = dec.swapped()
    if dec.kind == "different supports":
        return GaussianPairProfile(epsilon, 1.0, 1.0, 0.0, dec.kind, 0, dec.detail)
    if dec.kind == "identical":
        return GaussianPairProfile(epsilon, 0.0, 0.0, 0.0, dec.kind, 0, dec.detail)
    loss = _loss(dec)
    dim = int(dec.a.size)
    if np.all(loss.lam == 0.0) and np.all(loss.beta == 0.0):
        # L is the constant c: δ(ε) = (1 − e^{ε−c})₊ exactly.
        val = max(0.0, -math.expm1(epsilon - loss.const))
        return GaussianPairProfile(epsilon, val, val, 0.0, "point mass", dim)
    # Rounding of the joint whitening: first-order relative error κ·u of its outputs,
    # amplified by the size of the loss's coefficients (a heuristic bound, stated as such).
    size = 1.0 + abs(loss.const) + float(np.sum(loss.beta**2) + np.sum(np.abs(loss.lam)))
    whitening = 16.0 * dec.condition * np.finfo(float).eps * size
    active = np.flatnonzero((loss.lam != 0.0) | (loss.beta != 0.0))
    if active.size == 1:
        # Only one whitened coordinate carries a difference: the others cancel from the
        # loss, and the one-dimensional quadratic region is exact.
        k = int(active[0])
        return _profile_1d_result(
            float(dec.shift[k]), float(dec.a[k]), 0.0, float(dec.b[k]), epsilon, dim, whitening
        )
    if float(np.max(loss.lam)) > _MAX_LAMBDA:
        # P is far wider than Q in some direction: |M| decays like t^(−1/2) there and the
        # inversion's tail is unreliable (measured, issue 18). If Q is nowhere far wider
        # than P, the reverse loss is well conditioned: δ_{P‖Q}(ε) = 1 − e^ε + e^ε
        # δ_{Q‖P}(−ε) (the hockey-stick divergence's symmetry, same supports).
        rev = _loss(dec.swapped())
        if float(np.max(rev.lam)) <= _MAX_LAMBDA and epsilon <= 30.0:
            scale = math.exp(epsilon)
            checked = _inversion_checked(rev, -epsilon, tol / scale)
            if checked is not None:
                est_r, err_r = checked
                est = min(max(scale * est_r - math.expm1(epsilon), 0.0), 1.0)
                err = scale * err_r + 4.0 * _U * scale + whitening * max(scale * est_r, 1e-300)
                if err <= max(1e5 * tol, 1e-7):
                    upper = min(1.0, float(np.nextafter(est + err, math.inf)))
                    return GaussianPairProfile(
                        epsilon, upper, est, err, "characteristic function", dim,
                        "reverse direction: 1 - e^eps + e^eps delta_QP(-eps)",
                    )  # fmt: skip
        return _renyi_profile(loss, epsilon, dim, "P is more than 100 times wider than Q")
    checked = _inversion_checked(loss, epsilon, tol)
    if checked is None:
        return _renyi_profile(loss, epsilon, dim, "two inversion contours disagree")
    est, quadrature = checked
    err = quadrature + whitening * max(est, 1e-300)
    upper = min(1.0, float(np.nextafter(est + err, math.inf)))
    return GaussianPairProfile(epsilon, upper, est, err, "characteristic function", dim)


def _inversion_checked(loss: _Loss, epsilon: float, tol: float) -> tuple[float, float] | None:
    """The inversion along two contours: (estimate, error), or None if they disagree."""
    est1, err1 = _hockey_stick(loss, epsilon, tol)
    # The same integral along a second contour: an independent check of the quadrature,
    # whose own error estimate can be fooled by slowly decaying oscillation (issue 18).
    est2, err2 = _hockey_stick(loss, epsilon, tol, alpha_scale=0.5)
    gap = abs(est1 - est2)
    est = min(max(est1, 0.0), 1.0)
    # The disagreement of the contours, doubled, is added to both quadrature estimates
    # (measured in tests/test_pair_accountant_exact.py against independent references).
    quadrature = err1 + err2 + 2.0 * gap
    if quadrature > max(1e5 * tol, 1e-7):
        # The two contours disagree (or the inversion is ill-conditioned): the caller
        # reports the certified Rényi/Chernoff upper bound instead of a possibly wrong number.
        return None
    return est, quadrature


def gaussian_pair_profile(
    mean_p: Any,
    cov_p: Any,
    mean_q: Any,
    cov_q: Any,
    *,
    epsilon: float,
    tol: float = _DEFAULT_TOL,
) -> GaussianPairProfile:
    """Exact privacy profile δ(ε) of P = N(μ_p, Σ_p) against Q = N(μ_q, Σ_q), one direction.

    δ(ε) = sup_S P(S) − e^ε Q(S) = E_P[(1 − e^{ε−L})₊] with L = log(dP/dQ) the privacy
    loss. With both Gaussians whitened jointly (statistics standardised by the variance
    of their sum, so the answer does not depend on units), the covariances become
    diag(a) and diag(1 − a), and L under P is a generalised chi-square variable
    c + Σ_k λ_k Z_k² + β_k Z_k. Its expectation is computed by numerical inversion of
    the moment generating function (Imhof 1961 and Davies 1980 invert the characteristic
    function of the same variable for its distribution; here the payoff (1 − e^{ε−x})₊
    is inverted directly, which converges for every λ), with a stated absolute error
    bound added to the answer.

    One statistic (or one whitened direction carrying the whole difference) is computed
    exactly from the quadratic loss region; where the inversion is ill-conditioned the
    certified Rényi upper bound is returned and labelled (``method="Renyi bound"``).

    Singular covariances: if the two Gaussians do not live on the same affine subspace
    (a covariance vanishes in a direction where the other does not, or the means differ
    in a direction where both vanish), δ(ε) = 1 for every ε. Equal covariances use the
    closed form of Balle & Wang (2018, Thm 8), exactly :func:`gaussian_delta`.

    Parameters
    ----------
    mean_p, mean_q : array_like, shape (m,)
        Means.
    cov_p, cov_q : array_like, shape (m, m)
        Covariances (symmetric positive semi-definite; may be singular).
    epsilon : float
        ε ≥ 0 (0 gives the total variation distance).
    tol : float
        Absolute accuracy asked of the numerical inversion (default 1e-12); the
        achieved bound is reported in ``error_bound``.

    Returns
    -------
    GaussianPairProfile
        ``delta`` is an upper bound: the computed value plus its error bound.

    Raises
    ------
    ParameterError
        Invalid input, or means/covariances whose arithmetic overflows.

    References
    ----------
    Balle & Wang (2018), Thm 8; Imhof (1961); Davies (1980); DESIGN.md §4.
    """
    eps = check_real(epsilon, "epsilon", low=0.0)
    tl = check_real(tol, "tol", low=0.0, low_inclusive=False)
    mp, sp, mq, sq = _check_pair(mean_p, cov_p, mean_q, cov_q)
    return _profile_raw(mp, sp, mq, sq, eps, tl)


def covariance_gap(cov_p: np.ndarray, cov_q: np.ndarray) -> float:
    """Scale-free difference of two covariances: max_k |a_k − b_k| in joint whitening.

    With both covariances whitened by their sum (after per-statistic standardisation),
    they become diag(a) and diag(b) with a + b = 1; the gap is 0 exactly when the
    matrices are equal, 1 when their supports differ, and does not depend on the units
    of the statistics (a small-unit statistic whose variance changes 4× gives 0.6).
    """
    if np.array_equal(cov_p, cov_q):
        return 0.0
    zero = np.zeros(cov_p.shape[0])
    dec = _decompose(zero, cov_p, zero, cov_q)
    if dec.kind == "different supports":
        return 1.0
    if dec.kind == "identical":
        return 0.0
    return float(np.max(np.abs(dec.a - dec.b)))


def pair_profile_unchecked(
    mean_p: np.ndarray,
    cov_p: np.ndarray,
    mean_q: np.ndarray,
    cov_q: np.ndarray,
    epsilon: float,
    tol: float = _DEFAULT_TOL,
) -> GaussianPairProfile:
    """:func:`gaussian_pair_profile` without input validation (for internal loops)."""
    return _profile_raw(mean_p, cov_p, mean_q, cov_q, epsilon, tol)


def pair_profiles_unchecked(
    mean_p: np.ndarray,
    cov_p: np.ndarray,
    mean_q: np.ndarray,
    cov_q: np.ndarray,
    epsilon: float,
    tol: float = _DEFAULT_TOL,
) -> tuple[GaussianPairProfile, GaussianPairProfile]:
    """Both directions, P against Q and Q against P, from one joint whitening.

    The same answers as two calls of :func:`pair_profile_unchecked` with the arguments
    exchanged, without computing the whitening twice (:meth:`_Decomposition.swapped`): up
    to rounding in the general case (the second eigendecomposition is of A − B instead of
    B − A), bit for bit for equal covariances (the closed form depends on the distance
    only) and one statistic (computed per direction as before).
    """
    if np.array_equal(cov_p, cov_q):
        same = _equal_covariance_profile(mean_p - mean_q, cov_p, epsilon)
        return same, same
    if mean_p.shape[0] == 1:
        return (
            _profile_raw_1d(mean_p, cov_p, mean_q, cov_q, epsilon),
            _profile_raw_1d(mean_q, cov_q, mean_p, cov_p, epsilon),
        )
    dec = _decompose(mean_p, cov_p, mean_q, cov_q)
    return (
        _profile_from(dec, epsilon, tol, reverse=False),
        _profile_from(dec, epsilon, tol, reverse=True),
    )


def _equal_covariance_profile(
    diff: np.ndarray, cov: np.ndarray, epsilon: float
) -> GaussianPairProfile:
    """Balle & Wang's closed form, through the same scale-free whitening."""
    dec = _decompose(diff, cov, np.zeros_like(diff), cov)
    if dec.kind != "regular":
        val = 1.0 if dec.kind == "different supports" else 0.0
        return GaussianPairProfile(epsilon, val, val, 0.0, dec.kind, 0, dec.detail)
    # Here a = b = 1/2: D² = Σ shift_k² / (1/2).
    dist = float(math.sqrt(2.0 * float(np.sum(dec.shift**2))))
    if dist == 0.0:
        return GaussianPairProfile(epsilon, 0.0, 0.0, 0.0, "closed form", int(dec.a.size))
    if epsilon == 0.0:
        val = float(2.0 * ndtr(dist / 2.0) - 1.0)
        err = 1e-12 * val + 1e-300
    else:
        val = float(np.exp(_log_gaussian_delta(epsilon, np.array([dist]))[0]))
        # δ = e^a − e^b: the absolute rounding of a and b (log_ndtr to a few ulps of
        # their size, plus ε) is amplified by e^a + e^b when they nearly cancel.
        a = float(log_ndtr(dist / 2.0 - epsilon / dist))
        b = epsilon + float(log_ndtr(-dist / 2.0 - epsilon / dist))
        eta = 16.0 * _U * (1.0 + abs(a) + abs(b) + epsilon)
        err = 1e-12 * val + (math.exp(a) + math.exp(min(b, 700.0))) * eta + 1e-300
    upper = min(1.0, val + err)
    return GaussianPairProfile(
        epsilon, upper, val, upper - val, "closed form", int(dec.a.size), f"D = {dist:.6g}"
    )


def gaussian_pair_delta(
    mean_p: Any, cov_p: Any, mean_q: Any, cov_q: Any, *, epsilon: float
) -> float:
    """Upper bound on δ(ε) of N(μ_p, Σ_p) against N(μ_q, Σ_q) (one direction).

    The exact value plus its numerical error bound, rounded up
    (:func:`gaussian_pair_profile`). Callers that need both directions call it twice.

    Examples
    --------
    Equal covariances reduce to Balle & Wang's closed form:

    >>> d = gaussian_pair_delta([0.0], [[1.0]], [0.5], [[1.0]], epsilon=1.0)
    >>> abs(d - gaussian_delta(0.5, epsilon=1.0)) < 1e-15
    True
    """
    return gaussian_pair_profile(mean_p, cov_p, mean_q, cov_q, epsilon=epsilon).delta


def gaussian_pair_epsilon(
    mean_p: Any,
    cov_p: Any,
    mean_q: Any,
    cov_q: Any,
    *,
    delta: float,
    rtol: float = 1e-9,
) -> float:
    """Smallest ε (rounded up) with δ(ε) ≤ δ for N(μ_p, Σ_p) against N(μ_q, Σ_q).

    δ(ε) is non-increasing in ε, so a bisection on the upper bound of
    :func:`gaussian_pair_delta` finds it; the returned ε satisfies the bound exactly
    (it is the upper end of the final bracket, of relative width ``rtol``).

    Parameters
    ----------
    delta : float
        δ in (0, 1).
    rtol : float
        Relative width of the final bracket.

    Returns
    -------
    float
        ε ≥ 0, or ``math.inf`` when no finite ε gives δ (different supports, or
        ε would exceed 1e4).
    """
    dlt = check_delta(delta, positive=True)
    mp, sp, mq, sq = _check_pair(mean_p, cov_p, mean_q, cov_q)
    direct = np.array_equal(sp, sq) or mp.shape[0] == 1
    dec = None if direct else _decompose(mp, sp, mq, sq)

    def upper(e: float, tol: float = _DEFAULT_TOL) -> float:
        if direct:
            return _profile_raw(mp, sp, mq, sq, e, tol).delta
        return _profile_from(dec, e, tol, reverse=False).delta

    if upper(0.0) <= dlt:
        return 0.0
    loose = max(dlt * 1e-4, 1e-15)
    lo, hi = 0.0, 1.0
    while upper(hi, loose) > dlt:
        lo, hi = hi, hi * 2.0
        if hi > 1e4:
            return math.inf
    # δ(ε) is continuous and non-increasing: Brent on log δ, then the strict check.
    root = brentq(
        lambda e: math.log(max(upper(e, loose), 1e-300)) - math.log(dlt),
        lo,
        hi,
        xtol=rtol * hi,
    )
    hi = min(hi, root + 2 * rtol * hi)
    while upper(hi) > dlt:
        hi += rtol * max(hi, 1e-12) * 8
    return hi
