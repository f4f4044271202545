"""Moved to :mod:`distpriv.accounting.pair_profile`; kept so that old imports still work.

``from distpriv.pair_profile import gaussian_pair_profile`` (and every other public name of
the module) resolves to the same objects as ``distpriv.accounting``.
"""

from __future__ import annotations

from .accounting.pair_profile import (
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
    "GaussianPairProfile",
    "covariance_gap",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_pair_delta",
    "gaussian_pair_epsilon",
    "gaussian_pair_profile",
    "pair_profile_unchecked",
    "pair_profiles_unchecked",
]
