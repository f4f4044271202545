"""δ(ε) of two one-dimensional Gaussians with unequal variances, exactly.

In one dimension the loss region {log p/q > ε} is an interval or the complement of one
(the roots of a quadratic), so δ(ε) = P(S) − e^ε Q(S) is a sum of normal CDF differences,
computed in log space in each Gaussian's own standardised coordinate, with a first-order
bound on the rounding of the roots. Used for one statistic, and for one whitened direction
carrying the whole difference (``method="quadratic region"``).

Private: one method of :mod:`distpriv.accounting.pair_profile`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr

from ..errors import ParameterError
from ._inversion import _FINE_NODES, _FINE_WEIGHTS

# ---------------------------------------------------------------------------------------
# One dimension: the loss region {log p/q > ε} is given by a quadratic, so δ(ε) is a sum
# of normal CDF differences, computed in each Gaussian's own standardised coordinates.
# ---------------------------------------------------------------------------------------

_U = float(np.finfo(float).eps)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _log_sum(a: float, b: float) -> float:
    """log(e^a + e^b) without overflow (−inf allowed)."""
    hi, lo = max(a, b), min(a, b)
    if hi == -math.inf:
        return -math.inf
    return hi + math.log1p(math.exp(lo - hi))


def _log_interval(lo: float, hi: float) -> float:
    """log P(lo < Z < hi), Z ~ N(0, 1), accurate in either tail and for short intervals."""
    if not lo < hi:
        return -math.inf
    if hi - lo <= 1.0:
        # Short interval: a difference of CDFs would cancel; φ is entire, so 30-point
        # Gauss–Legendre of the positive integrand is exact to rounding (in log space).
        half, mid = (hi - lo) / 2.0, (hi + lo) / 2.0
        x = mid + half * _FINE_NODES
        terms = -0.5 * x * x + np.log(_FINE_WEIGHTS)
        top = float(terms.max())
        return top + math.log(float(np.exp(terms - top).sum())) + math.log(half) - _LOG_SQRT_2PI
    if lo >= 0.0:  # upper tail: mirror, so both CDFs are small and accurate
        lo, hi = -hi, -lo
    if hi <= 0.0:
        a, b = float(log_ndtr(hi)), float(log_ndtr(lo))
        return a + math.log(-math.expm1(b - a)) if b < a else -math.inf
    # lo < 0 < hi: two positive halves (erf is relatively accurate near 0).
    return math.log(0.5 * (math.erf(hi / math.sqrt(2.0)) + math.erf(-lo / math.sqrt(2.0))))


def _log_outside(lo: float, hi: float) -> float:
    """log P(Z < lo or Z > hi), Z ~ N(0, 1): a sum of two positive tails."""
    return _log_sum(float(log_ndtr(lo)), float(log_ndtr(-hi)))


def _log_phi(z: float) -> float:
    return -0.5 * z * z - _LOG_SQRT_2PI


def _region_1d(
    d: float, r: float, rm1: float, lr: float, t: float
) -> tuple[str, float, float, float, float]:
    """{u : log f(u) − log φ(u) > t} for f = N(d, r), φ = N(0, 1), with root errors.

    Multiplying the inequality by 2r: A u² + B u + C > 0 with A = r − 1 (passed as
    ``rm1``, computed without cancellation), B = 2d, C = −(d² + r(log r + 2t)).

    Returns
    -------
    (kind, lo, hi, dlo, dhi)
        kind "inside" (the set is (lo, hi)), "outside" (its complement), "none" or "all";
        dlo, dhi bound the rounding error of the roots (first order: relative error of
        the discriminant, of C and of the stable quadratic formula).
    """
    big_c = d * d + r * (lr + 2.0 * t)
    # Discriminant over 4r: d² + (r − 1)(log r + 2t); its terms bound its rounding.
    disc = d * d + rm1 * (lr + 2.0 * t)
    disc_scale = d * d + abs(rm1) * (abs(lr) + 2.0 * abs(t))
    rel_c = 4.0 * _U * (d * d + r * (abs(lr) + 2.0 * abs(t)) + 1e-300) / max(abs(big_c), 1e-300)
    if rm1 == 0.0:
        # Equal variances: the region is a half-line 2du > d² + log-terms.
        if d == 0.0:
            return ("all" if big_c < 0 else "none"), 0.0, 0.0, 0.0, 0.0
        x = big_c / (2.0 * d)
        err_x = (rel_c + 8.0 * _U) * abs(x)
        return ("outside" if d > 0 else "inside"), -math.inf, x, 0.0, err_x
    if disc <= 0.0:
        return ("all" if rm1 > 0 else "none"), 0.0, 0.0, 0.0, 0.0
    root = 2.0 * math.sqrt(r) * math.sqrt(disc)
    qq = -(2.0 * d + math.copysign(root, d)) / 2.0
    u1 = qq / rm1
    u2 = -big_c / qq
    lo, hi = min(u1, u2), max(u1, u2)
    # Relative errors: of √disc (half that of disc), of C, and a few roundings.
    rel_disc = 4.0 * _U * disc_scale / disc
    rel = rel_disc + rel_c + 16.0 * _U
    return ("outside" if rm1 > 0 else "inside"), lo, hi, rel * abs(lo), rel * abs(hi)


def _profile_1d(
    mean_p: float, var_p: float, mean_q: float, var_q: float, epsilon: float
) -> tuple[float, float, str]:
    """δ(ε) of N(mean_p, var_p) against N(mean_q, var_q), both variances > 0 and unequal.

    S = {x : log p(x)/q(x) > ε} is an interval or the complement of one. P(S) is computed
    in P's standardised coordinate and Q(S) in Q's, each as normal CDF differences in log
    space, and δ = P(S)(1 − e^{ε + log Q(S) − log P(S)}).

    Error bound (first order). Each coordinate system standardises its own Gaussian
    exactly, so arithmetic only moves the computed boundary; since p = e^ε q on the
    boundary, a move of Δz (in that Gaussian's standard units) changes δ by at most
    φ(z)Δz. Added: a few ulps of every CDF and of the final combination.

    Returns
    -------
    (estimate, error_bound, detail)
    """
    sd_p, sd_q = math.sqrt(var_p), math.sqrt(var_q)
    diff = mean_p - mean_q
    if diff == 0.0 and var_p == var_q:
        # P = Q: the loss is 0 everywhere and δ(ε) = (1 − e^ε)₊ (positive only for ε < 0).
        val = max(0.0, -math.expm1(epsilon))
        return val, 4.0 * _U * val, "identical"
    # P's view (Q relative to P) and Q's view (P relative to Q).
    d_q, d_p = diff / sd_q, -diff / sd_p
    r_q, r_p = var_p / var_q, var_q / var_p
    rm1_q, rm1_p = (var_p - var_q) / var_q, (var_q - var_p) / var_p
    lr_q = math.log(var_p) - math.log(var_q)
    if not all(math.isfinite(x) for x in (d_q, d_p, r_q, r_p, rm1_q, rm1_p, lr_q)):
        raise ParameterError(
            "the standardised mean difference or variance ratio overflows double precision; "
            "rescale the statistics (the guarantee does not depend on their units)"
        )
    # In Q's coordinate: S = {log p/q > ε}. In P's: S = complement of {log q/p > −ε}.
    kq, lo_q, hi_q, elo_q, ehi_q = _region_1d(d_q, r_q, rm1_q, lr_q, epsilon)
    kp, lo_p, hi_p, elo_p, ehi_p = _region_1d(d_p, r_p, rm1_p, -lr_q, -epsilon)
    kp = {"inside": "outside", "outside": "inside", "all": "none", "none": "all"}[kp]

    def log_prob(kind: str, lo: float, hi: float) -> float:
        if kind == "all":
            return 0.0
        if kind == "none":
            return -math.inf
        return _log_interval(lo, hi) if kind == "inside" else _log_outside(lo, hi)

    log_ps = log_prob(kp, lo_p, hi_p)
    log_qs = log_prob(kq, lo_q, hi_q)
    if log_ps == -math.inf:
        est = 0.0
        x = -math.inf
    else:
        x = epsilon + log_qs - log_ps  # ≤ 0 up to rounding: S is where p > e^ε q
        est = max(0.0, math.exp(log_ps) * -math.expm1(min(x, 0.0)))
    # Boundary moves (both views; p(x) = e^ε q(x) there, so both terms are comparable).
    err = 0.0
    if kp in ("inside", "outside"):
        err += math.exp(_log_phi(lo_p)) * elo_p + math.exp(_log_phi(hi_p)) * ehi_p
    if kq in ("inside", "outside"):
        err += math.exp(min(epsilon + _log_phi(lo_q), 700.0)) * elo_q
        err += math.exp(min(epsilon + _log_phi(hi_q), 700.0)) * ehi_q
    # CDFs to a few ulps (relative), and the combination's rounding.
    mass_p = math.exp(log_ps) if log_ps > -math.inf else 0.0
    mass_q = math.exp(min(epsilon + log_qs, 700.0)) if log_qs > -math.inf else 0.0
    err += 32.0 * _U * (mass_p + mass_q)
    if mass_q > 0.0:
        err += 4.0 * _U * mass_q * (abs(epsilon) + abs(log_qs) + abs(log_ps))
    err += 1e-300
    detail = f"variance ratio {r_q:.6g}, loss region {kq} in Q's coordinate"
    return min(est, 1.0), err, detail
