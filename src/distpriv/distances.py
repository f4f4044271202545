"""Exact ∞-Wasserstein distance and (W, δ)-closeness of discrete distributions.

Implements the two distances that calibrate the (Approximate) Wasserstein Mechanism of
Chen & Ohrimenko 2023, §3:

* :func:`winf_distance` — the ∞-Wasserstein distance W∞(μ, ν) (Def. 3.1), the noise scale of
  the Wasserstein Mechanism (Thm 3.1);
* :func:`closeness` — the smallest W such that μ and ν are (W, δ)-close (Def. 3.2), the noise
  scale of the Approximate Wasserstein Mechanism (Thm 3.2), or the cheap upper bound
  Δ_E + 2c of Thm 3.3 (proof in Appendix B.1).

Distributions are discrete: support points ``u`` of shape ``(n,)`` or ``(n, m)`` with optional
non-negative weights of shape ``(n,)`` (uniform when omitted). The paper uses the L1 norm;
``metric`` also allows L2 and L∞.

Algorithms (docs/architecture.md §4): in one dimension W∞ is the largest gap between the two
quantile functions. In ℝᵐ the answer is always one of the pairwise distances. For equal-size
unweighted samples it is a bottleneck matching, found by growing one matching together with
the threshold (minimax augmenting paths from a lower bound, no matching rebuilt per
threshold; see ``_bottleneck_threshold``). Otherwise we binary-search the sorted distinct
distances with a bipartite max-flow (solved as a small linear program) per threshold that
must carry all the mass (W∞) or at least 1 − δ of it ((W, δ)-closeness).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial.distance import cdist

from ._bottleneck import _bottleneck_threshold, _max_flow, _smallest_feasible
from .errors import ParameterError
from .util.validation import check_array, check_choice, check_delta

__all__ = ["closeness", "winf_distance"]

METRICS: tuple[str, ...] = ("l1", "l2", "linf")
METHODS: tuple[str, ...] = ("coupling", "bound")

_CDIST_METRIC: dict[str, Literal["cityblock", "euclidean", "chebyshev"]] = {
    "l1": "cityblock",
    "l2": "euclidean",
    "linf": "chebyshev",
}

# Quantile-function intervals thinner than this are rounding artefacts of cumulative sums
# (0.1 + 0.2 != 0.3), not mass: a gap there would be spurious.
_MASS_TOL = 1e-12
# Slack on the mass a max-flow must carry: the LP solution and the normalised weights are
# only accurate to rounding, and an exact comparison would turn that into a wrong threshold.
_FLOW_TOL = 1e-9
# The exact ℝᵐ algorithms hold the full n-by-k distance matrix (200 MB of float64).
_MAX_PAIRS = 25_000_000


# --------------------------------------------------------------------------------------------
# Input handling
# --------------------------------------------------------------------------------------------


def _check_points(value: object, name: str) -> np.ndarray:
    """Return the support points as a finite ``(n, m)`` float array."""
    arr = check_array(value, name, ndim=(1, 2))
    return arr.reshape(-1, 1) if arr.ndim == 1 else arr


def _check_weights(value: object, name: str, points_name: str, n: int) -> np.ndarray | None:
    """Return weights normalised to sum 1, or ``None`` for uniform weights.

    Equal weights are reported as ``None`` so that equal-size samples can use the matching
    algorithm, which is exact for uniform weights (Birkhoff–von Neumann).
    """
    if value is None:
        return None
    w = check_array(value, name, ndim=1, nonnegative=True)
    if w.size != n:
        raise ParameterError(
            f"{name} must have one entry per support point of {points_name} ({n}), got {w.size}"
        )
    top = float(w.max())
    if top <= 0.0:
        raise ParameterError(f"{name} must sum to a positive number; all entries are 0")
    if np.all(w == w[0]):
        return None
    # Scale by the maximum first so that huge weights cannot overflow the sum.
    w = w / top
    return w / w.sum()


def _prepare(
    u: object, v: object, u_weights: object, v_weights: object
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, np.ndarray | None]:
    """Validate both distributions and drop the support points that carry no mass."""
    x = _check_points(u, "u")
    y = _check_points(v, "v")
    if x.shape[1] != y.shape[1]:
        raise ParameterError(
            "u and v must have the same dimension m (number of columns); "
            f"u has m = {x.shape[1]}, v has m = {y.shape[1]}"
        )
    # Differences and sums of coordinates must stay finite in every metric.
    limit = np.finfo(np.float64).max / (4.0 * x.shape[1])
    for arr, name in ((x, "u"), (y, "v")):
        big = float(np.abs(arr).max())
        if big > limit:
            raise ParameterError(
                f"{name} has a coordinate of magnitude {big:.3g}; distances would overflow "
                f"float64 (limit {limit:.3g}), rescale the data"
            )
    a = _check_weights(u_weights, "u_weights", "u", x.shape[0])
    b = _check_weights(v_weights, "v_weights", "v", y.shape[0])
    if a is not None and np.any(a == 0):
        keep = a > 0
        x, a = x[keep], a[keep] / a[keep].sum()
    if b is not None and np.any(b == 0):
        keep = b > 0
        y, b = y[keep], b[keep] / b[keep].sum()
    return x, a, y, b


def _uniform(w: np.ndarray | None, n: int) -> np.ndarray:
    return np.full(n, 1.0 / n) if w is None else w


def _norm(z: np.ndarray, metric: str) -> np.ndarray:
    """Row norms of ``z`` (shape ``(..., m)``) in ``metric``."""
    if metric == "l1":
        return np.abs(z).sum(axis=-1)
    top = np.abs(z).max(axis=-1)
    if metric == "l2":
        # Scale before squaring so that tiny (or huge) coordinates cannot under- or overflow.
        safe = np.where(top > 0, top, 1.0)[..., None]
        return top * np.sqrt(np.square(z / safe).sum(axis=-1))
    return top


def _pairwise(x: np.ndarray, y: np.ndarray, metric: str) -> np.ndarray:
    """The ``(n, k)`` distance matrix, refusing sizes that would exhaust memory."""
    pairs = x.shape[0] * y.shape[0]
    if pairs > _MAX_PAIRS:
        raise ParameterError(
            f"u and v are too large for the exact computation: it needs the n-by-k distance "
            f"matrix with n*k = {x.shape[0]}*{y.shape[0]} = {pairs:,} entries, more than the "
            f"limit of {_MAX_PAIRS:,}; subsample the supports or use closeness(method='bound')"
        )
    return cdist(x, y, metric=_CDIST_METRIC[metric])


# --------------------------------------------------------------------------------------------
# Algorithms
# --------------------------------------------------------------------------------------------


def _sorted_cdf(x: np.ndarray, w: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Sorted support and cumulative weights (last entry exactly 1) of a 1-D distribution."""
    order = np.argsort(x)
    xs = x[order]
    if w is None:
        cdf = np.arange(1, xs.size + 1, dtype=np.float64) / xs.size
    else:
        cdf = np.cumsum(w[order])
        cdf /= cdf[-1]
    cdf[-1] = 1.0
    return xs, cdf


