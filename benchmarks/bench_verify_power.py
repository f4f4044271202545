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
verify_sequential`: 20,000 datasets per value at the first look, doubling up to the sample
budget) and of the fixed-size check at 20,000 datasets per value (:func:`verify_on_data`,
what ``release --verify`` ran before), in the same run; printed: share of runs certifying a
violation, median and largest CPU time per run (process time, all threads: on an idle
2-core machine the wall-clock time is at least half of it) and wall-clock time, and the
ratio of CPU times. The time budget is off by default (``--seconds``) so that the shares
measure the method, not the machine's load; the CPU times say whether a run fits in five
minutes on two cores.

``--early-stop`` runs the sequential check with ``early_stop=True`` (``distpriv verify``'s
default: stop after the first look unless it is inconclusive or a
lattice decoder applies); with the same seeds, its first look is the one of the run
without it, so the two runs differ only by the stopping rule.

Run: ``python -m benchmarks.bench_verify_power [--runs R] [--max-samples N] [--early-stop]
[--settings gaussian,lattice] [--levels 1,3,5,10]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time
import warnings

import numpy as np

from distpriv import GaussianQueryModel, Noise, SampledQueryModel, calibrate, gaussian_pair_delta
from distpriv.attacks import verify_on_data, verify_sequential

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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--max-samples", type=int, default=320_000)
    ap.add_argument("--first", type=int, default=20_000)
    ap.add_argument("--seconds", type=float, default=None)
    ap.add_argument("--settings", default="gaussian,lattice")
    ap.add_argument("--levels", default="1,3,5,10")
    ap.add_argument("--no-baseline", action="store_true")
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
        f"{args.early_stop}; fixed: 20,000 per "
        f"value; {args.runs} runs each"
    )
    print(
        "setting   level  exact delta  | sequential: share  CPU s median (max)  wall s median  "
        "median n | fixed 20k: share  CPU s median | CPU ratio"
    )
    for name in args.settings.split(","):
        for level in (float(x) for x in args.levels.split(",")):
            mech, draw, exact = CASES[name](level)
            hits, times, walls, ns, base_hits, base_times = 0, [], [], [], 0, []
            for r in range(args.runs):
                t0, w0 = time.process_time(), time.perf_counter()
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
                walls.append(time.perf_counter() - w0)
                ns.append(chk.n_samples)
                hits += chk.verdict == "violation"
                if args.verbose:
                    print(
                        f"  run {r}: {chk.verdict}, lower {chk.delta_lower:.3g}, estimate "
                        f"{chk.delta_estimate:.3g}, n {chk.n_samples}, looks {chk.looks}/"
                        f"{chk.max_looks} ({chk.stopped}), CPU {times[-1]:.1f} s, wall "
                        f"{walls[-1]:.1f} s",
                        flush=True,
                    )
                if chk.verdict == "violation":
                    # certified means certified: the bound must sit below the truth
                    assert chk.delta_lower <= exact * (1 + 1e-9) or level <= 1, chk
                if not args.no_baseline:
                    g = np.random.default_rng(5000 + r)
                    t0 = time.process_time()
                    fixed = verify_on_data(
                        SampledQueryModel(draw(20_000, g)), mech, rng=g, null_control=False
                    )
                    base_times.append(time.process_time() - t0)
                    base_hits += fixed.verdict == "violation"
            kind = "false-violation rate" if level <= 1 else "certified"
            base = (
                "n/a"
                if args.no_baseline
                else f"{base_hits / args.runs:6.0%}  {np.median(base_times):6.1f}"
            )
            ratio = "n/a" if args.no_baseline else f"{np.median(times) / np.median(base_times):.1f}"
            print(
                f"{name:9s} {level:4g}x  {exact:10.3g}  | {kind} {hits / args.runs:6.0%}  "
                f"{np.median(times):6.1f} ({max(times):.0f})  {np.median(walls):6.1f}  "
                f"{int(np.median(ns)):7d} | {base} | {ratio}",
                flush=True,
            )


if __name__ == "__main__":
    main()
