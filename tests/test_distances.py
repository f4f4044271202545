"""Tests for distpriv.distances (Chen & Ohrimenko 2023, Def. 3.1, Def. 3.2, Thm 3.3).

The reference is a brute-force linear program over the full coupling matrix, written here
independently of the library: for each candidate threshold t (every distinct pairwise
distance, in increasing order) it minimises the mass a coupling must put on pairs farther
apart than t. The first t where that minimum is 0 is W∞; where it is ≤ δ, the (W, δ)-closeness.
"""

from __future__ import annotations

import itertools
import math

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching
from scipy.spatial.distance import cdist

from distpriv.distances import _bottleneck_threshold, closeness, winf_distance
from distpriv.errors import ParameterError, ParameterTypeError

METRICS = ("l1", "l2", "linf")
DELTAS = (0.0, 0.1, 0.3)
SCIPY_METRIC = {"l1": "cityblock", "l2": "euclidean", "linf": "chebyshev"}
TOL = 1e-9


# --------------------------------------------------------------------------------------------
# Independent reference: LP over the full coupling
# --------------------------------------------------------------------------------------------


def brute_force(u, v, a=None, b=None, metric="l1", deltas=DELTAS):
    """Return {delta: smallest W such that u, v are (W, delta)-close}, by a linear scan.

    ``min_excess(t)`` = min over couplings γ (exact marginals) of the mass on pairs with
    distance > t; the answer for δ is the first t with min_excess(t) ≤ δ (+ tolerance).
    """
    x = np.asarray(u, dtype=float).reshape(len(u), -1)
    y = np.asarray(v, dtype=float).reshape(len(v), -1)
    n, k = len(x), len(y)
    a = np.full(n, 1.0 / n) if a is None else np.asarray(a, float) / np.sum(a)
    b = np.full(k, 1.0 / k) if b is None else np.asarray(b, float) / np.sum(b)
    dist = cdist(x, y, metric=SCIPY_METRIC[metric])
    # γ is flattened row-major: γ[i, j] is variable i * k + j.
    a_eq = np.zeros((n + k, n * k))
    for i in range(n):
        a_eq[i, i * k : (i + 1) * k] = 1.0
    for j in range(k):
        a_eq[n + j, j::k] = 1.0
    b_eq = np.concatenate([a, b])
    answers = {}
    for t in np.unique(dist):
        cost = (dist > t).ravel().astype(float)
        res = linprog(cost, A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
        assert res.status == 0, res.message
        for delta in deltas:
            if delta not in answers and res.fun <= delta + TOL:
                answers[delta] = float(t)
        if len(answers) == len(deltas):
            break
    return answers


def check_against_brute_force(u, v, a=None, b=None, metric="l1"):
    expected = brute_force(u, v, a, b, metric)
    got_winf = winf_distance(u, v, u_weights=a, v_weights=b, metric=metric)
    assert got_winf == pytest.approx(expected[0.0], rel=1e-12, abs=1e-12)
    for delta in DELTAS:
        got = closeness(u, v, delta=delta, u_weights=a, v_weights=b, metric=metric)
        assert got == pytest.approx(expected[delta], rel=1e-12, abs=1e-12), delta


def random_weights(rng, n):
    """Small integer masses, some zero (support points to drop), with a positive sum."""
    w = rng.integers(0, 4, size=n).astype(float)
    w[rng.integers(n)] += 1.0
    return w


# --------------------------------------------------------------------------------------------
# Worked example from the paper
# --------------------------------------------------------------------------------------------

SUPPORT = [1.0, 2.0, 3.0, 100.0]
MU = [0.6, 0.2, 0.0, 0.2]
NU = [0.4, 0.3, 0.2, 0.1]


def test_figure1_winf():
    # μ's mass at 100 (0.2) exceeds ν's (0.1): 0.1 must travel at least to 3, distance 97.
    assert winf_distance(SUPPORT, SUPPORT, u_weights=MU, v_weights=NU) == 97.0
    assert winf_distance(SUPPORT, SUPPORT, u_weights=NU, v_weights=MU) == 97.0


def test_figure1_closeness():
    kw = {"u_weights": MU, "v_weights": NU}
    # δ = 0.1 disregards exactly the 0.1 that leaves 100; the rest moves by ≤ 1
    # (1→1, 1→2, 2→2, 2→3, 100→100). With δ = 0 nothing moves 0 apart enough (0.7 at t=0).
    assert closeness(SUPPORT, SUPPORT, delta=0.1, **kw) == 1.0
    # δ = 0.05: at least 0.1 of μ(100) must leave 100 and only 0.05 may be disregarded, so
    # 0.05 still travels ≥ 97 (100 → 3 is the shortest way out): W = 97 = W∞.
    assert closeness(SUPPORT, SUPPORT, delta=0.05, **kw) == 97.0
    assert closeness(SUPPORT, SUPPORT, delta=0.0, **kw) == 97.0
    # Just above 0.1 nothing changes; below 0.1 the answer jumps back to 97.
    assert closeness(SUPPORT, SUPPORT, delta=0.11, **kw) == 1.0
    assert closeness(SUPPORT, SUPPORT, delta=0.099, **kw) == 97.0
    # The zero mass at μ(3) is dropped: leaving the point out gives the same answers.
    kw_short = {"u_weights": [0.6, 0.2, 0.2], "v_weights": NU}
    assert closeness([1, 2, 100], SUPPORT, delta=0.1, **kw_short) == 1.0
    assert winf_distance([1, 2, 100], SUPPORT, **kw_short) == 97.0
    check_against_brute_force(SUPPORT, SUPPORT, MU, NU)


def test_figure1_bound():
    kw = {"u_weights": MU, "v_weights": NU}
    # E μ = 21, E ν = 11.6, Δ_E = 9.4. At level 1 − δ/2 = 0.95 the radii quantiles are
    # 79 (μ: |100 − 21|) and 88.4 (ν: |100 − 11.6|), so W = 9.4 + 2·88.4 = 186.2.
    assert closeness(SUPPORT, SUPPORT, delta=0.1, method="bound", **kw) == pytest.approx(186.2)
    # At level 0.75: μ's quantile is 20 (|1 − 21|, cumulative 0.8), ν's 10.6 (cum. 0.9).
    assert closeness(SUPPORT, SUPPORT, delta=0.5, method="bound", **kw) == pytest.approx(49.4)


@pytest.mark.parametrize(("metric", "expected"), [("l1", 7.0), ("l2", 5.0), ("linf", 4.0)])
def test_metrics_on_point_masses(metric, expected):
    u, v = [[0.0, 0.0]], [[3.0, 4.0]]
    assert winf_distance(u, v, metric=metric) == pytest.approx(expected)
    assert closeness(u, v, delta=0.5, metric=metric) == pytest.approx(expected)
    bound = closeness(u, v, delta=0.5, metric=metric, method="bound")
    assert bound == pytest.approx(expected)
    assert bound >= expected


def test_bound_survives_rounding_in_the_means():
    # The weighted mean of (0.1, 0.1) is not exactly 0.1 in floating point; without the
    # slack Δ_E + 2c evaluates to 0.9999999999999999 < 1.0 = |1.1 − 0.1|, the true closeness.
    u, v, a = [0.1, 0.1], [1.1], [4.0, 1.0]
    coupling = closeness(u, v, delta=0.0, u_weights=a)
    assert coupling == winf_distance(u, v, u_weights=a) == 1.1 - 0.1
    bound = closeness(u, v, delta=0.0, u_weights=a, method="bound")
    assert bound >= coupling
    assert bound == pytest.approx(coupling, abs=1e-13)


def test_tiny_mass_within_tolerance_is_ignored_consistently():
    # A mass of 1e-20 is below every tolerance: the exact answer would be 2 (the point (1, 1)
    # must move to (0, 0)), but the coupling, the nearest-neighbour floor and the bound all
    # treat it as rounding error, so they stay consistent with each other.
    u, v, a = [[1.0, 1.0], [0.0, 1.0]], [[0.0, 0.0]], [1e-20, 1.0]
    assert winf_distance(u, v, u_weights=a) == 1.0
    assert closeness(u, v, delta=0.0, u_weights=a, method="bound") >= 1.0
    assert winf_distance(u, v, u_weights=[1e-3, 1.0]) == 2.0


def test_1d_quantile_coupling_is_not_optimal_for_closeness():
    # Monotone coupling: 0→10, 10→20 (both 10). Matching 10 with 10 and dropping the rest
    # (mass 0.5 = δ) gives W = 0.
    assert winf_distance([0, 10], [10, 20]) == 10.0
    assert closeness([0, 10], [10, 20], delta=0.5) == 0.0
    assert closeness([0, 10], [10, 20], delta=0.49) == 10.0


# --------------------------------------------------------------------------------------------
# Against the brute-force LP
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(10))
def test_1d_weighted_vs_brute_force(seed):
    rng = np.random.default_rng(seed)
    n, k = rng.integers(1, 7, size=2)
    # Half the instances on a small integer grid, so that ties and shared atoms occur.
    if seed % 2:
        u, v = rng.integers(0, 6, size=n).astype(float), rng.integers(0, 6, size=k).astype(float)
    else:
        u, v = rng.normal(size=n), rng.normal(size=k)
    check_against_brute_force(u, v, random_weights(rng, n), random_weights(rng, k))