def _winf_1d(x: np.ndarray, a: np.ndarray | None, y: np.ndarray, b: np.ndarray | None) -> float:
    """sup_t |F_u⁻¹(t) − F_v⁻¹(t)| for 1-D arrays ``x`` and ``y``."""
    if a is None and b is None and x.size == y.size:
        return float(np.max(np.abs(np.sort(x) - np.sort(y))))
    xs, fa = _sorted_cdf(x, a)
    ys, fb = _sorted_cdf(y, b)
    # Both quantile functions are constant on each interval (t_{p-1}, t_p] between merged
    # breakpoints. On a kept interval (wider than the tolerance) F_u⁻¹ is xs[i] with i = the
    # number of u-breakpoints before position p of the merge, which the merge order gives
    # without a search.
    merged = np.concatenate([fa, fb])
    order = np.argsort(merged, kind="stable")  # two sorted runs: a linear-time merge
    width = np.diff(merged[order], prepend=0.0)
    keep = np.flatnonzero(width > _MASS_TOL)
    before_a: np.ndarray = np.cumsum(order < fa.size) - (order < fa.size)
    ia = np.minimum(before_a[keep], xs.size - 1)
    ib = np.minimum(keep - before_a[keep], ys.size - 1)
    return float(np.max(np.abs(xs[ia] - ys[ib]), initial=0.0))


def _winf(
    x: np.ndarray, a: np.ndarray | None, y: np.ndarray, b: np.ndarray | None, metric: str
) -> float:
    """W∞ of validated inputs (points ``(n, m)``, weights normalised or ``None``)."""
    if x.shape[1] == 1:
        return _winf_1d(x[:, 0], a, y[:, 0], b)
    dist = _pairwise(x, y, metric)
    # Every support point must send (receive) its mass somewhere, so W∞ is at least the
    # largest nearest-neighbour distance in either direction; start the search there. A point
    # whose mass is within the flow tolerance need not, so it must not raise the floor.
    n, k = dist.shape
    rows = slice(None) if a is None else a > _FLOW_TOL
    cols = slice(None) if b is None else b > _FLOW_TOL
    floor = max(float(dist[rows].min(axis=1).max()), float(dist[:, cols].min(axis=0).max()))
    if a is None and b is None and n == k:
        return _bottleneck_threshold(dist, n)
    values = np.unique(dist)
    lo = int(np.searchsorted(values, floor, side="left"))
    wa, wb = _uniform(a, n), _uniform(b, k)
    return _smallest_feasible(values, lo, lambda t: _max_flow(dist <= t, wa, wb) >= 1.0 - _FLOW_TOL)


