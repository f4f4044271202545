"""Benchmark: power and false-violation rate of the data-level check.

Settings where the true δ(ε) of the release is known exactly, so "certified a violation"
can be scored against the truth:

* ``gaussian``: draws from a Gaussian model N(μ_θ, Σ_θ) of three statistics (unequal
  covariances); expm-g calibrated at (ε, δ) = (1, 1e-3) on it (exact δ ≤ 1e-3: correct),
  then its noise covariance scaled down until :func:`distpriv.gaussian_pair_delta` (the
  exact accountant) gives 3×, 5×, 10× the target (bisection on the scale);
* ``lattice``: three grid-valued statistics of n = 50 categorical rows (two counts and
  the mean of an integer column), f_θ multinomial, with DauM's rank-one noise calibrated on
  f's Gaussian model. The lattice decoder reads f back from every release, so the release's
  δ is δ(f) = Σ_x max(0, p_i(x) − e^ε p_j(x)), computed exactly by dynamic programming over
  the lattice; the two values' row distributions are tilted apart until δ(f) is 3×, 5×,
  10× the target (and a tilt with δ(f) < 1e-3 is the correct case).

For each, R runs (fresh seeds) of the sequential check (:func:`distpriv.attacks.
verify_sequential`: 20,000 datasets per value at the first look — half choose the sets,
half are evaluated — then more evaluation datasets, doubling up to the sample budget,
counted in batches) with the expected-hit half-space (a Rao–Blackwellised count with an
empirical-Bernstein bound, :mod:`distpriv.attacks.verify_expected`), and, as the baseline in
the same run with the same seeds, the same check with the counted sets alone
(``verify_stream.EXPECTED_HITS = False``: 0/1 hits, Clopper–Pearson bounds — the method
before the expected hits). Printed per cell: share of runs certifying a violation (the
false-violation rate at 1×), its 95 % Clopper–Pearson interval, median datasets per value,
median CPU time per run (process time, all threads) and the CPU ratio to the baseline;
every certified bound is checked to lie below the exact δ. ``--out`` appends one JSON
record per cell.

``--early-stop`` runs both with ``early_stop=True`` (``distpriv verify``'s default).

Run: ``python -m benchmarks.bench_verify_power [--runs R] [--max-samples N] [--early-stop]
[--settings gaussian,lattice] [--levels 1,3,5] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import time
import warnings

import numpy as np

from distpriv import GaussianQueryModel, Noise, calibrate, gaussian_pair_delta
from distpriv.attacks import clopper_pearson, verify_sequential, verify_stream

EPS, TARGET = 1.0, 1e-3


# --- Gaussian model ------------------------------------------------------------------

G_MEANS = np.array([[0.0, 0.0, 0.0], [1.0, -0.6, 0.4]])
G_COVS = np.array(
    [
        [[1.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 1.0]],
        [[1.2, 0.25, 0.1], [0.25, 0.9, 0.2], [0.1, 0.2, 1.1]],
    ]
)


def gaussian_exact(noise_cov: np.ndarray) -> float:
    return max(
        float(
            gaussian_pair_delta(
                G_MEANS[a], G_COVS[a] + noise_cov, G_MEANS[b], G_COVS[b] + noise_cov, epsilon=EPS
            )
        )
        for a, b in ((0, 1), (1, 0))
    )


def scaled(mech, c: float):
    """The mechanism with its noise covariance multiplied by c (same shape)."""
    vals, vecs = np.linalg.eigh(mech.noise_covariance)
    noise = Noise.along("gaussian", vecs, np.sqrt(np.maximum(vals, 0.0) * c))
    return dataclasses.replace(mech, name=f"{mech.name} x{c:.3g}", noise=noise)


def bisect(fn, target: float, lo: float, hi: float, increasing: bool, steps: int = 60) -> float:
    for _ in range(steps):
        mid = math.sqrt(lo * hi)
        if (fn(mid) < target) == increasing:
            lo = mid
        else:
            hi = mid
    return math.sqrt(lo * hi)


def gaussian_case(level: float):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        good = calibrate("expm-g", GaussianQueryModel(G_MEANS, G_COVS), epsilon=EPS, delta=TARGET)
    if level <= 1:
        mech = good
    else:
        c = bisect(
            lambda c: gaussian_exact(c * good.noise_covariance), level * TARGET, 1e-4, 1.0, False
        )
        mech = scaled(good, c)

    def draw(n: int, g: np.random.Generator) -> list[np.ndarray]:
        return [g.multivariate_normal(G_MEANS[k], G_COVS[k], n, method="eigh") for k in (0, 1)]

    return mech, draw, gaussian_exact(mech.noise_covariance)


# --- Lattice (multinomial) model -------------------------------------------------------

N_ROWS = 50
CATS = np.array([(a, b, x) for a in (0, 1) for b in (0, 1) for x in (0, 1, 2)])


def row_probs(t: float) -> np.ndarray:
    w = np.exp(t * CATS[:, 0] - t * CATS[:, 1] + t * CATS[:, 2] + 0.3 * CATS[:, 0] * CATS[:, 2])
    return w / w.sum()


def lattice_pmf(p: np.ndarray) -> np.ndarray:
    """P(Σa, Σb, Σx) over N_ROWS i.i.d. rows, shape (n+1, n+1, 2n+1), by convolution."""
    n = N_ROWS
    g = np.zeros((n + 1, n + 1, 2 * n + 1))
    g[0, 0, 0] = 1.0
    for _ in range(n):
        h = np.zeros_like(g)
        for (a, b, x), pc in zip(CATS, p, strict=True):
            h[a:, b:, x:] += pc * g[: n + 1 - a, : n + 1 - b, : 2 * n + 1 - x]
        g = h
    return g


_PMF0: list[np.ndarray] = []


def lattice_exact(t: float) -> float:
    if not _PMF0:
        _PMF0.append(lattice_pmf(row_probs(0.0)))
    g0, g1 = _PMF0[0], lattice_pmf(row_probs(t))
    e = math.exp(EPS)
    return max(float(np.sum(np.maximum(0, g0 - e * g1))), float(np.sum(np.maximum(0, g1 - e * g0))))


def lattice_moments(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    v = CATS * np.array([1.0, 1.0, 1.0 / N_ROWS])
    mu = p @ v
    c = (v - mu).T @ ((v - mu) * p[:, None])
    return N_ROWS * mu, N_ROWS * c


def lattice_draw(p: np.ndarray, n: int, g: np.random.Generator) -> np.ndarray:
    s = g.multinomial(N_ROWS, p, size=n).astype(float) @ CATS
    return np.column_stack([s[:, 0], s[:, 1], s[:, 2] / N_ROWS])


def lattice_case(level: float):
    want = 0.5 * TARGET if level <= 1 else level * TARGET
    # 16 halvings of log(t) on [0.01, 0.2]: t within 0.005 %; the exact delta is printed
    t = bisect(lattice_exact, want, 0.01, 0.2, True, steps=16) if level > 0 else 0.0
    p0, p1 = row_probs(0.0), row_probs(t)
    (m0, c0), (m1, c1) = lattice_moments(p0), lattice_moments(p1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mech = calibrate(
            "daum",
            GaussianQueryModel(np.stack([m0, m1]), np.stack([c0, c1])),
            epsilon=EPS,
            delta=TARGET,
        )

    def draw(n: int, g: np.random.Generator) -> list[np.ndarray]:
        return [lattice_draw(p0, n, g), lattice_draw(p1, n, g)]

    return mech, draw, lattice_exact(t)


CASES = {"gaussian": gaussian_case, "lattice": lattice_case}


def _runs(case, args, expected: bool) -> dict:
    """R sequential checks of one cell, with or without the expected-hit test."""
    mech, draw, exact, _ = case
    verify_stream.EXPECTED_HITS = expected
    hits, times, ns, lowers = 0, [], [], []
    try:
        for r in range(args.runs):
            t0 = time.process_time()
            chk = verify_sequential(
                draw,
                mech,
                rng=1000 + r,
                first=args.first,
                max_samples=args.max_samples,
                max_seconds=args.seconds,
                early_stop=args.early_stop,
            )
            times.append(time.process_time() - t0)
            ns.append(chk.n_samples)
            lowers.append(chk.delta_lower)
            hits += chk.verdict == "violation"
            if args.verbose:
                print(
                    f"  {'expected' if expected else 'counted '} run {r}: {chk.verdict}, "
                    f"lower {chk.delta_lower:.3g}, estimate {chk.delta_estimate:.3g}, n "
                    f"{chk.n_samples}, {[p.selected for p in chk.per_pair]}, CPU "
                    f"{times[-1]:.1f} s",
                    flush=True,
                )
            # certified means certified: the bound must sit below the truth
            assert chk.verdict != "violation" or chk.delta_lower <= exact * (1 + 1e-9), chk
    finally:
        verify_stream.EXPECTED_HITS = True
    lo = clopper_pearson(hits, args.runs, 0.975, "lower")
    hi = clopper_pearson(hits, args.runs, 0.975, "upper")
    return {
        "certified": hits,
        "runs": args.runs,
        "share": hits / args.runs,
        "share_interval": [lo, hi],
        "median_n": int(np.median(ns)),
        "cpu_median": float(np.median(times)),
        "cpu_max": float(max(times)),
        "lower_max": float(max(lowers)),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--max-samples", type=int, default=160_000)
    ap.add_argument("--first", type=int, default=20_000)
    ap.add_argument("--seconds", type=float, default=None)
    ap.add_argument("--settings", default="gaussian,lattice")
    ap.add_argument("--levels", default="1,3,5")
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--out", default=None, help="append one JSON record per cell here")
    ap.add_argument(
        "--early-stop",
        action="store_true",
        help="stop after the first look unless it is suspicious (distpriv verify's default)",
    )
    ap.add_argument("--verbose", action="store_true", help="one line per run")
    args = ap.parse_args()
    print(
        f"eps={EPS}, target delta={TARGET}; sequential: first {args.first}, budget "
        f"{args.max_samples} datasets per value, time budget {args.seconds} s, early stop "
        f"{args.early_stop}; {args.runs} runs per cell; baseline: counted sets only"
    )
    print(
        "setting   level  exact delta | expected hits: certified [95% CI]  median n  CPU s "
        "median (max) | counted only: certified  median n  CPU s median | CPU ratio"
    )
    for name in args.settings.split(","):
        for level in (float(x) for x in args.levels.split(",")):
            mech, draw, exact = CASES[name](level)
            case = (mech, draw, exact, level)
            new = _runs(case, args, True)
            base = None if args.no_baseline else _runs(case, args, False)
            kind = "false" if level <= 1 else "power"
            b = (
                "n/a"
                if base is None
                else f"{base['share']:5.0%}  {base['median_n']:7d}  {base['cpu_median']:6.2f}"
            )
            ratio = "n/a" if base is None else f"{new['cpu_median'] / base['cpu_median']:.3f}"
            print(
                f"{name:9s} {level:4g}x  {exact:10.3g} | {kind} {new['share']:5.0%} "
                f"[{new['share_interval'][0]:.2f}, {new['share_interval'][1]:.2f}]  "
                f"{new['median_n']:7d}  {new['cpu_median']:6.2f} ({new['cpu_max']:.1f}) | {b} | "
                f"{ratio}",
                flush=True,
            )
            if args.out:
                record = {
                    "benchmark": "bench_verify_power",
                    "setting": name,
                    "level": level,
                    "exact_delta": exact,
                    "target_delta": TARGET,
                    "epsilon": EPS,
                    "first": args.first,
                    "max_samples": args.max_samples,
                    "early_stop": args.early_stop,
                    "expected_hits": new,
                    "counted_only": base,
                }
                with open(args.out, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