@pytest.mark.parametrize("seed", range(10))
def test_1d_unweighted_unequal_sizes_vs_brute_force(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(1, 7))
    k = int(rng.choice([m for m in range(1, 8) if m != n]))
    u = rng.integers(-3, 4, size=n).astype(float) if seed % 2 else rng.normal(size=n)
    v = rng.integers(-3, 4, size=k).astype(float) if seed % 2 else rng.normal(size=k)
    check_against_brute_force(u, v)


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("seed", range(8))
def test_2d_equal_size_unweighted_vs_brute_force(seed, metric):
    rng = np.random.default_rng(200 + seed)
    n = int(rng.integers(2, 7))
    if seed % 2:
        u, v = rng.integers(0, 4, size=(n, 2)).astype(float), rng.integers(0, 4, size=(n, 2))
    else:
        u, v = rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
    check_against_brute_force(u, v, metric=metric)


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("seed", range(8))
def test_weighted_multidim_vs_brute_force(seed, dim):
    rng = np.random.default_rng(300 + 10 * dim + seed)
    n, k = rng.integers(1, 6, size=2)
    if seed % 2:
        u = rng.integers(0, 3, size=(n, dim)).astype(float)
        v = rng.integers(0, 3, size=(k, dim)).astype(float)
    else:
        u, v = rng.normal(size=(n, dim)), rng.normal(size=(k, dim))
    metric = METRICS[seed % 3]
    check_against_brute_force(u, v, random_weights(rng, n), random_weights(rng, k), metric)