def _closeness_coupling(
    x: np.ndarray,
    a: np.ndarray | None,
    y: np.ndarray,
    b: np.ndarray | None,
    delta: float,
    metric: str,
) -> float:
    """Smallest W with a coupling putting mass ≥ 1 − δ on pairs at distance ≤ W."""
    if delta == 0.0:
        return _winf(x, a, y, b, metric)
    # No quantile shortcut in 1-D: with δ > 0 the monotone coupling is not optimal
    # (u = {0, 10}, v = {10, 20}, δ = 0.5 gives 0, the quantile coupling 10).
    dist = _pairwise(x, y, metric)
    n, k = dist.shape
    if a is None and b is None and n == k:
        return _bottleneck_threshold(dist, math.ceil((1.0 - delta) * n - 1e-9))
    values = np.unique(dist)
    wa, wb = _uniform(a, n), _uniform(b, k)
    target = 1.0 - delta - _FLOW_TOL
    return _smallest_feasible(values, 0, lambda t: _max_flow(dist <= t, wa, wb) >= target)


def _weighted_upper_quantile(r: np.ndarray, w: np.ndarray, level: float) -> float:
    """Smallest r₀ among ``r`` with Σ{w_i : r_i ≤ r₀} ≥ ``level`` (up to the mass tolerance)."""
    order = np.argsort(r)
    cum = np.cumsum(w[order])
    idx = int(np.searchsorted(cum, level - _MASS_TOL, side="left"))
    return float(r[order][min(idx, r.size - 1)])


def _closeness_bound(
    x: np.ndarray,
    a: np.ndarray | None,
    y: np.ndarray,
    b: np.ndarray | None,
    delta: float,
    metric: str,
) -> float:
    """Δ_E + 2c of Chen & Ohrimenko 2023, Thm 3.3, for the two given distributions."""
    wa, wb = _uniform(a, x.shape[0]), _uniform(b, y.shape[0])
    mean_x, mean_y = wa @ x, wb @ y
    delta_e = float(_norm(mean_x - mean_y, metric))
    level = 1.0 - delta / 2.0
    c = max(
        _weighted_upper_quantile(_norm(x - mean_x, metric), wa, level),
        _weighted_upper_quantile(_norm(y - mean_y, metric), wb, level),
    )
    # The triangle inequality behind the bound holds in exact arithmetic; rounding in the
    # means could otherwise leave it a few ulps below the closeness it is meant to bound.
    scale = max(float(np.abs(x).max()), float(np.abs(y).max()))
    slack = 64.0 * np.finfo(np.float64).eps * x.shape[1] * scale
    return delta_e + 2.0 * c + slack


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


def winf_distance(
    u: ArrayLike,
    v: ArrayLike,
    *,
    u_weights: ArrayLike | None = None,
    v_weights: ArrayLike | None = None,
    metric: str = "l1",
) -> float:
    """Exact ∞-Wasserstein distance between two discrete distributions.

    W∞(μ, ν) = min over couplings γ of μ and ν of the largest distance ‖x − y‖ between
    a pair (x, y) in the support of γ (Chen & Ohrimenko 2023, Def. 3.1). It is the noise
    scale of the Wasserstein Mechanism (Thm 3.1).

    Parameters
    ----------
    u : array_like, shape (n,) or (n, m)
        Support points of μ; a 1-D array means m = 1.
    v : array_like, shape (k,) or (k, m)
        Support points of ν, with the same m as ``u``.
    u_weights : array_like, shape (n,), optional
        Non-negative masses of the points of ``u`` with a positive sum; they are normalised
        to sum 1 and points of zero mass are dropped. Uniform when omitted (an empirical
        sample).
    v_weights : array_like, shape (k,), optional
        Masses of the points of ``v``, as ``u_weights``.
    metric : {"l1", "l2", "linf"}
        Norm of the displacement x − y. The paper uses ``"l1"``; in 1-D all three agree.

    Returns
    -------
    float
        W∞(μ, ν), in the units of the support points. It is always one of the pairwise
        distances ‖u_i − v_j‖.

    Raises
    ------
    ParameterTypeError
        If ``u``, ``v`` or the weights are not numeric arrays, or ``metric`` is not a string.
    ParameterError
        If an array contains NaN or ±inf, has the wrong number of dimensions, ``u`` and
        ``v`` differ in m, weights are negative, of the wrong length or all zero,
        ``metric`` is unknown, or (m > 1) n·k exceeds 25,000,000.

    Notes
    -----
    * m = 1: the largest gap between the quantile functions, sup_t |F_μ⁻¹(t) − F_ν⁻¹(t)|,
      in O((n + k) log(n + k)); for equal-size unweighted samples max |sort(u) − sort(v)|.
      Quantile intervals of mass below 1e-12 are treated as rounding error and ignored.
    * m > 1, equal-size unweighted samples: a bottleneck matching — one matching grown
      with the threshold by minimax augmenting paths, from a Hopcroft–Karp warm start on a
      sparse subgraph (seconds for 2,000 points per sample in 5-D).
    * m > 1 otherwise: the same binary search with a max-flow test (an LP solved by HiGHS)
      that must transport all the mass, up to 1e-9. One LP per search step: seconds for a
      few hundred weighted points.

    The tolerances mean that mass at the level of floating-point error is disregarded: a
    support point whose normalised weight is below 1e-12 (1-D) or 1e-9 (m > 1) may be
    ignored, so the result is at worst a W with (W, 1e-9)-closeness (Def. 3.2). Give such
    points a larger weight, or drop them explicitly, if they must count.

    Examples
    --------
    >>> winf_distance([1, 2, 3, 100], [1, 2, 3, 100],
    ...               u_weights=[0.6, 0.2, 0.0, 0.2], v_weights=[0.4, 0.3, 0.2, 0.1])
    97.0
    """
    metric = check_choice(metric, "metric", METRICS)
    x, a, y, b = _prepare(u, v, u_weights, v_weights)
    return _winf(x, a, y, b, metric)


