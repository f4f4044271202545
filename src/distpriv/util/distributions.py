"""The few scipy.stats functions distpriv evaluates on its cold path, from scipy.special.

Why: ``import scipy.stats`` builds every distribution object and parses their docstrings,
about a second of CPU on the development machine — more than the rest of
``distpriv verify`` once its cold path was trimmed. The functions here are the ones scipy.stats'
own methods call (``beta.ppf`` → the Boost inverse of the regularised incomplete beta,
``binom.sf`` → its complement, ``multivariate_normal(allow_singular=True).logpdf`` → the
eigen-decomposition and pseudo-inverse of ``scipy.stats._multivariate._PSD``), so results
agree with scipy.stats to rounding; tests/test_distributions.py compares them.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import betainc, betaincinv

__all__ = ["GaussianDensity", "beta_ppf", "binom_sf"]

_LOG_2PI = math.log(2.0 * math.pi)


def beta_ppf(q: float | np.ndarray, a: float | np.ndarray, b: float | np.ndarray) -> np.ndarray:
    """Quantile of Beta(a, b) at q (``scipy.stats.beta.ppf``), elementwise.

    Parameters
    ----------
    q : float or ndarray
        Probabilities in [0, 1].
    a, b : float or ndarray
        Shapes > 0 (broadcast with ``q``); NaN where a or b is not positive, as scipy.stats.

    Returns
    -------
    ndarray
        The x in [0, 1] with I_x(a, b) = q.
    """
    a_ = np.asarray(a, dtype=np.float64)
    b_ = np.asarray(b, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        out = betaincinv(a_, b_, np.asarray(q, dtype=np.float64))
    return np.asarray(np.where((a_ > 0) & (b_ > 0), out, np.nan))


def binom_sf(k: float | np.ndarray, n: int | np.ndarray, p: float | np.ndarray) -> np.ndarray:
    """P(X > k) for X ~ Binomial(n, p) (``scipy.stats.binom.sf``), k an integer.

    Returns
    -------
    ndarray
        1 for k < 0 (every count exceeds it), 0 for k ≥ n, else the regularised
        incomplete beta I_p(k + 1, n − k) (Boost's, as scipy.stats; cephes' ``bdtrc`` is
        off by up to 10⁻¹¹ relative).
    """
    k_ = np.asarray(k, dtype=np.float64)
    n_ = np.asarray(n, dtype=np.float64)
    inside = (k_ >= 0) & (k_ < n_)
    with np.errstate(invalid="ignore"):
        out = betainc(np.where(inside, k_ + 1.0, 1.0), np.where(inside, n_ - k_, 1.0), p)
    return np.asarray(np.where(k_ < 0, 1.0, np.where(inside, out, 0.0)))


# Condition number up to which numpy's eigh stands in for scipy.linalg's (see _eigh).
_NUMPY_EIGH_CONDITION = 1e4


def _eigh(cov: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The eigen-decomposition scipy.stats' ``_PSD`` uses (scipy.linalg.eigh, LAPACK
    syevr), by numpy's eigh (syevd) where the two agree to far better than rounding of
    the density matters.

    Why: ``import scipy.linalg`` costs about 0.1 s of CPU (its batching decorator parses
    every function's docstring), which ``distpriv verify`` paid for the data-level check's
    two 5 × 5 decompositions (tests/test_cli_startup.py). Both drivers are
    backward stable: their eigenvalues differ by a few ε·λ_max, i.e. relatively by about
    ε·κ on the smallest, and the density is a function of u diag(1/s) uᵀ, the
    pseudo-determinant and the null space's projector, not of the basis chosen within an
    eigenspace. So for κ = λ_max / λ_min ≤ :data:`_NUMPY_EIGH_CONDITION` (all eigenvalues
    positive) numpy's answer is scipy's to about 1e-12 relative; otherwise (nearly
    singular or singular Σ, where the drivers can differ by 1e-9 and the cut-off decides
    the rank) scipy.linalg's is computed, as before.
    """
    s, u = np.linalg.eigh(cov, UPLO="L")
    top = float(np.max(np.abs(s))) if s.size else 0.0
    if s.size and float(s[0]) > 0.0 and top <= _NUMPY_EIGH_CONDITION * float(s[0]):
        return s, u
    from scipy.linalg import eigh  # only here: see above

    s, u = eigh(cov, lower=True, check_finite=True)
    return s, u


class GaussianDensity:
    """log N(x; μ, Σ) for Σ positive semi-definite, possibly singular.

    As ``scipy.stats.multivariate_normal(mean, cov, allow_singular=True)``: eigenvalues
    below 10⁶ · machine-ε · the largest are zero; the density is taken on the support
    (the range of Σ, with the pseudo-determinant) and is −∞ off it (a residual in the
    null space above 10³ times that cut-off).

    Parameters
    ----------
    mean : ndarray, shape (m,)
    cov : ndarray, shape (m, m)
        Symmetric positive semi-definite.

    Raises
    ------
    ValueError
        ``cov`` has an eigenvalue below minus the cut-off (not positive semi-definite).
    """

    def __init__(self, mean: np.ndarray, cov: np.ndarray) -> None:
        self.mean = np.asarray(mean, dtype=np.float64).reshape(-1)
        cov = np.asarray(cov, dtype=np.float64).reshape(self.mean.size, self.mean.size)
        if not np.all(np.isfinite(cov)):  # scipy's check_finite, same message
            raise ValueError("array must not contain infs or NaNs")
        s, u = _eigh(cov)
        eps = 1e6 * np.finfo(np.float64).eps * float(np.max(np.abs(s)))
        if np.min(s) < -eps:
            raise ValueError("The input matrix must be symmetric positive semidefinite.")
        keep = s > eps
        self.rank = int(np.sum(keep))
        self.log_pdet = float(np.sum(np.log(s[keep])))
        inv = np.array([0.0 if abs(x) <= eps else 1.0 / x for x in s])
        self._whiten = u * np.sqrt(inv)
        self._null = u[:, s <= eps]
        self._support_tol = 1e3 * eps

    def logpdf(self, x: np.ndarray) -> np.ndarray:
        """log N(x; μ, Σ) for each row of x, shape (k,).

        x of shape (k, m), or (m,) for one point — (k,) for k points when m = 1, as
        scipy.stats reads it.
        """
        x = np.asarray(x, dtype=np.float64)
        if x.ndim == 1:
            x = x[:, None] if self.mean.size == 1 else x[None, :]
        dev = x - self.mean
        maha = np.sum(np.square(dev @ self._whiten), axis=-1)
        out = -0.5 * (self.rank * _LOG_2PI + self.log_pdet + maha)
        if self.rank < self.mean.size:
            off = np.linalg.norm(dev @ self._null, axis=-1) >= self._support_tol
            out[off] = -np.inf
        return np.asarray(out)