def test_2d_unweighted_unequal_sizes_vs_brute_force():
    rng = np.random.default_rng(400)
    for n, k in [(2, 5), (4, 3), (6, 1)]:
        check_against_brute_force(rng.normal(size=(n, 2)), rng.normal(size=(k, 2)))


# --------------------------------------------------------------------------------------------
# Special cases
# --------------------------------------------------------------------------------------------


def test_1d_cumulative_rounding_creates_no_gap():
    # 0.1 + 0.2 = 0.30000000000000004 ≠ 0.3: the sliver between them is not mass at 5.
    got = winf_distance(
        [0.0, 0.0, 5.0], [0.0, 5.0], u_weights=[0.1, 0.2, 0.7], v_weights=[0.3, 0.7]
    )
    assert got == 0.0


def test_1d_large_equal_size_is_sorted_gap():
    rng = np.random.default_rng(7)
    u = rng.standard_t(3, size=100_000)
    v = rng.normal(0.2, 1.5, size=100_000)
    expected = float(np.max(np.abs(np.sort(u) - np.sort(v))))
    assert winf_distance(u, v) == expected
    # Explicit uniform weights describe the same distributions.
    w = np.full(u.size, 2.5)
    assert winf_distance(u, v, u_weights=w, v_weights=w) == expected