def closeness(
    u: ArrayLike,
    v: ArrayLike,
    *,
    delta: float,
    u_weights: ArrayLike | None = None,
    v_weights: ArrayLike | None = None,
    metric: str = "l1",
    method: str = "coupling",
) -> float:
    """A W such that two discrete distributions are (W, δ)-close.

    μ and ν are (W, δ)-close if some coupling γ of them puts mass at least 1 − δ on pairs
    (x, y) with ‖x − y‖ ≤ W (Chen & Ohrimenko 2023, Def. 3.2). Laplace noise of scale W/ε
    then gives (ε, δ)-distribution privacy (Thm 3.2).

    Parameters
    ----------
    u : array_like, shape (n,) or (n, m)
        Support points of μ; a 1-D array means m = 1.
    v : array_like, shape (k,) or (k, m)
        Support points of ν, with the same m as ``u``.
    delta : float
        Mass that may be disregarded, in [0, 1).
    u_weights, v_weights : array_like, shape (n,) and (k,), optional
        Non-negative masses, normalised to sum 1 (see :func:`winf_distance`).
    metric : {"l1", "l2", "linf"}
        Norm of the displacement; the paper uses ``"l1"``.
    method : {"coupling", "bound"}
        ``"coupling"``: the smallest such W, exactly — binary search over the sorted
        pairwise distances with a max-flow test that at least 1 − δ of the mass can move
        within the threshold (tolerance 1e-9); for equal-size unweighted samples, the
        bottleneck of a matching of ⌈(1 − δ)n⌉ points, grown with the threshold. With
        δ = 0 this is :func:`winf_distance`.
        ``"bound"``: the upper bound Δ_E + 2c of Chen & Ohrimenko 2023, Thm 3.3, where
        Δ_E = ‖E μ − E ν‖ and c is the larger of the two (1 − δ/2)-quantiles of ‖X − E X‖
        (both in ``metric``). O((n + k) log(n + k)) time, O(n + k) memory; never below the
        ``"coupling"`` answer (it is rounded up by a few ulps of the data's scale so that
        floating-point error cannot make it so).

    Returns
    -------
    float
        W, in the units of the support points.

    Raises
    ------
    ParameterTypeError
        On a non-numeric array, a non-real ``delta`` or a non-string ``metric``/``method``.
    ParameterError
        On the invalid inputs listed in :func:`winf_distance`, ``delta`` outside [0, 1) or
        not finite, or an unknown ``method``. ``method="coupling"`` with δ > 0 needs the
        n-by-k distance matrix also in 1-D, and refuses n·k > 25,000,000.

    Notes
    -----
    In 1-D the monotone (quantile) coupling that gives W∞ is not optimal once δ > 0:
    for u = {0, 10}, v = {10, 20} and δ = 0.5 the answer is 0 (match 10 with 10), whereas
    the quantile coupling moves every point by 10. The general algorithm is used instead.

    Examples
    --------
    >>> closeness([1, 2, 3, 100], [1, 2, 3, 100], delta=0.1,
    ...           u_weights=[0.6, 0.2, 0.0, 0.2], v_weights=[0.4, 0.3, 0.2, 0.1])
    1.0
    """
    delta = check_delta(delta)
    metric = check_choice(metric, "metric", METRICS)
    method = check_choice(method, "method", METHODS)
    x, a, y, b = _prepare(u, v, u_weights, v_weights)
    if method == "bound":
        return _closeness_bound(x, a, y, b, delta, metric)
    return _closeness_coupling(x, a, y, b, delta, metric)
