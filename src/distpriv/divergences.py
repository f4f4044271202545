"""Divergences between discrete distributions: f-divergences and the approximate max-divergence.

These are the measures of distribution privacy of Kawamoto & Murakami 2019b (divergence
DistP, Def. 11): a mechanism A provides (ε, D)-DistP w.r.t. (λ, λ') when
D(A#(λ) ‖ A#(λ')) ≤ ε. The (ε, δ)-DistP of Kawamoto & Murakami 2019a (Def. 8) is the case
D = D∞^δ (2019b, Def. 5 and Prop. 1).

Every function takes probability vectors: finite, non-negative and summing to 1 within
1e-9 along the last axis (no silent renormalisation). ``p`` and ``q`` have shape ``(n,)`` or
``(batch, n)`` and broadcast against each other; the result is a float for two vectors and
an array of shape ``(batch,)`` otherwise.

Conventions where q has zeros: the f-divergences follow Def. 6 of 2019b, which needs
supp(p) ⊆ supp(q); when it fails, KL, χ² and D∞ are ``inf`` (their limits), while total
variation and the Hellinger divergence stay finite (their f has a finite slope at infinity).

References
----------
Kawamoto, Y. and Murakami, T. (2019a). Local obfuscation mechanisms for hiding probability
distributions. ESORICS.
Kawamoto, Y. and Murakami, T. (2019b). Local distribution obfuscation via probability
coupling. Allerton.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from .errors import ParameterError
from .util.validation import check_array, check_choice, check_delta, check_real

__all__ = [
    "DIVERGENCES",
    "PROB_TOL",
    "check_distribution",
    "check_stochastic_matrix",
    "chi2_divergence",
    "divergence",
    "hellinger_divergence",
    "hockey_stick",
    "kl_divergence",
    "max_divergence",
    "total_variation",
]

#: Tolerance on the sum of a probability vector (and of each row of a stochastic matrix).
PROB_TOL = 1e-9


# --------------------------------------------------------------------------------------------
# Validation of probability vectors and stochastic matrices
# --------------------------------------------------------------------------------------------


def check_distribution(
    value: object,
    name: str,
    *,
    size: int | None = None,
    ndim: int | tuple[int, ...] = 1,
) -> np.ndarray:
    """Check a probability vector (or a batch of them along the last axis).

    Parameters
    ----------
    value : array_like, shape (n,) or (batch, n)
        The distribution(s).
    name : str
        Parameter name for error messages.
    size : int, optional
        Required length n of the last axis.
    ndim : int or tuple of int
        Allowed numbers of dimensions (1 by default).

    Returns
    -------
    ndarray
        A float64 copy.

    Raises
    ------
    ParameterTypeError
        If ``value`` is not numeric.
    ParameterError
        If it has NaN/inf or negative entries, the wrong shape, or does not sum to 1 within
        :data:`PROB_TOL`.
    """
    arr = check_array(value, name, ndim=ndim, nonnegative=True)
    if size is not None and arr.shape[-1] != size:
        raise ParameterError(
            f"{name} must have {size} entries (one per point), got {arr.shape[-1]}"
        )
    sums = arr.sum(axis=-1)
    bad = np.abs(sums - 1.0) > PROB_TOL
    if np.any(bad):
        worst = float(np.atleast_1d(sums)[np.argmax(np.atleast_1d(np.abs(sums - 1.0)))])
        raise ParameterError(
            f"{name} must sum to 1 (within {PROB_TOL:g}); it sums to {worst!r}. "
            "Normalise it explicitly if that is what you mean"
        )
    return np.array(arr, dtype=np.float64, copy=True)


def check_stochastic_matrix(
    value: object, name: str, *, rows: int | None = None, cols: int | None = None
) -> np.ndarray:
    """Check a row-stochastic matrix A (A[x, y] = probability of output y on input x).

    Parameters
    ----------
    value : array_like, shape (n_x, n_y)
        The matrix.
    name : str
        Parameter name for error messages.
    rows, cols : int, optional
        Required numbers of rows (inputs) and columns (outputs).

    Raises
    ------
    ParameterError
        If an entry is negative or not finite, the shape is wrong, or a row does not sum to
        1 within :data:`PROB_TOL` (the message names the first bad row).
    """
    arr = check_array(value, name, ndim=2, nonnegative=True)
    if rows is not None and arr.shape[0] != rows:
        raise ParameterError(f"{name} must have {rows} rows (one per input), got {arr.shape[0]}")
    if cols is not None and arr.shape[1] != cols:
        raise ParameterError(
            f"{name} must have {cols} columns (one per output), got {arr.shape[1]}"
        )
    sums = arr.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > PROB_TOL)
    if bad.size:
        i = int(bad[0])
        raise ParameterError(
            f"{name} must be row-stochastic: row {i} sums to {float(sums[i])!r}, not 1 "
            f"(within {PROB_TOL:g}); {bad.size} bad row(s)"
        )
    return np.array(arr, dtype=np.float64, copy=True)


def _pair(p: ArrayLike, q: ArrayLike) -> tuple[np.ndarray, np.ndarray, bool]:
    a = check_distribution(p, "p", ndim=(1, 2))
    b = check_distribution(q, "q", ndim=(1, 2))
    if a.shape[-1] != b.shape[-1]:
        raise ParameterError(
            f"p and q must be distributions over the same points; p has {a.shape[-1]}, "
            f"q has {b.shape[-1]} entries"
        )
    if a.ndim == 2 and b.ndim == 2 and a.shape[0] != b.shape[0]:
        raise ParameterError(
            f"p and q batches must have the same length, got {a.shape[0]} and {b.shape[0]}"
        )
    return a, b, a.ndim == 1 and b.ndim == 1


def _out(value: np.ndarray, scalar: bool) -> float | np.ndarray:
    return float(value) if scalar else value


# --------------------------------------------------------------------------------------------
# f-divergences (KM 2019b, Def. 6 and Table I)
# --------------------------------------------------------------------------------------------


def kl_divergence(p: ArrayLike, q: ArrayLike) -> float | np.ndarray:
    """Kullback–Leibler divergence D_KL(p ‖ q) = Σ p ln(p / q), in nats.

    The f-divergence with f(t) = t ln t (KM 2019b, Table I). Terms with p = 0 are 0; a
    point with p > 0 = q makes it ``inf``.

    Parameters
    ----------
    p, q : array_like, shape (n,) or (batch, n)
        Probability vectors.

    Returns
    -------
    float or ndarray, shape (batch,)
    """
    a, b, scalar = _pair(p, q)
    a, b = np.broadcast_arrays(a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(a > 0, a * (np.log(a) - np.log(b)), 0.0)
    return _out(np.maximum(terms.sum(axis=-1), 0.0), scalar)


def total_variation(p: ArrayLike, q: ArrayLike) -> float | np.ndarray:
    """Total variation distance D_TV(p, q) = ½ Σ |p − q| = max_R (p[R] − q[R]).

    The f-divergence with f(t) = ½|t − 1| (KM 2019b, Table I); symmetric, in [0, 1].
    """
    a, b, scalar = _pair(p, q)
    return _out(0.5 * np.abs(a - b).sum(axis=-1), scalar)


def chi2_divergence(p: ArrayLike, q: ArrayLike) -> float | np.ndarray:
    """Pearson χ²-divergence χ²(p ‖ q) = Σ (p − q)² / q.

    The f-divergence with f(t) = (t − 1)² (KM 2019b, Table I). ``inf`` when some point has
    p > 0 = q.
    """
    a, b, scalar = _pair(p, q)
    a, b = np.broadcast_arrays(a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(b > 0, (a - b) ** 2 / b, np.where(a > 0, np.inf, 0.0))
    return _out(terms.sum(axis=-1), scalar)


def hellinger_divergence(p: ArrayLike, q: ArrayLike) -> float | np.ndarray:
    """Hellinger divergence ½ Σ (√p − √q)² (the squared Hellinger distance), in [0, 1].

    The f-divergence with f(t) = ½(√t − 1)², called the "Hellinger distance" in KM 2019b,
    Table I. Its square root is the Hellinger metric.
    """
    a, b, scalar = _pair(p, q)
    return _out(0.5 * ((np.sqrt(a) - np.sqrt(b)) ** 2).sum(axis=-1), scalar)


# --------------------------------------------------------------------------------------------
# Hockey-stick divergence and the approximate max-divergence D∞^δ
# --------------------------------------------------------------------------------------------


def hockey_stick(p: ArrayLike, q: ArrayLike, epsilon: float | ArrayLike) -> float | np.ndarray:
    """δ(ε) = Σ_y max(0, p[y] − e^ε q[y]) = max_R (p[R] − e^ε q[R]).

    The smallest δ with p[R] ≤ e^ε q[R] + δ for every R (one direction of (ε, δ)-DP,
    KM 2019a Def. 1/8).

    Parameters
    ----------
    p, q : array_like, shape (n,)
        Probability vectors.
    epsilon : float or array_like
        Any finite real ε (any shape).

    Returns
    -------
    float or ndarray
        δ(ε) in [0, 1], of the shape of ``epsilon``.
    """
    a = check_distribution(p, "p")
    b = check_distribution(q, "q", size=a.size)
    eps = check_array(epsilon, "epsilon", min_size=1)
    scalar = eps.ndim == 0
    with np.errstate(over="ignore", invalid="ignore"):
        factor = np.exp(eps.reshape(-1, 1))  # inf beyond ~709: then every q > 0 term is 0
        terms = np.where(b > 0, np.maximum(0.0, a - factor * b), a)
    out = terms.sum(axis=1).reshape(eps.shape)
    return float(out) if scalar else out


def _dinf_from_cumulative(cum_p: np.ndarray, cum_q: np.ndarray, deltas: np.ndarray) -> np.ndarray:
    """max_m ln((P_m − δ) / Q_m) over prefixes m with P_m > δ, for each δ.

    ``cum_p``/``cum_q`` are the cumulative masses of p and q over the points sorted by
    decreasing likelihood ratio p/q; the maximum over all sets R is attained at such a
    prefix (the level sets of the ratio), which makes this D∞^δ exactly.
    """
    out = np.empty(deltas.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_q = np.log(cum_q)
        for i, d in enumerate(deltas):
            ok = cum_p > d
            if not np.any(ok):
                out[i] = -np.inf
                continue
            vals = np.log(cum_p[ok] - d) - log_q[ok]
            out[i] = float(np.max(vals))
    return out


def _sorted_prefix(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cumulative p and q over supp(p) sorted by decreasing ratio p/q (q = 0 first)."""
    keep = a > 0
    a, b = a[keep], b[keep]
    with np.errstate(divide="ignore"):
        log_ratio = np.log(a) - np.log(b)
    order = np.argsort(-log_ratio, kind="stable")
    return np.cumsum(a[order]), np.cumsum(b[order])