def test_1d_weighted_path_matches_sorted_gap():
    rng = np.random.default_rng(8)
    u, v = rng.normal(size=1000), rng.exponential(size=1000)
    expected = float(np.max(np.abs(np.sort(u) - np.sort(v))))
    # Duplicating v's points with half the mass each is the same distribution, but forces
    # the merged-breakpoint (weighted) algorithm.
    got = winf_distance(u, np.repeat(v, 2))
    assert got == expected


def test_weights_scale_invariant_and_uniform_weights_equal_unweighted():
    rng = np.random.default_rng(9)
    u, v = rng.normal(size=(5, 2)), rng.normal(size=(5, 2))
    a, b = rng.random(5), rng.random(5)
    assert winf_distance(u, v, u_weights=a, v_weights=b) == winf_distance(
        u, v, u_weights=1000 * a, v_weights=b / 7
    )
    assert winf_distance(u, v, u_weights=np.ones(5), v_weights=np.full(5, 3.0)) == (
        winf_distance(u, v)
    )


def test_memory_guard():
    u = np.zeros((5001, 2))
    with pytest.raises(ParameterError, match="too large"):
        winf_distance(u, u)
    with pytest.raises(ParameterError, match="too large"):
        closeness(u[:, 0], u[:, 0], delta=0.1)
    # The quantile algorithm (1-D, δ = 0) and the bound need no distance matrix.
    assert closeness(u[:, 0], u[:, 0], delta=0.0) == 0.0
    assert closeness(u, u, delta=0.1, method="bound") == 0.0


# --------------------------------------------------------------------------------------------
# Invariants (hypothesis)
# --------------------------------------------------------------------------------------------

coords = st.floats(-50, 50, allow_nan=False, allow_subnormal=False)
masses = st.floats(0, 10, allow_nan=False, allow_subnormal=False)
# Masses that are either 0 or well above the tolerances, for comparisons with the LP, whose
# tolerance (1e-9 of mass) differs from the 1-D algorithm's (1e-12 per quantile interval).
clear_masses = st.one_of(st.just(0.0), st.floats(1e-3, 10))


@st.composite
def pairs(draw, weighted=None, mass=masses):
    """Two discrete distributions with the same dimension m ≤ 3 and optional weights."""
    dim = draw(st.integers(1, 3))
    n, k = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    u = draw(hnp.arrays(np.float64, (n, dim), elements=coords))
    v = draw(hnp.arrays(np.float64, (k, dim), elements=coords))
    if dim == 1 and draw(st.booleans()):
        u, v = u[:, 0], v[:, 0]
    if weighted is None:
        weighted = draw(st.booleans())
    a = b = None
    if weighted:
        a = draw(hnp.arrays(np.float64, n, elements=mass))
        b = draw(hnp.arrays(np.float64, k, elements=mass))
        a[np.argmax(a)] += 1.0
        b[np.argmax(b)] += 1.0
    return u, v, a, b


@settings(max_examples=60, deadline=None)
@given(pairs(), st.sampled_from(METRICS))
def test_symmetry(data, metric):
    u, v, a, b = data
    assert winf_distance(u, v, u_weights=a, v_weights=b, metric=metric) == winf_distance(
        v, u, u_weights=b, v_weights=a, metric=metric
    )


