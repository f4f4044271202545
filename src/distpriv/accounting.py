"""Gaussian calibration: the classical constant and the exact (analytic) privacy profile.

Two Gaussians with the same covariance S and means μᵢ, μⱼ are (ε, δ)-indistinguishable
in both directions iff, with the Mahalanobis distance D = ‖S^(-1/2)(μᵢ − μⱼ)‖₂,

    δ(ε; D) = Φ(D/2 − ε/D) − e^ε Φ(−D/2 − ε/D) ≤ δ

(Balle & Wang 2018, Thm 8; the same profile as N(0, 1) vs N(D, 1)). The classical constant
c = √(2 ln(1.25/δ)) used by Chen & Ohrimenko 2023 (Thm 4.2, 4.4, 4.5) and Zhang et al.
2022 (Alg. 1) is only proven for ε < 1 and can under-noise above it (DESIGN.md §4).

References
----------
Balle, B. and Wang, Y.-X. (2018). Improving the Gaussian mechanism for differential
privacy: analytical calibration and optimal denoising. ICML.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr

from ._validation import check_choice, check_delta, check_epsilon, check_privacy, check_real
from .errors import AssumptionWarning

__all__ = [
    "CALIBRATIONS",
    "classical_covers",
    "gaussian_constant",
    "gaussian_delta",
    "gaussian_epsilon",
    "max_mahalanobis_distance",
]

CALIBRATIONS = ("analytic", "classical")


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


def gaussian_delta(epsilon: float, distance: float | np.ndarray) -> float | np.ndarray:
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


def gaussian_epsilon(delta: float, distance: float) -> float:
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


def max_mahalanobis_distance(epsilon: float, delta: float, calibration: str = "analytic") -> float:
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
    >>> round(max_mahalanobis_distance(1.0, 1e-3), 4)
    0.3884
    >>> round(max_mahalanobis_distance(1.0, 1e-3, "classical"), 4)
    0.2648
    """
    eps, dlt = check_privacy(epsilon, delta, delta_positive=True)
    cal = check_choice(calibration, "calibration", CALIBRATIONS)
    if cal == "classical" and not classical_covers(eps):
        warnings.warn(
            f"the classical Gaussian constant is only proven for epsilon < 1 "
            f"(Chen & Ohrimenko 2023, Thm 4.2); epsilon={eps:g} is outside it and may "
            "under-noise: use calibration='analytic'",
            AssumptionWarning,
            stacklevel=2,
        )
    return max_distance(eps, dlt, cal)
