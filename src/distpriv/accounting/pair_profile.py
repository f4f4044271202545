"""The exact privacy profile δ(ε) of a pair of Gaussians, with a stated error bound.

Two Gaussians with the same covariance S and means μᵢ, μⱼ are (ε, δ)-indistinguishable
in both directions iff, with the Mahalanobis distance D = ‖S^(-1/2)(μᵢ − μⱼ)‖₂,

    δ(ε; D) = Φ(D/2 − ε/D) − e^ε Φ(−D/2 − ε/D) ≤ δ

(Balle & Wang 2018, Thm 8; the same profile as N(0, 1) vs N(D, 1)): :func:`gaussian_delta`,
and its inverse in ε, :func:`gaussian_epsilon`.

Two Gaussians with different covariances: one statistic, or one whitened
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
(0.49996 on the first reproducer, exact 0.99996). See docs/guarantees.md.

Layout. This module is the accountant's public face: the result type
:class:`GaussianPairProfile`, the closed form for equal covariances, the dispatch between
methods and the public functions (re-exported by :mod:`distpriv.accounting`, where they
lived before it was split by concern). The numerical methods it dispatches to are private
modules with one purpose each: :mod:`._whitening` (the joint whitening of the two Gaussians
and the privacy loss's coefficients in it), :mod:`._inversion` (the Laplace inversion of
the loss's moment generating function, Imhof 1961 / Davies 1980, and the Rényi/Chernoff
bound from the same function) and :mod:`._region` (one dimension: the quadratic region).
The calibrations built on these profiles are in :mod:`distpriv.accounting`, which imports
this module, never the reverse.

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
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import log_ndtr

from ..errors import ParameterError
from ..util.records import field_values
from ..util.roots import brentq  # scipy.optimize's, without its import cost
from ..util.validation import check_array, check_covariance, check_delta, check_epsilon, check_real
from ._inversion import _chernoff_bound, _inversion_checked, _whitening_error, _whitening_ok
from ._region import _U, _profile_1d
from ._whitening import _decompose, _Decomposition, _finite, _Loss, _loss

__all__ = [
    "GaussianPairProfile",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_pair_delta",
    "gaussian_pair_epsilon",
    "gaussian_pair_profile",
]


# One covariance: the closed form of Balle & Wang (2018, Thm 8) at Mahalanobis distance D.


def _log_gaussian_delta(epsilon: float, distance: np.ndarray) -> np.ndarray:
    """log δ(ε; D) for D > 0, computed without cancellation.

    δ = e^a − e^b with a = log Φ(D/2 − ε/D), b = ε + log Φ(−D/2 − ε/D) and b < a, so
    log δ = a + log(−expm1(b − a)).
    """
    d = distance
    a = log_ndtr(d / 2.0 - epsilon / d)
    b = epsilon + log_ndtr(-d / 2.0 - epsilon / d)
    with np.errstate(divide="ignore", invalid="ignore"):  # a = −inf: δ ≤ e^a is 0 in floats
        out = a + np.log(-np.expm1(np.minimum(b - a, 0.0)))
    return np.where(np.isneginf(a), -np.inf, out)


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
        from ..errors import ParameterError

        raise ParameterError(f"distance must be finite, got {distance!r}")
    if np.any(d < 0):
        from ..errors import ParameterError

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


# Two Gaussians with different covariances: the privacy loss is a generalised chi-square.


# Default absolute accuracy requested from the characteristic-function inversion.
_DEFAULT_TOL = 1e-12


@dataclass(frozen=True)
class GaussianPairProfile:
    """δ(ε) of P = N(μ_p, Σ_p) against Q = N(μ_q, Σ_q), one direction, with its error."""

    #: ε at which the profile was evaluated.
    epsilon: float
    #: An upper bound on δ(ε) = sup_S P(S) − e^ε Q(S): ``estimate + error_bound``,
    #: rounded up and capped at 1. This is the value to compare against a target.
    delta: float
    #: The computed value of δ(ε) (without the error bound).
    estimate: float
    #: Absolute error bound of ``estimate``: a rigorous truncation bound of the
    #: inversion integral, plus the quadrature's error estimate (difference of a 15- and
    #: a 30-point Gauss–Legendre rule on every subinterval, QUADPACK's estimate on the
    #: oscillatory tail), plus rounding (of the integrand, and the first-order effect
    #: on δ of the joint whitening's, ``_inversion._whitening_error``); a few ulps
    #: for the closed forms.
    error_bound: float
    #: ``"closed form"`` (equal covariances: Balle & Wang 2018), ``"identical"``
    #: (P = Q), ``"different supports"`` (δ = 1), ``"point mass"`` (constant privacy
    #: loss), ``"quadratic region"`` (one statistic or one differing direction: exact
    #: normal CDF differences), ``"characteristic function"`` (two inversion contours
    #: that agree) or ``"Renyi bound"`` (a certified upper bound where the inversion is
    #: ill-conditioned; then ``estimate`` is 0 and ``error_bound`` equals ``delta``).
    method: str
    #: Dimension of the common support after removing directions where both
    #: covariances vanish.
    dim: int
    #: Why a shortcut was taken, in words.
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return field_values(self)


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


# Beyond this |log(var_p / var_q)| one statistic's variance ratio or its inverse overflows.
_MAX_LOG_RATIO = 700.0

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
    err += extra
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
    log_ratio = math.log(vp) - math.log(vq)
    if abs(log_ratio) > _MAX_LOG_RATIO:
        # Variance ratio beyond the double range: the loss carries ½|log ratio|
        # > 350 nats, so δ(ε) is 1 to double precision for ε well below that.
        detail = (
            f"variance ratio e^{log_ratio:.6g} is beyond the double range; delta = 1 is the "
            f"upper bound reported (exact to double precision for epsilon < "
            f"{abs(log_ratio) / 2 - 40:.4g})"
        )
        return GaussianPairProfile(epsilon, 1.0, 1.0, 0.0, "different supports", 1, detail)
    return _profile_1d_result(m_p, vp, m_q, vq, epsilon, 1, 0.0)


def _profile_raw(
    mp: np.ndarray, sp: np.ndarray, mq: np.ndarray, sq: np.ndarray, epsilon: float, tol: float
) -> GaussianPairProfile:
    """Dispatch: equal covariances, one statistic, or the joint whitening."""
    if np.array_equal(sp, sq):
        return _equal_covariance_profile(mp - mq, sp, epsilon)
    if mp.shape[0] == 1:
        return _profile_raw_1d(mp, sp, mq, sq, epsilon)
    dec = _decompose(mp, sp, mq, sq, _whitening_ok(epsilon, tol))
    return _profile_from(dec, epsilon, tol, reverse=False)


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
    active = np.flatnonzero((loss.lam != 0.0) | (loss.beta != 0.0))
    if active.size == 1:
        # Only one whitened coordinate carries a difference: the others cancel from the
        # loss, and the one-dimensional quadratic region is exact.
        k, extra = int(active[0]), _whitening_error(dec, loss, epsilon, 0.0)
        return _profile_1d_result(
            float(dec.shift[k]), float(dec.a[k]), 0.0, float(dec.b[k]), epsilon, dim, extra
        )
    if float(np.max(loss.lam)) > _MAX_LAMBDA:
        # P is far wider than Q in some direction: |M| decays like t^(−1/2) there and the
        # inversion's tail is unreliable (measured). If Q is nowhere far wider
        # than P, the reverse loss is well conditioned: δ_{P‖Q}(ε) = 1 − e^ε + e^ε
        # δ_{Q‖P}(−ε) (the hockey-stick divergence's symmetry, same supports).
        rev = _loss(dec.swapped())
        if float(np.max(rev.lam)) <= _MAX_LAMBDA and epsilon <= 30.0:
            scale = math.exp(epsilon)
            checked = _inversion_checked(rev, -epsilon, tol / scale)
            if checked is not None:
                est_r, err_r = checked
                est = min(max(scale * est_r - math.expm1(epsilon), 0.0), 1.0)
                err = scale * err_r + 4.0 * _U * scale
                err += _whitening_error(dec, loss, epsilon, est + err)
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
    err = quadrature + _whitening_error(dec, loss, epsilon, est + quadrature)
    upper = min(1.0, float(np.nextafter(est + err, math.inf)))
    return GaussianPairProfile(epsilon, upper, est, err, "characteristic function", dim)


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
    in a direction where both vanish), δ(ε) = 1 for every ε. Near-singular ones are
    whitened in extended precision where double precision cannot resolve them
    (docs/guarantees.md, "Near-singular covariances"). Equal covariances use the closed
    form of Balle & Wang (2018, Thm 8), exactly :func:`gaussian_delta`.

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
    Balle & Wang (2018), Thm 8; Imhof (1961); Davies (1980); docs/architecture.md §4.
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
    dec = _decompose(zero, cov_p, zero, cov_q, _whitening_ok(0.0, 1.0))  # max|a - b| only
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
    dec = _decompose(mean_p, cov_p, mean_q, cov_q, _whitening_ok(epsilon, tol))
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
        # 2Φ(D/2) − 1 = erf(D/(2√2)), without the cancellation of the difference at small
        # D (D = 1e-16 gave 1e-300 for 4e-17); erf is accurate to a few ulps.
        val = math.erf(dist / (2.0 * math.sqrt(2.0)))
        err = 1e-12 * val + 1e-300
    else:
        val = float(np.exp(_log_gaussian_delta(epsilon, np.array([dist]))[0]))
        # δ = e^a − e^b: the absolute rounding of a and b (log_ndtr to a few ulps of
        # their size, plus ε) is amplified by e^a + e^b when they nearly cancel.
        a = float(log_ndtr(dist / 2.0 - epsilon / dist))
        b = epsilon + float(log_ndtr(-dist / 2.0 - epsilon / dist))
        # An infinite log (e^a or e^b below the smallest double) carries no rounding.
        eta = 16.0 * _U * (1.0 + sum(abs(x) for x in (a, b) if math.isfinite(x)) + epsilon)
        err = 1e-12 * val + (math.exp(a) + math.exp(min(b, 700.0))) * eta + 1e-300
    # The whitening's rounding of D: dδ/dD = φ(D/2 − ε/D) ≤ φ(0), and D = √(2 Σ s²) moves
    # by at most √2 ‖Δs‖ (doubled for the second order).
    shift_err = float(np.linalg.norm(np.broadcast_to(dec.err_shift, dec.shift.shape)))
    # z·z, not z ** 2, which raises OverflowError in the far tail (ε = 1e300, D = 1e-160).
    z = dist / 2.0 - epsilon / dist
    slope = math.exp(-0.5 * (z * z)) / math.sqrt(2.0 * math.pi)
    err += 2.0 * slope * math.sqrt(2.0) * shift_err
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
        if dec is None:  # exactly when direct
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
