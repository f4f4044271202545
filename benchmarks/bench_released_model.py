"""The attack audit on a released logistic regression.

Chen & Ohrimenko 2023's motivating case (property inference on released models): the
released statistics are the coefficients of a logistic regression trained on a 100-row
subset of Adult (who is a woman, from age, years of schooling and weekly hours; the income
column is not an input — the share of high earners leaks through its correlates), and the
secret is the share of high earners in the subset, 0.45 vs 0.55.

The model of the coefficients is a Monte Carlo model built from the paper's modelling split
(a sample of the population: ``population=False``), with its stratified-bootstrap
population layer (:mod:`distpriv.modeling.bootstrap`); the noise is the default exact
calibration of ``expm-g`` at ε = 1, δ = 1e-3, β = 0.05 on the layer's confidence set.
Printed:

* the audit (:func:`distpriv.attacks.audit`; shadow data from the auxiliary split, test
  datasets from the test split): the best attack's accuracy with its 95 % Clopper–Pearson
  interval on the undefended coefficients and on the defended release, and the claimed
  guarantee with its ε lower bound;
* the price of the bootstrap layer: E‖Z‖² with the layer (β = 0.05) against the fitted
  model alone (β = none), and the time of the model with and without the bootstrap
  (ours vs the baseline in the same run).

Run: ``python -m benchmarks.bench_released_model [--repetitions 10] [--n-samples 1000]
[--bootstrap 50]`` (about a minute on a quiet 2-core machine).
"""

from __future__ import annotations

import argparse
import time
import warnings

import distpriv as dp
from distpriv.attacks import audit
from distpriv.datasets.adult import paper_split
from distpriv.modeling import ProportionSecret, model_query
from distpriv.modeling.regression import logistic_regression_query

QUERY = logistic_regression_query("sex = 'Female'", ["age", "education_num", "hours_per_week"])
SECRET = ProportionSecret("income = '>50K'", values=[0.45, 0.55])
EPS, DELTA, BETA = 1.0, 1e-3, 0.05


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repetitions", type=int, default=10)
    ap.add_argument("--n-samples", type=int, default=1000)
    ap.add_argument("--bootstrap", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    parts = paper_split(rng=args.seed)
    warnings.simplefilter("ignore")
    t0 = time.process_time()
    model_query(
        parts["modeling"],
        QUERY,
        SECRET,
        subset_size=100,
        method="montecarlo",
        n_samples=args.n_samples,
        rng=args.seed,
        bootstrap=None,
    )
    t_plain = time.process_time() - t0
    t0 = time.process_time()
    model = model_query(
        parts["modeling"],
        QUERY,
        SECRET,
        subset_size=100,
        method="montecarlo",
        n_samples=args.n_samples,
        rng=args.seed,
        bootstrap=args.bootstrap,
    )
    t_boot = time.process_time() - t0
    defended = dp.calibrate("expm-g", model, epsilon=EPS, delta=DELTA, beta=BETA)
    fitted = dp.calibrate("expm-g", model, epsilon=EPS, delta=DELTA, beta=None)
    print(f"statistics: {', '.join(QUERY.names)} of {QUERY.statistics[0].expression[:-6]}")
    print(
        f"model: {args.n_samples} draws per value; CPU {t_plain:.2f} s without the bootstrap, "
        f"{t_boot:.2f} s with B = {args.bootstrap} (ratio {t_boot / t_plain:.1f})"
    )
    print(
        f"noise E||Z||^2: {defended.noise.mse():.4g} with the bootstrap layer (beta = {BETA}), "
        f"{fitted.noise.mse():.4g} on the fitted model alone (price x"
        f"{defended.noise.mse() / fitted.noise.mse():.3g})"
    )
    report = audit(
        auxiliary=parts["auxiliary"],
        test=parts["test"],
        query=QUERY,
        secret=SECRET,
        subset_size=100,
        mechanisms=["none", defended],
        model=model,
        repetitions=args.repetitions,
        rng=args.seed,
    )
    for m in report.mechanisms:
        best = max(m.attacks, key=lambda a: a.accuracy)
        lo, hi = best.interval
        claim = "none" if m.mechanism == "none" else f"({m.epsilon:g}, {m.delta:g})"
        print(
            f"{m.mechanism:8s} claim {claim:14s} best attack {best.attack:28s} accuracy "
            f"{best.accuracy:.3f} [{lo:.3f}, {hi:.3f}]  epsilon lower bound "
            f"{m.epsilon_lower:.3g}  verdict {m.verdict}"
        )
    print("guarantee:", defended.guarantee.premises[-1].statement)


if __name__ == "__main__":
    main()
