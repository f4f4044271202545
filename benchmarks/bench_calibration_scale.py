"""Benchmark: calibration time against the number of statistics m, per mechanism.

Usage::

    python -m benchmarks.bench_calibration_scale [--sizes 5 20 50 100 200 500]
                                                 [--old-max 50] [--repeats 1] [--auto-max 100]

Setting: synthetic query models with two hypotheses (one pair of Ψ, as a
secret with two values), m statistics, unequal covariances (a shared random covariance
with condition number 20 plus a per-hypothesis perturbation) and a mean difference with
Mahalanobis distance about 4 D*(1, 1e-3), so that every mechanism must add noise.
Every mechanism is calibrated with the default ``calibration="exact"`` at (ε, δ) =
(1, 1e-3): the papers' calibration gives the noise shape, the exact accountant
(:func:`distpriv.gaussian_pair_delta`) the verified scale. ``auto`` runs every candidate.

Baseline, measured in the same run: **old optimal-g**, the same code path with the
convex program solved by the generic solver (cvxpy/Clarabel on p LMIs of size m + 1),
as optimal-g did before the structured solver — obtained by raising
``distpriv.central.optimal._GENERIC_MAX_DIM`` above m. It is run only for m ≤ ``--old-max``
(it takes minutes beyond m = 50). Printed: the median wall time per (mechanism, m), the
ratio optimal-g / expm-g, and old / new optimal-g with both E‖Z‖² (the new one must not
be noisier beyond the solver tolerance; exit status 1 if it is by more than 1e-5
relative). A second line per m gives the CPU time of the process, which a shared machine
does not inflate as it does the wall time.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
import warnings
from functools import partial

import numpy as np

MECHANISMS = ("expm-g", "eigm", "daum", "dirm-g", "apgm", "optimal-g")
EPSILON, DELTA = 1.0, 1e-3


def synthetic(m: int, seed: int = 0):
    """Two hypotheses, unequal covariances, Mahalanobis distance ≈ 4 D*."""
    from distpriv import GaussianQueryModel, max_mahalanobis_distance

    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(m, m)))
    base = (q * np.geomspace(1.0, 20.0, m)) @ q.T
    covs = []
    for _ in range(2):
        e = rng.normal(size=(m, m)) * 0.1
        covs.append(base + e @ e.T / m * 5)
    d = rng.normal(size=m)
    d *= (
        4.0
        * max_mahalanobis_distance(epsilon=EPSILON, delta=DELTA)
        / math.sqrt(d @ np.linalg.solve(base, d))
    )
    mu = rng.normal(size=m) * 10
    return GaussianQueryModel(np.stack([mu, mu + d]), np.array(covs), labels=[0.45, 0.55])


CPU: dict[tuple[str, int], float] = {}


def timed(fn, repeats: int, key: tuple[str, int] | None = None):
    """Median wall time of ``fn`` (and its median CPU time, kept in CPU under ``key``)."""
    out, times, cpu = None, [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    if key is not None:
        CPU[key] = statistics.median(cpu)
    return statistics.median(times), out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[5, 20, 50, 100, 200, 500])
    ap.add_argument("--old-max", type=int, default=50)
    ap.add_argument("--auto-max", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()

    import distpriv.central.optimal as optimal
    from distpriv import calibrate
    from distpriv.pipeline.stages.calibrate import choose_mechanism

    warnings.simplefilter("ignore")
    calibrate("optimal-g", synthetic(5), epsilon=EPSILON, delta=DELTA)  # imports, cvxpy
    new_max = optimal._GENERIC_MAX_DIM
    cols = [*MECHANISMS, "auto", "old optimal-g"]
    print(f"{'m':>5} " + " ".join(f"{c:>13}" for c in cols) + "   opt/expm  old/new  mse new/old")
    failed = False
    for m in args.sizes:
        model = synthetic(m)
        row, mse = {}, {}
        for name in MECHANISMS:
            try:
                t, mech = timed(
                    partial(calibrate, name, model, epsilon=EPSILON, delta=DELTA),
                    args.repeats,
                    (name, m),
                )
                row[name], mse[name] = t, mech.mse()
            except Exception as exc:  # a mechanism may not apply: print why
                row[name] = float("nan")
                print(f"  {name} at m={m}: {type(exc).__name__}: {exc}", file=sys.stderr)
        if m <= args.auto_max:
            row["auto"], _ = timed(
                partial(choose_mechanism, model, epsilon=EPSILON, delta=DELTA),
                args.repeats,
                ("auto", m),
            )
        if m <= args.old_max:
            optimal._GENERIC_MAX_DIM = 10**9
            try:
                row["old optimal-g"], old = timed(
                    partial(calibrate, "optimal-g", model, epsilon=EPSILON, delta=DELTA),
                    args.repeats,
                    ("old optimal-g", m),
                )
                mse["old"] = old.mse()
            finally:
                optimal._GENERIC_MAX_DIM = new_max
        cells = " ".join(
            f"{row[c]:>12.3f}s" if c in row and math.isfinite(row[c]) else f"{'-':>13}"
            for c in cols
        )
        ratio = row["optimal-g"] / row["expm-g"]
        old_new = (
            f"{row['old optimal-g'] / row['optimal-g']:>8.2f}" if "old" in mse else f"{'-':>8}"
        )
        mse_ratio = f"{mse['optimal-g'] / mse['old']:>12.8f}" if "old" in mse else f"{'-':>12}"
        print(f"{m:>5} {cells}   {ratio:>8.2f} {old_new} {mse_ratio}", flush=True)
        # CPU seconds of this process (the machine may be shared: wall time then inflates).
        cpu = " ".join(f"{CPU[(c, m)]:>12.3f}s" if (c, m) in CPU else f"{'-':>13}" for c in cols)
        print(f"{'cpu':>5} {cpu}", flush=True)
        if "old" in mse and mse["optimal-g"] > mse["old"] * (1 + 1e-5):
            failed = True
            print(f"  FAIL: new optimal-g noisier than old at m={m}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
