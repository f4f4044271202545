"""E_P[(1 − e^{ε−L})₊] for a generalised chi-square privacy loss L, by Laplace inversion.

The hockey-stick payoff is inverted directly from the loss's moment generating function
along a vertical contour, with a rigorous truncation bound and a quadrature error estimate
(in the spirit of Imhof 1961 and Davies 1980, who invert the characteristic function of
the same variable for its distribution); :func:`_inversion_checked` requires two contours
to agree. The same moment generating function gives the certified Rényi/Chernoff upper
bound (Canonne, Kamath & Steinke 2020, Prop. 12) used where the inversion is
ill-conditioned.

Private: one method of :mod:`distpriv.accounting.pair_profile`, which chooses between it and
the closed forms.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ._whitening import _Decomposition, _Loss, _loss, sensitivity

_GAUSS_NODES, _GAUSS_WEIGHTS = np.polynomial.legendre.leggauss(15)
# Points of the truncation grid evaluated before the rest (_hockey_stick): T = unit·2^j
# is found among them unless the loss decays very slowly (the 84-point
# envelope was a sixth of a contour's cost).
_ENVELOPE_FIRST = 20
_FINE_NODES, _FINE_WEIGHTS = np.polynomial.legendre.leggauss(30)


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


def _saddle(loss: _Loss, epsilon: float) -> tuple[float, float]:
    """α minimising the inversion integrand's modulus at t = 0, and the log of the
    Chernoff-type bound there (:func:`_hockey_stick`).

    The objective is convex in α, and any α in the strip gives the same integral, so a
    vectorised grid search is enough. Both contours of :func:`_inversion_checked` start
    from this α (the second scales it): computed once for both, the same numbers as when
    each contour searched it (a third of a contour's cost).
    """
    lam_pos = loss.lam[loss.lam > 0]
    alpha_max = float(0.5 / lam_pos.max()) if lam_pos.size else math.inf
    hi = min(alpha_max * (1.0 - 1e-9), 1e8)
    grid_a = np.exp(np.linspace(math.log(min(1e-10, hi * 1e-6)), math.log(hi), 97))
    for _ in range(2):
        obj = _log_mgf_real(loss, grid_a) - grid_a * epsilon - np.log(grid_a) - np.log1p(grid_a)
        obj = np.where(np.isfinite(obj), obj, np.inf)
        k = int(np.argmin(obj))
        lo_k, hi_k = grid_a[max(k - 1, 0)], grid_a[min(k + 1, grid_a.size - 1)]
        grid_a = np.exp(np.linspace(math.log(lo_k), math.log(hi_k), 33))
    alpha = float(grid_a[int(np.argmin(np.where(np.isfinite(obj), obj, np.inf)))])
    log_m_opt = float(_log_mgf_real(loss, np.array([alpha]))[0]) - alpha * epsilon
    return alpha, log_m_opt + alpha * math.log(alpha / (1 + alpha)) - math.log1p(alpha)


def _hockey_stick(
    loss: _Loss,
    epsilon: float,
    tol: float,
    alpha_scale: float = 1.0,
    saddle: tuple[float, float] | None = None,
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
    ``saddle``: :func:`_saddle`'s (α, log bound) for this loss and ε, when already known.
    """
    alpha, log_chernoff_opt = _saddle(loss, epsilon) if saddle is None else saddle
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

    def envelope(t: np.ndarray) -> np.ndarray:
        return np.exp(_log_mgf(loss, alpha + 1j * t).real - alpha * epsilon) / (math.pi * t)

    # The first _ENVELOPE_FIRST points first (T is nearly always among them), the rest
    # only if none is below tol/4: elementwise, so the same numbers as all 84 at once.
    env = envelope(grid[:_ENVELOPE_FIRST])
    if not np.any(env <= tol / 4.0):
        env = np.concatenate([env, envelope(grid[_ENVELOPE_FIRST:])])
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

    # Imported here: scipy.integrate pulls scipy.optimize and scipy.sparse.linalg (a quarter
    # of a second of CPU), and most profiles never reach this tail.
    from scipy.integrate import IntegrationWarning, quad

    def integral(f: Callable[[float], float], **weight: Any) -> tuple[float, float]:
        # One set of tolerances for the plain and the QAWO-weighted integrals.
        val, err = quad(f, t0, t1, epsabs=tol / 8.0, epsrel=0.0, limit=2000, **weight)
        return float(val), float(err)

    if abs(omega) * (t1 - t0) < 50.0:
        # Few oscillations: the integrand itself, Re[A(t) e^{iωt}] (A alone is not it).
        return integral(lambda t: (amp(t) * complex(np.exp(1j * omega * t))).real)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IntegrationWarning)
        # Re[A e^{iωt}] = Re A cos ωt − Im A sin ωt.
        c_val, c_err = integral(lambda t: amp(t).real, weight="cos", wvar=omega)
        s_val, s_err = integral(lambda t: amp(t).imag, weight="sin", wvar=omega)
    return c_val - s_val, c_err + s_err


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


