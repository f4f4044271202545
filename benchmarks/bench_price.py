"""Benchmark: the price of the population premise against the oracle (issue 25).

For Adult (income share 0.45 vs 0.55, five statistics) and the RAND health insurance
experiment (statsmodels' ``randhie``; individual deductible 0.2 vs 0.3, five statistics,
two continuous), subsets of 100 rows, ε = 1, δ = 1e-3, β = 0.05, and modelling tables of
300, 1,000 and 4,000 rows (seeded), per mechanism:

* **default**: median E‖Z‖² of the default calibration (population set at β);
* **oracle**: on each table, the same mechanism calibrated on the fitted moments with no
  population layer, and the least factor f on that noise that makes the true δ(1) on the
  population's own model (the whole table declared the population) meet the claim; the
  oracle is median E‖Z‖² × the 95 % quantile of f (infinite for noise that is not of full
  rank and cannot be scaled to cover). It needs the population: a yardstick, not a method;
* **own**: the default calibration on the population's own model (knowing the population);
* the share of tables whose true δ(1) exceeds the claim.

Printed: default / oracle (per mechanism, and against the least oracle over mechanisms)
and default / own. "Before" is a run of the same script on the previous code
(``PYTHONPATH=<old checkout>/src``): the script uses whatever ``distpriv`` is importable
first, or this checkout's ``src`` when none is.

Run: ``python benchmarks/bench_price.py [--tables N] [--mechanisms expm-g,eigm]``
(≥ 100 tables for the oracle; about 2 minutes per population and size for expm-g and eigm
on a quiet 2-core machine).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

try:
    import distpriv  # noqa: F401  (an explicitly chosen checkout, e.g. the old code)
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from distpriv import calibrate
from distpriv.accounting import gaussian_pair_delta
from distpriv.datasets.adult import load_adult
from distpriv.errors import DistPrivError
from distpriv.modeling import ProportionSecret, model_query

EPS, DELTA = 1.0, 1e-3
SIZES = (300, 1000, 4000)
POPULATIONS = {
    "adult": (
        {
            "avg_age": "avg(age)",
            "avg_education_years": "avg(education_num)",
            "n_never_married": "count_if(marital_status = 'Never-married')",
            "n_female": "count_if(sex = 'Female')",
            "avg_hours_per_week": "avg(hours_per_week)",
        },
        ProportionSecret("income = '>50K'", values=[0.45, 0.55]),
    ),
    "randhie": (
        {
            "avg_visits": "avg(mdvis)",
            "avg_disease": "avg(disea)",
            "n_poor_health": "count_if(hlthp = 1)",
            "n_limitation": "count_if(physlm > 0)",
            "n_free_care": "count_if(lncoins = 0)",
        },
        ProportionSecret("idp = 1", values=[0.2, 0.3]),
    ),
}


def load(name):
    if name == "adult":
        return load_adult()
    from statsmodels.datasets import randhie

    return randhie.load_pandas().data


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def true_delta(pop, noise):
    out = 0.0
    for i, j in pop.pairs:
        for a, b in ((i, j), (j, i)):
            ca, cb = pop.covariances[a] + noise, pop.covariances[b] + noise
            out = max(out, gaussian_pair_delta(pop.means[a], ca, pop.means[b], cb, epsilon=EPS))
    return out


def least_factor(pop, noise):
    """The least f with true δ(1) of f·noise ≤ δ (bisection; inf when none up to 1e5)."""
    if true_delta(pop, noise) <= DELTA:
        lo, hi = 0.0, 1.0
    else:
        lo, hi = 1.0, 2.0
        while true_delta(pop, noise * hi) > DELTA:
            lo, hi = hi, 2 * hi
            if hi > 1e5:
                return np.inf
    while hi - lo > 1e-4 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if true_delta(pop, noise * mid) > DELTA else (lo, mid)
    return hi


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", type=int, default=100)
    ap.add_argument("--mechanisms", default="expm-g,eigm")
    ap.add_argument("--populations", default="adult,randhie")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--seed", type=int, default=2025)
    ap.add_argument(
        "--no-oracle",
        action="store_true",
        help="only the default calibration (the oracle does not depend on the set: a run "
        "of the old code for 'before' needs only this)",
    )
    args = ap.parse_args()
    mechs = args.mechanisms.split(",")
    for pname in args.populations.split(","):
        stats, secret = POPULATIONS[pname]
        frame = load(pname)
        pop = quiet(
            model_query, frame, stats, secret, subset_size=100, method="analytic", population=True
        )
        own = {m: quiet(calibrate, m, pop, epsilon=EPS, delta=DELTA).mse() for m in mechs}
        rng = np.random.default_rng(args.seed)
        for size in map(int, args.sizes.split(",")):
            t0 = time.perf_counter()
            res = {m: {"mse": [], "viol": [], "fit": [], "f": []} for m in mechs}
            for _ in range(args.tables):
                sample = frame.iloc[rng.choice(len(frame), size, replace=False)]
                model = quiet(
                    model_query, sample, stats, secret, subset_size=100, method="analytic"
                )
                for m in mechs:
                    r = res[m]
                    try:
                        mech = quiet(calibrate, m, model, epsilon=EPS, delta=DELTA)
                        r["mse"].append(mech.mse())
                        r["viol"].append(true_delta(pop, mech.noise_covariance) > DELTA * 1.000001)
                    except DistPrivError:
                        r["mse"].append(np.inf)
                    if not args.no_oracle:
                        fit = quiet(calibrate, m, model, epsilon=EPS, delta=DELTA, beta=None)
                        r["fit"].append(fit.mse())
                        r["f"].append(least_factor(pop, fit.noise_covariance))
            oracles = {
                m: float(np.median(res[m]["fit"]) * np.quantile(res[m]["f"], 0.95))
                if not args.no_oracle
                else float("nan")
                for m in mechs
            }
            best = min(oracles.values()) if not args.no_oracle else float("nan")
            for m in mechs:
                r = res[m]
                med = float(np.median(r["mse"]))
                print(
                    f"{pname:8s} {size:5d} {m:10s} default {med:9.1f}  oracle {oracles[m]:9.1f}"
                    f"  default/oracle {med / oracles[m]:6.2f}  default/best-oracle "
                    f"{med / best:6.2f}  default/own {med / own[m]:6.2f}  violations "
                    f"{np.mean(r['viol']):.0%}",
                    flush=True,
                )
            print(f"  ({args.tables} tables, {time.perf_counter() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
