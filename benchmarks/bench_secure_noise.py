"""Benchmark: a secure release of a 5-statistic vector with correlated Gaussian noise.

Ours: ``CalibratedMechanism.release(value)`` with ``rng=None`` — the secure sampler
(:func:`distpriv.noise.secure_add`: whiten, OpenDP discrete Gaussian on a 2^-40 grid from
OS entropy, map back). Baseline, in the same run: the numpy simulation sampler,
``release(value, rng=generator)`` (float draws from PCG64; not private).

Cases: one release of a (5,) vector (median and best over repeats, after warm-up; the
OpenDP measurement for each size is built once and cached), and a batch of releases in one
call (time per release). The mechanism is EigM calibrated on a five-statistic model with six
hypotheses, so its noise covariance is full rank with unequal scales along a rotated basis.

Run: ``python -m benchmarks.bench_secure_noise [--seed N] [--repeats N] [--batch N]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings

import numpy as np

from distpriv import AssumptionWarning, GaussianQueryModel, calibrate


def make_mechanism(rng: np.random.Generator, m: int = 5, k: int = 6):
    a = rng.normal(size=(m, m))
    cov = a @ a.T + np.eye(m)
    means = 10 * rng.normal(size=m) + rng.normal(size=(k, m))
    model = GaussianQueryModel(means, cov)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AssumptionWarning)
        return calibrate("eigm", model, epsilon=1.0, delta=1e-3), means[0]


def per_call(fn, repeats: int) -> tuple[float, float]:
    """(median, best) seconds per call of ``fn`` over ``repeats`` calls."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--batch", type=int, default=2_000)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    mech, value = make_mechanism(rng)
    rank = np.linalg.matrix_rank(mech.noise_covariance)
    sim = np.random.default_rng(args.seed)

    # Warm-up: builds and caches the OpenDP measurements for both sizes.
    batch = np.tile(value, (args.batch, 1))
    mech.release(value)
    mech.release(batch)

    single_secure = per_call(lambda: mech.release(value), args.repeats)
    single_numpy = per_call(lambda: mech.release(value, rng=sim), args.repeats)
    reps = max(3, args.repeats // 100)
    batch_secure = per_call(lambda: mech.release(batch), reps)
    batch_numpy = per_call(lambda: mech.release(batch, rng=sim), reps)

    # Sanity: the secure batch has the calibrated covariance (within 4 standard errors of
    # each entry's sample covariance, a loose check; tests/test_noise_secure.py is strict).
    out = mech.release(batch).value - value
    cov = mech.noise_covariance
    se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov**2) / args.batch)
    if np.max(np.abs(out.T @ out / args.batch - cov) / se) > 6:
        print("secure releases do not have the calibrated covariance", file=sys.stderr)
        return 1

    print(f"eigm, m = 5, noise rank {rank}; sampler: {mech.release(value).sampler}")
    print(f"{'case (time per release)':<34} {'secure':>12} {'numpy':>12} {'ratio':>8}")
    rows = [
        ("single (5,), median", single_secure[0], single_numpy[0]),
        ("single (5,), best", single_secure[1], single_numpy[1]),
        (
            f"batch ({args.batch}, 5), median",
            *(t[0] / args.batch for t in (batch_secure, batch_numpy)),
        ),
    ]
    for name, ours, base in rows:
        print(f"{name:<34} {ours * 1e6:>9.1f} us {base * 1e6:>9.2f} us {ours / base:>7.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