def max_divergence(
    p: ArrayLike, q: ArrayLike, *, delta: float | ArrayLike = 0.0
) -> float | np.ndarray:
    """δ-approximate max-divergence D∞^δ(p ‖ q) = max_{R ⊆ supp(p), p[R] ≥ δ} ln((p[R] − δ) / q[R]).

    KM 2019b, Def. 5. It is the smallest ε (possibly negative for δ > 0) with
    p[R] ≤ e^ε q[R] + δ for every R, i.e. the inverse of :func:`hockey_stick`. Computed
    exactly: the maximum is attained at a prefix of supp(p) sorted by decreasing p/q.

    Parameters
    ----------
    p, q : array_like, shape (n,)
        Probability vectors.
    delta : float or array_like
        δ in [0, 1) (any shape).

    Returns
    -------
    float or ndarray
        D∞^δ(p ‖ q), of the shape of ``delta``. ``inf`` when q puts zero mass on a set of
        p-mass above δ. For p = q and δ > 0 it is ln(1 − δ) < 0, following the definition;
        (ε, δ)-DistP uses max(0, ·).
    """
    a = check_distribution(p, "p")
    b = check_distribution(q, "q", size=a.size)
    d = check_array(delta, "delta", min_size=1, nonnegative=True)
    if np.any(d >= 1.0):
        raise ParameterError(f"delta must be < 1, got {float(d.max())!r}")
    cum_p, cum_q = _sorted_prefix(a, b)
    out = _dinf_from_cumulative(cum_p, cum_q, d.reshape(-1)).reshape(d.shape)
    return float(out) if d.ndim == 0 else out


# --------------------------------------------------------------------------------------------
# By name
# --------------------------------------------------------------------------------------------

#: The divergences by name, each a function ``(p, q) -> float``.
DIVERGENCES: dict[str, Callable[..., float | np.ndarray]] = {
    "kl": kl_divergence,
    "tv": total_variation,
    "chi2": chi2_divergence,
    "hellinger": hellinger_divergence,
    "dinf": max_divergence,
}


def divergence(name: str, p: ArrayLike, q: ArrayLike, *, delta: float = 0.0) -> float:
    """D(p ‖ q) for the divergence ``name`` in :data:`DIVERGENCES` (``delta`` only for dinf)."""
    check_choice(name, "divergence", tuple(DIVERGENCES))
    if name == "dinf":
        return float(max_divergence(p, q, delta=check_delta(delta)))
    if delta != 0.0:
        check_real(delta, "delta")
        raise ParameterError(f"delta applies only to the 'dinf' divergence, not {name!r}")
    value = DIVERGENCES[name](p, q)
    return float(value) if np.ndim(value) == 0 else value  # type: ignore[return-value]
