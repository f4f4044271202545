"""Benchmark: the price and the cost of calibrating for the population.

For modelling tables of 300, 1,000, 4,000 and 30,000 rows drawn from Adult (the standard
query: subset size 100, income share 0.45 vs 0.55, five statistics; ε = 1, δ = 1e-3), and
each Gaussian mechanism, in one run:

* **today's** calibration: the analytic model with the finite-population correction
  against the modelling table (``population=True``) and the exact calibration on its
  fitted moments;
* **robust**: the default model (``population=False``: no correction, moments with their
  uncertainty) and the default exact calibration at β = 0.05
  (:mod:`distpriv.population.confidence`).

Printed per size and mechanism (medians over the tables): E‖Z‖² of each and their ratio
(the price), the share of tables whose true δ(1) on the model of all of Adult (declared
the population) exceeds the claim, and the calibration times with their ratio (the cost).

Run: ``python -m benchmarks.bench_population [--tables N] [--seed N]`` (about 2 minutes
with the defaults on a quiet 2-core machine).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from distpriv import calibrate
from distpriv.accounting import gaussian_pair_delta
from distpriv.datasets.adult import load_adult
from distpriv.errors import AssumptionWarning, MechanismNotApplicableError
from distpriv.modeling import ProportionSecret, model_query

STATS = {
    "avg_age": "avg(age)",
    "avg_education_years": "avg(education_num)",
    "n_never_married": "count_if(marital_status = 'Never-married')",
    "n_female": "count_if(sex = 'Female')",
    "avg_hours_per_week": "avg(hours_per_week)",
}
SECRET = ProportionSecret("income = '>50K'", values=[0.45, 0.55])
MECHANISMS = ("expm-g", "dirm-g", "eigm", "daum", "optimal-g", "apgm")
SIZES = (300, 1000, 4000, 30000)
EPS, DELTA = 1.0, 1e-3


def model(frame, population):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AssumptionWarning)
        return model_query(
            frame, STATS, SECRET, subset_size=100, method="analytic", population=population
        )


def true_delta(pop, noise):
    (m0, m1), (c0, c1) = pop.means, pop.covariances
    return max(
        gaussian_pair_delta(m0, c0 + noise, m1, c1 + noise, epsilon=EPS),
        gaussian_pair_delta(m1, c1 + noise, m0, c0 + noise, epsilon=EPS),
    )


def timed(name, mod):
    t0 = time.perf_counter()
    try:
        mech = calibrate(name, mod, epsilon=EPS, delta=DELTA)
    except MechanismNotApplicableError:
        return None, time.perf_counter() - t0
    return mech, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", type=int, default=4, help="modelling tables per size")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    adult = load_adult()
    pop = model(adult, True)
    rng = np.random.default_rng(args.seed)
    print(
        f"Adult ({len(adult)} rows, declared the population); {args.tables} modelling tables "
        f"per size; eps={EPS:g}, delta={DELTA:g}, beta=0.05; medians over tables"
    )
    head = (
        f"{'rows':>6} {'mechanism':10} {'E|Z|^2 today':>13} {'robust':>10} {'price':>7} "
        f"{'viol. today':>11} {'robust':>7} {'t today':>8} {'t robust':>9} {'cost':>6}"
    )
    print(head)
    print("-" * len(head))
    for size in SIZES:
        samples = [
            adult.iloc[rng.choice(len(adult), size, replace=False)] for _ in range(args.tables)
        ]
        models = [(model(s, True), model(s, False)) for s in samples]
        for name in MECHANISMS:
            rows = []
            for old_model, new_model in models:
                old, t_old = timed(name, old_model)
                new, t_new = timed(name, new_model)
                rows.append((old, new, t_old, t_new))
            ok = [r for r in rows if r[0] is not None and r[1] is not None]
            skipped = len(rows) - len(ok)
            note = f"  ({skipped} table(s) n/a)" if skipped else ""
            if not ok:
                olds = sum(r[0] is not None for r in rows)
                print(
                    f"{size:>6} {name:10} not applicable (today: {olds}/{len(rows)} tables, "
                    f"robust: {sum(r[1] is not None for r in rows)}/{len(rows)})"
                )
                continue
            mse_old = np.median([r[0].mse() for r in ok])
            mse_new = np.median([r[1].mse() for r in ok])
            price = np.median([r[1].mse() / r[0].mse() for r in ok])
            v_old = np.mean([true_delta(pop, r[0].noise_covariance) > DELTA for r in ok])
            v_new = np.mean([true_delta(pop, r[1].noise_covariance) > DELTA for r in ok])
            t_old = np.median([r[2] for r in ok])
            t_new = np.median([r[3] for r in ok])
            print(
                f"{size:>6} {name:10} {mse_old:13.4g} {mse_new:10.4g} {price:7.3g} "
                f"{v_old:11.0%} {v_new:7.0%} {t_old:7.3f}s {t_new:8.3f}s {t_new / t_old:6.2f}"
                f"{note}"
            )


if __name__ == "__main__":
    main()
