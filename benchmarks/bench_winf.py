"""Benchmark: distpriv.distances.winf_distance against naive implementations.

Usage::

    python -m benchmarks.bench_winf [--seed N]

Times, in the same run, our exact ∞-Wasserstein distance (Chen & Ohrimenko 2023, Def. 3.1)
and a naive version written here, checks that both return the same value (exit status 1
if not) and prints the best-of-k wall-clock times and their ratio (naive / ours).

Cases
-----
* 1-D, 10^5 points, equal-size unweighted and weighted samples. Naive: the quantile-function
  gap evaluated by a pure-Python loop over the merged cumulative-weight breakpoints.
* 2-D, 300 points, equal-size unweighted samples. Naive: binary search over the sorted
  pairwise distances where each feasibility test is a linear program over the full 300x300
  coupling (scipy linprog, HiGHS) minimising the mass on pairs farther apart than the
  threshold. We kept this LP baseline because it is fast enough: on a 2-core machine it takes
  0.5-1 s per LP and 8-20 s per run (2 runs), under the ~60 s beyond which we would have
  switched to a linear scan with a pure-Python augmenting-path (Kuhn) matching.
* 5-D, 2000 points per hypothesis: the Monte Carlo query model of the Wasserstein mechanisms
  on Adult (``distpriv demo --n-samples 2000``; five statistics, income 0.45 vs 0.55), W∞
  and the (W, δ)-closeness at δ = 1e-3. Baseline: the algorithm of commit eb5e882 (binary
  search over the sorted distances, a fresh scipy Hopcroft–Karp matching per threshold);
  ours grows one matching with the threshold (incremental bottleneck augmenting paths).
  ``--samples-seed`` picks the Monte Carlo draw; the baseline's time varies a lot with it
  (the matchings just below the answer are the slow ones).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix, csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching
from scipy.spatial.distance import cdist

from distpriv.distances import closeness, winf_distance

from ._common import best_of

MASS_TOL = 1e-12  # same rounding tolerance on quantile intervals as the library
FLOW_TOL = 1e-9


# --------------------------------------------------------------------------------------------
# Naive baselines
# --------------------------------------------------------------------------------------------


def naive_winf_1d(u: np.ndarray, v: np.ndarray, a=None, b=None) -> float:
    """sup_t |F_u⁻¹(t) − F_v⁻¹(t)|, walking the merged breakpoints one at a time in Python."""
    ou, ov = np.argsort(u), np.argsort(v)
    xs, ys = u[ou].tolist(), v[ov].tolist()
    n, k = len(xs), len(ys)
    wa = [1.0 / n] * n if a is None else (a[ou] / a.sum()).tolist()
    wb = [1.0 / k] * k if b is None else (b[ov] / b.sum()).tolist()
    i = j = 0
    ca, cb = wa[0], wb[0]
    prev = best = 0.0
    while i < n and j < k:
        right = min(ca, cb)
        if right - prev > MASS_TOL:
            best = max(best, abs(xs[i] - ys[j]))
        prev = right
        if ca <= right:
            i += 1
            if i < n:
                ca += wa[i]
        if cb <= right:
            j += 1
            if j < k:
                cb += wb[j]
    return best


def naive_winf_lp(u: np.ndarray, v: np.ndarray) -> float:
    """Bottleneck threshold by binary search, each test an LP over the full coupling."""
    n, k = len(u), len(v)
    dist = cdist(u, v, metric="cityblock")
    values = np.unique(dist)
    var = np.arange(n * k)
    marginals = coo_matrix(
        (np.ones(2 * n * k), (np.concatenate([var // k, n + var % k]), np.concatenate([var, var]))),
        shape=(n + k, n * k),
    ).tocsr()
    b_eq = np.concatenate([np.full(n, 1.0 / n), np.full(k, 1.0 / k)])

    def feasible(t: float) -> bool:
        cost = (dist > t).ravel().astype(float)
        res = linprog(cost, A_eq=marginals, b_eq=b_eq, bounds=(0, None), method="highs")
        if res.status != 0:
            raise RuntimeError(res.message)
        return res.fun <= FLOW_TOL

    lo, hi = 0, values.size - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if feasible(values[mid]):
            hi = mid
        else:
            lo = mid + 1
    return float(values[lo])


def baseline_threshold(u: np.ndarray, v: np.ndarray, need: int) -> float:
    """eb5e882's exact algorithm: binary search over the sorted distances (from the
    nearest-neighbour floor when ``need`` is everything), a fresh maximum matching each."""
    dist = cdist(u, v, metric="cityblock")
    values = np.unique(dist)
    lo = 0
    if need == len(u):
        floor = max(float(dist.min(axis=1).max()), float(dist.min(axis=0).max()))
        lo = int(np.searchsorted(values, floor, side="left"))
    hi = values.size - 1
    while lo < hi:
        mid = (lo + hi) // 2
        match = maximum_bipartite_matching(csr_matrix(dist <= values[mid]), perm_type="column")
        if np.count_nonzero(match >= 0) >= need:
            hi = mid
        else:
            lo = mid + 1
    return float(values[lo])


def adult_samples(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The Monte Carlo model of the Wasserstein mechanisms on Adult, n draws per value."""
    import warnings

    from distpriv.datasets import paper_split
    from distpriv.modeling import ProportionSecret, Query, model_query

    q = Query(
        {
            "avg_age": "avg(age)",
            "avg_education": "avg(education_num)",
            "n_never_married": "count_if(marital_status = 'Never-married')",
            "n_female": "count_if(sex = 'Female')",
            "avg_hours": "avg(hours_per_week)",
        }
    )
    secret = ProportionSecret("income = '>50K'", values=[0.45, 0.55])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = model_query(
            paper_split(rng=seed)["modeling"],
            q,
            secret,
            subset_size=100,
            method="montecarlo",
            n_samples=n,
            rng=seed,
        )
    return model.samples[0], model.samples[1]