@settings(max_examples=60, deadline=None)
@given(pairs(), st.sampled_from(METRICS))
def test_distance_to_itself_is_zero(data, metric):
    u, _, a, _ = data
    assert winf_distance(u, u, u_weights=a, v_weights=a, metric=metric) == 0.0
    assert closeness(u, u, delta=0.2, u_weights=a, v_weights=a, metric=metric) == 0.0


@settings(max_examples=60, deadline=None)
@given(pairs(), st.sampled_from(METRICS), st.data())
def test_translation(data, metric, draw):
    u, _, a, _ = data
    dim = 1 if np.ndim(u) == 1 else u.shape[1]
    c = draw.draw(hnp.arrays(np.float64, dim, elements=coords))
    shifted = u + (c[0] if np.ndim(u) == 1 else c)
    norm = {"l1": np.sum(np.abs(c)), "l2": np.linalg.norm(c), "linf": np.max(np.abs(c))}[metric]
    got = winf_distance(u, shifted, u_weights=a, v_weights=a, metric=metric)
    # u + c − u differs from c by rounding (data up to 50 in size).
    assert got == pytest.approx(norm, rel=1e-9, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(pairs(), st.sampled_from(METRICS))
def test_closeness_monotone_in_delta_and_below_bound(data, metric):
    u, v, a, b = data
    kw = {"u_weights": a, "v_weights": b, "metric": metric}
    deltas = [0.0, 0.05, 0.2, 0.5, 0.9]
    values = [closeness(u, v, delta=d, **kw) for d in deltas]
    assert values[0] == winf_distance(u, v, **kw)
    assert all(later <= earlier for earlier, later in itertools.pairwise(values))
    for d, value in zip(deltas, values, strict=True):
        assert closeness(u, v, delta=d, method="bound", **kw) >= value


@settings(max_examples=25, deadline=None)
@given(pairs(weighted=True, mass=clear_masses), st.sampled_from(METRICS))
def test_hypothesis_weighted_vs_brute_force(data, metric):
    u, v, a, b = data
    check_against_brute_force(u, v, a, b, metric)


# --------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------

U2 = np.zeros((4, 2))
V2 = np.ones((3, 2))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"u": [0.0, np.nan]}, ParameterError, "u must be finite"),
        ({"v": [[0.0, np.inf], [1.0, 1.0]]}, ParameterError, "v must be finite"),
        ({"u": np.zeros((4, 2)), "v": np.zeros((3, 3))}, ParameterError, "same dimension m"),
        ({"u": np.zeros((2, 2, 2))}, ParameterError, "u must have 1 or 2 dimension"),
        ({"v": []}, ParameterError, "v must have at least 1"),
        ({"u": "abc"}, ParameterTypeError, "u must be an array"),
        ({"v": None}, ParameterTypeError, "v must be an array"),
        ({"u": [[1.0, 2.0], [3.0]]}, ParameterTypeError, "u must be an array"),
        ({"u_weights": [1.0, -1.0, 1.0, 1.0]}, ParameterError, "u_weights must be non-neg"),
        ({"v_weights": [1.0, 1.0]}, ParameterError, r"v_weights must have one entry per"),
        ({"u_weights": [0.0, 0.0, 0.0, 0.0]}, ParameterError, "u_weights must sum to a pos"),
        ({"v_weights": [1.0, np.nan, 1.0]}, ParameterError, "v_weights must be finite"),
        ({"u_weights": np.ones((4, 1))}, ParameterError, "u_weights must have 1 dimension"),
        ({"v_weights": "uniform"}, ParameterTypeError, "v_weights must be an array"),
        ({"u": np.full((4, 2), 1e308)}, ParameterError, "u has a coordinate.*overflow"),
        ({"metric": "l3"}, ParameterError, "metric must be one of"),
        ({"metric": 1}, ParameterTypeError, "metric must be a string"),
    ],
)
@pytest.mark.parametrize("func", ["winf", "closeness"])
def test_bad_input(func, kwargs, error, match):
    kw = {"u": U2, "v": V2, **kwargs}
    u, v = kw.pop("u"), kw.pop("v")
    with pytest.raises(error, match=match):
        if func == "winf":
            winf_distance(u, v, **kw)
        else:
            closeness(u, v, delta=0.1, **kw)


