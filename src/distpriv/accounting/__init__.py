"""The accountant: calibration constants and the exact privacy profile of two Gaussians.

One package, one concern: "how much noise, and what does it buy". Right or an upper bound,
always (docs/architecture.md §4).

* :mod:`.calibration` — the classical constant c = √(2 ln(1.25/δ)), the admissible
  Mahalanobis distance D*(ε, δ) (Balle & Wang 2018, Thm 8; Chen & Ohrimenko 2023,
  Thm 4.2–4.5) and the names of the calibrations;
* :mod:`.pair_profile` — δ(ε) of N(μ₁, S₁) against N(μ₂, S₂) (a generalised chi-square):
  closed form for equal covariances, the quadratic region in 1-D, the inversion of the
  moment generating function with a certified error, and a Rényi bound as the fallback;
* private steps of the profile: :mod:`._whitening` (joint whitening and the privacy loss's
  coefficients), :mod:`._inversion` (the inversion and its error bound), :mod:`._region`
  (the exact 1-D region).

Every public name is importable from ``distpriv.accounting``.
"""

from __future__ import annotations

from .calibration import (
    CALIBRATIONS,
    DISTANCE_CALIBRATIONS,
    classical_covers,
    gaussian_constant,
    gaussian_constant_unchecked,
    max_distance,
    max_mahalanobis_distance,
)
from .pair_profile import (
    GaussianPairProfile,
    covariance_gap,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_pair_delta,
    gaussian_pair_epsilon,
    gaussian_pair_profile,
    pair_profile_unchecked,
    pair_profiles_unchecked,
)

__all__ = [
    "CALIBRATIONS",
    "DISTANCE_CALIBRATIONS",
    "GaussianPairProfile",
    "classical_covers",
    "covariance_gap",
    "gaussian_constant",
    "gaussian_constant_unchecked",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_pair_delta",
    "gaussian_pair_epsilon",
    "gaussian_pair_profile",
    "max_distance",
    "max_mahalanobis_distance",
    "pair_profile_unchecked",
    "pair_profiles_unchecked",
]
