"""Independent Monte Carlo of the privacy loss of two Gaussians (test helper).

L(x) = log N(x; μ_p, S_p) − log N(x; μ_q, S_q) with x ~ N(μ_p, S_p), evaluated with plain
Cholesky solves (no whitening shared with the library), and
δ(ε) = E[(1 − e^{ε−L})₊] estimated by its sample mean with its standard error.
"""

from __future__ import annotations

import math

import numpy as np


def _logpdf(x: np.ndarray, mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
    chol = np.linalg.cholesky(cov)
    z = np.linalg.solve(chol, (x - mean).T)
    return -0.5 * np.sum(z * z, axis=0) - np.sum(np.log(np.diag(chol)))


def mc_delta(
    mean_p, cov_p, mean_q, cov_q, epsilon: float, rng: np.random.Generator, n: int = 1_000_000
) -> tuple[float, float]:
    """(estimate, standard error) of δ(ε) of P against Q from ``n`` draws of P."""
    mean_p, mean_q = np.asarray(mean_p, float), np.asarray(mean_q, float)
    chol = np.linalg.cholesky(cov_p)
    x = mean_p + rng.standard_normal((n, mean_p.size)) @ chol.T
    loss = _logpdf(x, mean_p, cov_p) - _logpdf(x, mean_q, cov_q)
    g = np.maximum(0.0, -np.expm1(epsilon - loss))
    return float(g.mean()), float(g.std(ddof=1) / math.sqrt(n))