def _tail_bound(loss: _Loss, x: float) -> float:
    """Chernoff bound on P(L > x): min over a grid of α in the strip of M(α) e^{−αx}, ≤ 1."""
    lam_pos = loss.lam[loss.lam > 0]
    alpha_max = float(0.5 / lam_pos.max()) if lam_pos.size else 1e8
    hi = min(alpha_max * (1.0 - 1e-6), 1e8)
    grid = np.exp(np.linspace(math.log(min(1e-10, hi * 1e-6)), math.log(hi), 129))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        logb = _log_mgf_real(loss, grid) - grid * x
    logb = logb[np.isfinite(logb)]
    if logb.size == 0:
        return 1.0
    return min(1.0, math.exp(min(float(logb.min()), 0.0)) * (1.0 + 1e-12))


def _inversion_checked(loss: _Loss, epsilon: float, tol: float) -> tuple[float, float] | None:
    """The inversion along two contours: (estimate, error), or None if they disagree."""
    saddle = _saddle(loss, epsilon)
    est1, err1 = _hockey_stick(loss, epsilon, tol, saddle=saddle)
    # The same integral along a second contour: an independent check of the quadrature,
    # whose own error estimate can be fooled by slowly decaying oscillation.
    est2, err2 = _hockey_stick(loss, epsilon, tol, alpha_scale=0.5, saddle=saddle)
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


def _whitening_error(dec: _Decomposition, loss: _Loss, epsilon: float, floor: float) -> float:
    """Bound on the change of δ(ε) caused by the rounding of the joint whitening.

    The computed loss L' and the exact one L are functions of the same Z ~ N(0, I), with
    coefficients apart by at most (|Δc|, |Δβ_k|, |Δλ_k|) (:func:`sensitivity`, from the
    decomposition's bounds on the rounding of a, b and the shift). The payoff
    (1 − e^{ε−x})₊ has derivative e^{ε−x} ≤ 1 on x > ε and 0 below, so to first order
    |Δδ| ≤ E[|ΔL| 1{L > ε}] ≤ |Δc| p + Σ|Δβ_k| √p + Σ|Δλ_k| √(3p) (Cauchy–Schwarz, with
    E Z² = 1, E Z⁴ = 3), p = P(L > ε) ≤ its Chernoff bound. Doubled for the second order
    (the double whitening is used only where the first order is below 1e-6). The tail
    bound is skipped (p = 1) where the result is below 1e-6 of ``floor`` anyway (the
    estimate plus its other errors): it would not change the reported δ.
    """
    c0, c1, c2 = sensitivity(dec.a, dec.b, dec.shift, dec.err_a, dec.err_b, dec.err_shift)
    worst = 2.0 * (c0 + 0.8 * c1 + c2)
    if worst <= 1e-6 * floor:
        return worst + 1e-300
    p = _tail_bound(loss, epsilon)
    bound = c0 * p + c1 * min(math.sqrt(p), 0.8) + c2 * min(math.sqrt(3.0 * p), 1.0)
    return 2.0 * bound + 1e-300


# The accuracy the whitening's weighted error must meet for the double whitening to be
# kept (the level of the unweighted test it replaced, now weighted by the tail probability).
_WHITENING_ACCURACY = 1e-10
# A profile asked at this accuracy or looser is a scale search's (population/exact.py asks
# 1e-4 of the target δ): there the double whitening is kept on the bar every profile of
# more than 24 statistics already uses (its unweighted first-order bound ≤ 1e-6, checked
# by the caller), its error bound still added to δ.
_SEARCH_ACCURACY = 1e-9


def _whitening_ok(
    epsilon: float, accuracy: float = _WHITENING_ACCURACY
) -> Callable[[_Decomposition], bool]:
    """The cheap float64 test of :func:`~distpriv.accounting._whitening._decompose`.

    It is asked only of a double decomposition whose unweighted first-order bound is at
    most 1e-6. At the strict accuracy: True when the error :func:`_whitening_error` would
    add to δ(ε) is at most 1e-10 in both directions (so both make the same choice); then
    re-whitening in long double or extended precision could not move the reported δ by
    more than that, and is skipped. It costs two tail bounds (O(m) each) against an m³
    long-double product or a 50-digit eigendecomposition (seconds per pair at
    m = 20 and m = 500). At a search's accuracy (``accuracy`` ≥ 1e-9): always True — the
    bound is added to δ all the same, and where it is large the tail probability is, so
    δ is far above any target (measured: δ ≈ 0.99 on every such pair of optimal-g's
    search at m = 20).
    """
    if accuracy >= _SEARCH_ACCURACY:
        return lambda dec: True

    def ok(dec: _Decomposition) -> bool:
        return all(
            _whitening_error(d, _loss(d), epsilon, 0.0) <= _WHITENING_ACCURACY
            for d in (dec, dec.swapped())
        )

    return ok
