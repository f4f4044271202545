"""Gaussian accounting: calibration of a noise scale from a Mahalanobis distance.

Two Gaussians with the same covariance S and means μᵢ, μⱼ are (ε, δ)-indistinguishable
in both directions iff, with the Mahalanobis distance D = ‖S^(-1/2)(μᵢ − μⱼ)‖₂,

    δ(ε; D) = Φ(D/2 − ε/D) − e^ε Φ(−D/2 − ε/D) ≤ δ

(Balle & Wang 2018, Thm 8; the same profile as N(0, 1) vs N(D, 1)). A Gaussian mechanism
is calibrated by the largest admissible distance D*(ε, δ): ``"analytic"``, the exact root of
that profile, or ``"classical"``, ε / c with the constant c = √(2 ln(1.25/δ)) used by
Chen & Ohrimenko 2023 (Thm 4.2, 4.4, 4.5) and Zhang et al. 2022 (Alg. 1), which is only
proven for ε < 1 and can under-noise above it (docs/architecture.md §4). ``CALIBRATIONS`` names the
calibrations a mechanism accepts, ``"exact"`` among them (the exact profile of the model's
own, possibly unequal, covariances).

Layout. This module holds the calibrations only (the classical constant, D*(ε, δ) and the
tables of calibration names). The privacy profiles themselves (δ(ε; D) above, and the
exact profile of two Gaussians with different, possibly singular, covariances: a
generalised chi-square) are computed in :mod:`distpriv.accounting.pair_profile`, which this
module imports for the analytic root. The dependency runs one way only:
``calibration`` → ``pair_profile`` → ``_whitening``, ``_inversion``, ``_region``.

References
----------
Balle, B. and Wang, Y.-X. (2018). Improving the Gaussian mechanism for differential
privacy: analytical calibration and optimal denoising. ICML.
Dwork, C. and Roth, A. (2014). The algorithmic foundations of differential privacy
(Thm A.1: the classical constant, for ε < 1).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..errors import AssumptionWarning
from ..util.roots import brentq  # scipy.optimize's, without its import cost
from ..util.validation import check_choice, check_delta, check_privacy
from .pair_profile import _log_gaussian_delta

__all__ = [
    "CALIBRATIONS",
    "DISTANCE_CALIBRATIONS",
    "classical_covers",
    "gaussian_constant",
    "max_distance",
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
