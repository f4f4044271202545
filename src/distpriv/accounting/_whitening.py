"""Joint whitening of two Gaussians, and their privacy loss as a generalised chi-square.

P = N(μ_p, Σ_p) and Q = N(μ_q, Σ_q) are standardised per statistic (so nothing depends on
units) and whitened by the sum of their covariances; in the eigenbasis of the difference
both covariances are diagonal, diag(a) and diag(b) with a + b = 1, and the privacy loss
log dP/dQ under P is L = c + Σ_k (λ_k Z_k² + β_k Z_k), Z ~ N(0, I) (the generalised
chi-square variable of Imhof 1961 and Davies 1980). Shortcuts are detected here: identical
Gaussians, and different supports (a covariance vanishing where the other does not, means
differing where both vanish, an unresolvable condition number), where δ(ε) = 1.

Private: one step of :mod:`distpriv.accounting.pair_profile` (split from ``accounting.py``, code
unchanged), which turns the decomposition into a profile.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError

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
