"""The Bayes-optimal test under the query model's Gaussian approximation of the release."""

from __future__ import annotations

import numpy as np

from ..util.distributions import GaussianDensity

__all__ = ["GaussianLikelihoodRatio"]


class GaussianLikelihoodRatio:
    """Decide θ₁ when N(x; μ₁, S₁) > N(x; μ₀, S₀), with S_θ = Σ_θ + Σ_Z.

    With equal priors this minimises the error probability when the released output
    really is Gaussian (Neyman–Pearson), so no attack trained on shadow data can beat it
    there; it needs no shadow data, only the query model and the noise covariance.

    Parameters
    ----------
    means : ndarray, shape (2, m)
        μ₀ and μ₁.
    covariances : ndarray, shape (2, m, m)
        Σ_θ₀ and Σ_θ₁ of the statistics (before noise).
    noise_covariance : ndarray, shape (m, m)
    """

    def __init__(
        self, means: np.ndarray, covariances: np.ndarray, noise_covariance: np.ndarray
    ) -> None:
        # As scipy.stats.multivariate_normal(..., allow_singular=True), without importing
        # scipy.stats on the cold path (distpriv.util.distributions).
        self.dists = [GaussianDensity(means[t], covariances[t] + noise_covariance) for t in (0, 1)]

    def log_ratio(self, x: np.ndarray) -> np.ndarray:
        """log N(x; μ₁, S₁) − log N(x; μ₀, S₀) for each row of x, shape (k,)."""
        x = np.atleast_2d(x)
        return np.atleast_1d(self.dists[1].logpdf(x) - self.dists[0].logpdf(x))

    def decide(self, x: np.ndarray) -> np.ndarray:
        """0/1 decisions (1 = θ₁), shape (k,)."""
        return (self.log_ratio(x) > 0).astype(np.int8)