# --------------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0, help="seed of numpy.random.default_rng")
    parser.add_argument("--samples-seed", type=int, default=0, help="seed of the Adult draws")
    parser.add_argument("--n5", type=int, default=2000, help="points per hypothesis in 5-D")
    parser.add_argument("--skip-5d", action="store_true", help="leave the 5-D cases out")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)

    n1 = 100_000
    u1, v1 = rng.normal(size=n1), rng.standard_t(4, size=n1) + 0.1
    wu, wv = rng.random(n1), rng.exponential(size=n1)
    n2 = 300
    u2, v2 = rng.normal(size=(n2, 2)), rng.normal(0.3, 1.2, size=(n2, 2))

    # (name, ours, naive, repeats of ours, repeats of naive)
    cases = [
        (
            "1-D, 1e5 pts, unweighted",
            lambda: winf_distance(u1, v1),
            lambda: naive_winf_1d(u1, v1),
            7,
            3,
        ),
        (
            "1-D, 1e5 pts, weighted",
            lambda: winf_distance(u1, v1, u_weights=wu, v_weights=wv),
            lambda: naive_winf_1d(u1, v1, wu, wv),
            7,
            3,
        ),
        (
            "2-D, 300 pts, l1 (LP naive)",
            lambda: winf_distance(u2, v2, metric="l1"),
            lambda: naive_winf_lp(u2, v2),
            7,
            2,
        ),
    ]
    if not args.skip_5d:
        u5, v5 = adult_samples(args.n5, args.samples_seed)
        need = int(np.ceil((1 - 1e-3) * args.n5 - 1e-9))
        cases += [
            (
                f"5-D, {args.n5} pts, W-inf (eb5e882)",
                lambda: winf_distance(u5, v5, metric="l1"),
                lambda: baseline_threshold(u5, v5, args.n5),
                3,
                1,
            ),
            (
                f"5-D, {args.n5} pts, d=1e-3 (eb5e882)",
                lambda: closeness(u5, v5, delta=1e-3, metric="l1"),
                lambda: baseline_threshold(u5, v5, need),
                3,
                1,
            ),
        ]

    print(f"seed = {args.seed}, samples seed = {args.samples_seed}")
    header = f"{'case':<34} {'ours (s)':>10} {'naive (s)':>10} {'ratio':>9}  {'W∞':>10}"
    print(header)
    print("-" * len(header))
    ok = True
    for name, ours, naive, rep_ours, rep_naive in cases:
        t_ours, got = best_of(ours, rep_ours)
        t_naive, want = best_of(naive, rep_naive)
        same = got == want
        ok &= same
        flag = "" if same else f"  MISMATCH (naive {want!r})"
        print(
            f"{name:<34} {t_ours:>10.4f} {t_naive:>10.4f} {t_naive / t_ours:>8.1f}x"
            f"  {got:>10.6f}{flag}"
        )
    if not ok:
        print("error: our winf_distance and the naive version disagree", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
