"""optimal-g and optimal-g-full on Monte Carlo models of non-linear statistics.

A Monte Carlo model's covariances differ in every direction (they are estimated from
draws), and optimal-g used to return expm-g's isotropic noise on it under its own name
(the calibration's candidates included that shape, and it won). Now its candidates on such
a model are the program's noise with a repair shaped by the model's sampled covariance,
that covariance alone, or (under ``relative``) the sampled variances' diagonal — never
expm-g's shape — each certified by the exact accountant; the result names its shape.
"""

from __future__ import annotations

import numpy as np
import pytest

import distpriv as dp
from distpriv.central.montecarlo_shapes import (
    EXPM_SHAPE,
    is_monte_carlo,
    monte_carlo_families,
)
from distpriv.datasets.adult import load_adult
from distpriv.modeling import ProportionSecret, model_query
from distpriv.modeling.regression import logistic_regression_query
from distpriv.pipeline.stages.calibrate import choose_for_table
from support import quiet, worst_pair_delta

EPS, DELTA = 1.0, 1e-3
SECRET = ProportionSecret("income = '>50K'", values=[0.45, 0.55])


@pytest.fixture(scope="module")
def sample():
    frame = load_adult()
    rng = np.random.default_rng(3)
    return frame.iloc[rng.choice(len(frame), 1500, replace=False)]


@pytest.fixture(scope="module")
def logistic(sample):
    """A released logistic regression's four coefficients (units 0.02 to 1.6)."""
    q = logistic_regression_query("sex = 'Female'", ["age", "education_num", "hours_per_week"])
    return quiet(
        model_query,
        sample,
        q,
        SECRET,
        subset_size=100,
        method="montecarlo",
        n_samples=200,
        rng=4,
        bootstrap=20,
    )


def _is_isotropic(cov):
    return np.allclose(cov, cov[0, 0] * np.eye(cov.shape[0]), rtol=1e-9, atol=0.0)


@pytest.mark.parametrize("objective", ["l2", "relative"])
@pytest.mark.parametrize("beta", [None, 0.05])
def test_optimal_g_does_not_return_expm_g_shape_on_a_monte_carlo_model(logistic, objective, beta):
    mech = quiet(
        dp.calibrate,
        "optimal-g",
        logistic,
        epsilon=EPS,
        delta=DELTA,
        beta=beta,
        objective=objective,
    )
    method = mech.diagnostics["calibration_method"]
    cov = mech.noise_covariance
    # Before: "isotropic noise (expm-g's shape)", with σ²I under l2 (expm-g's noise).
    assert "expm-g" not in method
    assert not _is_isotropic(cov)
    if objective == "relative":
        # Not diag(v) under an expm-g name either: whatever won is named for what it is.
        assert "isotropic" not in method or "repair" in method
    if beta is None:
        assert worst_pair_delta(logistic, cov, epsilon=EPS) <= DELTA * (1 + 1e-6)


def test_the_sampled_covariance_shape_is_a_candidate_and_expm_g_is_not():
    m = 3
    base = np.diag([1.0, 0.0, 0.0])
    sampled = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.0], [0.0, 0.0, 3.0]])
    iso = (EXPM_SHAPE, (lambda s: s * s * np.eye(m)), 1.0)
    other = ("convex program's noise plus isotropic repair", (lambda s: base + s * s), 1.0)
    labels = [f[0] for f in monte_carlo_families([other, iso], base, sampled, np.eye(m))]
    assert EXPM_SHAPE not in labels and other[0] in labels
    fams = monte_carlo_families([other, iso], base, sampled, np.eye(m))
    np.testing.assert_allclose(fams[1][1](2.0), 4.0 * sampled)
    np.testing.assert_allclose(fams[0][1](1.0), base + sampled)
    # Under a weighted objective the isotropic shape is the sampled variances': kept, renamed.
    w = np.diag(1.0 / np.diag(sampled))
    kept = [f[0] for f in monte_carlo_families([other, iso], base, sampled, w)]
    assert EXPM_SHAPE not in kept
    assert any("sampled variances" in label for label in kept)


def test_only_monte_carlo_models_of_non_linear_statistics_are_marked(sample, logistic):
    assert is_monte_carlo(logistic, logistic)
    linear = quiet(
        model_query, sample, {"avg_age": "avg(age)"}, SECRET, subset_size=100, method="analytic"
    )
    assert not is_monte_carlo(linear, linear)
    given = dp.GaussianQueryModel([[0.0, 0.0], [1.0, 0.5]], np.eye(2))
    assert not is_monte_carlo(given, given)
    # The population's own Monte Carlo model (no bootstrap layer) is one too.
    q = {"median_age": "median(age)", "q75": "quantile_cont(hours_per_week, 0.75)"}
    pop = quiet(
        model_query,
        sample,
        q,
        SECRET,
        subset_size=100,
        method="montecarlo",
        n_samples=100,
        rng=1,
        population=True,
    )
    assert pop.uncertainty is None and is_monte_carlo(pop, pop)


def test_analytic_models_keep_expm_g_shape_among_optimal_g_candidates():
    # Independent statistics with unequal covariances in every direction: every direction
    # needs noise and the isotropic shape is optimal-g's answer on a Gaussian model given
    # directly (unchanged: the Monte Carlo branch does not reach it).
    model = dp.GaussianQueryModel(
        [[0.0, 0.0, 0.0], [0.3, 0.3, 0.3]],
        [np.diag([1.0, 1.0, 1.0]), np.diag([1.3, 1.3, 1.3])],
    )
    mech = quiet(dp.calibrate, "optimal-g", model, epsilon=EPS, delta=DELTA, objective="l2")
    assert "sampled covariance" not in mech.diagnostics["calibration_method"]


@pytest.mark.parametrize("objective", ["l2", "relative"])
def test_auto_on_a_monte_carlo_model_never_runs_optimal_g_full_as_expm_g(logistic, objective):
    choice = quiet(
        choose_for_table, logistic, epsilon=EPS, delta=DELTA, options={"objective": objective}
    )
    rows = {c.mechanism: c for c in choice.candidates}
    for name in ("optimal-g", "optimal-g-full"):
        c = rows[name]
        if c.calibrated is None:
            assert c.reason  # refused or pruned: says why
            continue
        diag = c.calibrated.diagnostics
        for key in ("calibration_method", "main_shape"):
            assert "expm-g" not in str(diag.get(key, ""))
        assert not _is_isotropic(c.calibrated.noise_covariance)
