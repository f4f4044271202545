"""Coverage of the bootstrap population layer of non-linear statistics.

As tests/central/test_population_coverage.py for linear statistics: modelling tables are
drawn at random from a real population, a Monte Carlo model of a non-linear query is built
on each (with its stratified bootstrap, :mod:`distpriv.modeling.bootstrap`), the noise is
calibrated on it by the default (exact, β = 0.05) calibration, and its true δ is computed
on the population's own model — a Monte Carlo model of 10,000 datasets per value drawn from
the whole population, with the exact accountant on its moments (independent of the set and
of the bootstrap). The share of tables whose true δ exceeds the claim must be at most β
within a binomial margin. Without the layer (``bootstrap=None``) the same tables violate
far more often: the test could fail.

Queries: a median and a quantile, and the coefficients of a logistic regression (the
released model of Chen & Ohrimenko 2023's motivating case), on Adult (secret: share of
high earners 0.45 vs 0.55) and on the RAND health insurance experiment (statsmodels'
``randhie``: share with an individual deductible 0.2 vs 0.3).
"""

from __future__ import annotations

import numpy as np
import pytest

import distpriv as dp
from distpriv.datasets.adult import load_adult
from distpriv.modeling import ProportionSecret, model_query
from distpriv.modeling.regression import logistic_regression_query
from support import load_randhie, quiet

# The reference δ and the binomial allowance of the linear layer's coverage test (same
# ε, δ and β).
from .test_population_coverage import allowed, true_delta

EPS, DELTA, BETA = 1.0, 1e-3, 0.05
ALLOWANCE = 1e-6
TABLES = 20
TABLE_ROWS = 1500
N_SAMPLES, RESAMPLES = 200, 20
POPULATION_DRAWS = 10_000


def setting(which: str, kind: str):
    if which == "adult":
        frame = load_adult()
        secret = ProportionSecret("income = '>50K'", values=[0.45, 0.55])
        if kind == "regression":
            # Who is a woman, from age, schooling and hours: high earners are older, more
            # schooled, work longer and are mostly men, so the fitted model carries the share
            # of high earners without the income column being an input.
            query = logistic_regression_query(
                "sex = 'Female'", ["age", "education_num", "hours_per_week"]
            )
        else:
            query = {
                "median_age": "median(age)",
                "q75_hours": "quantile_cont(hours_per_week, 0.75)",
            }
    else:
        frame = load_randhie()
        secret = ProportionSecret("idp = 1", values=[0.2, 0.3])
        if kind == "regression":
            query = logistic_regression_query("mdvis > 0", ["disea", "physlm", "hlthg"])
        else:
            query = {"median_lpi": "median(lpi)", "q75_disease": "quantile_cont(disea, 0.75)"}
    return frame, secret, query


def ratios(which: str, kind: str, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """true δ / claim per table: with the layer, without it (β = none), and the noise MSE
    ratio (layer / none)."""
    frame, secret, query = setting(which, kind)
    pop = quiet(
        model_query,
        frame,
        query,
        secret,
        subset_size=100,
        method="montecarlo",
        n_samples=POPULATION_DRAWS,
        rng=seed,
        population=True,
    )
    rng = np.random.default_rng(seed + 1)
    layer, none, price = [], [], []
    for _ in range(TABLES):
        sample = frame.iloc[rng.choice(len(frame), TABLE_ROWS, replace=False)]
        model = quiet(
            model_query,
            sample,
            query,
            secret,
            subset_size=100,
            method="montecarlo",
            n_samples=N_SAMPLES,
            rng=rng,
            bootstrap=RESAMPLES,
        )
        with_set = quiet(dp.calibrate, "expm-g", model, epsilon=EPS, delta=DELTA, beta=BETA)
        fitted = quiet(dp.calibrate, "expm-g", model, epsilon=EPS, delta=DELTA, beta=None)
        layer.append(true_delta(pop, with_set.noise_covariance) / DELTA)
        none.append(true_delta(pop, fitted.noise_covariance) / DELTA)
        price.append(with_set.noise.mse() / max(fitted.noise.mse(), 1e-300))
    return np.array(layer), np.array(none), np.array(price)


@pytest.mark.parametrize(
    ("which", "kind"),
    [
        ("adult", "regression"),
        ("adult", "quantiles"),
        ("randhie", "regression"),
        ("randhie", "quantiles"),
    ],
)
def test_bootstrap_layer_covers_the_population(which, kind):
    layer, none, price = ratios(which, kind, seed=27)
    bad, bad_none = int(np.sum(layer > 1 + ALLOWANCE)), int(np.sum(none > 1 + ALLOWANCE))
    print(
        f"\n{which} {kind}: {bad}/{layer.size} tables violate with the layer (largest true/claim "
        f"{layer.max():.3g}), {bad_none}/{none.size} without (largest {none.max():.3g}); "
        f"noise MSE ratio median {np.median(price):.3g}"
    )
    assert bad <= allowed(layer.size)