@pytest.mark.parametrize(
    ("delta", "error"),
    [
        (1.0, ParameterError),
        (-0.1, ParameterError),
        (math.nan, ParameterError),
        (math.inf, ParameterError),
        ("0.1", ParameterTypeError),
        (None, ParameterTypeError),
    ],
)
@pytest.mark.parametrize("method", ["coupling", "bound"])
def test_bad_delta(delta, error, method):
    with pytest.raises(error, match="delta"):
        closeness(U2, V2, delta=delta, method=method)


def test_bad_method():
    with pytest.raises(ParameterError, match="method must be one of"):
        closeness(U2, V2, delta=0.1, method="exact")
    with pytest.raises(ParameterTypeError, match="method must be a string"):
        closeness(U2, V2, delta=0.1, method=None)


def test_errors_are_builtin_subclasses():
    with pytest.raises(ValueError, match="delta"):
        closeness(U2, V2, delta=2.0)
    with pytest.raises(TypeError, match="u must be an array"):
        winf_distance(object(), V2)


# --------------------------------------------------------------------------------------------
# Incremental bottleneck matching against the previous algorithm (binary search + matching)
# --------------------------------------------------------------------------------------------


def previous_threshold(dist, need):
    """eb5e882's algorithm: binary search over the sorted distances, a fresh Hopcroft–Karp
    maximum matching (scipy) at each threshold."""
    values = np.unique(dist)
    lo, hi = 0, values.size - 1
    while lo < hi:
        mid = (lo + hi) // 2
        match = maximum_bipartite_matching(csr_matrix(dist <= values[mid]), perm_type="column")
        if np.count_nonzero(match >= 0) >= need:
            hi = mid
        else:
            lo = mid + 1
    return float(values[lo])


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 3),
    st.integers(1, 9),
    st.sampled_from(METRICS),
    st.booleans(),
    st.floats(0.0, 0.95),
    st.integers(0, 2**32 - 1),
)
def test_bottleneck_matching_equals_previous_algorithm(dim, n, metric, ties, delta, seed):
    # Small integer coordinates give many equal distances (ties), the hard case for a
    # threshold search; Gaussian ones give distinct distances.
    rng = np.random.default_rng(seed)
    if ties:
        u = rng.integers(0, 4, size=(n, dim)).astype(float)
        v = rng.integers(0, 4, size=(n, dim)).astype(float)
    else:
        u = rng.normal(size=(n, dim))
        v = rng.normal(0.5, 2.0, size=(n, dim))
    dist = cdist(u, v, metric=SCIPY_METRIC[metric])
    need = math.ceil((1.0 - delta) * n - 1e-9)
    if dim > 1:
        assert winf_distance(u, v, metric=metric) == previous_threshold(dist, n)
        assert closeness(u, v, delta=delta, metric=metric) == previous_threshold(dist, need)
    for k in range(1, n + 1):
        assert _bottleneck_threshold(dist, k) == previous_threshold(dist, k)


@pytest.mark.parametrize(("seed", "n"), [(0, 300), (1, 400)])
def test_bottleneck_matching_equals_previous_algorithm_at_scale(seed, n):
    # Rounded data: thousands of tied distances and a warm start far from perfect.
    rng = np.random.default_rng(seed)
    u = np.round(rng.normal(size=(n, 5)) * 3)
    v = np.round(rng.standard_t(3, size=(n, 5)) * 3 + 0.5)
    dist = cdist(u, v, metric="cityblock")
    for need in (n, n - 1, n - n // 10, n // 2):
        assert _bottleneck_threshold(dist, need) == previous_threshold(dist, need)
