"""A released model as the statistics: Query.logistic_regression.

The reference is scikit-learn's LogisticRegression (same objective, its own solvers):
the batched Newton fit must agree with it on real Adult subsets.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from distpriv.datasets.adult import load_adult
from distpriv.errors import ParameterError, ParameterTypeError
from distpriv.modeling import ProportionSecret, Query, as_table, model_query
from distpriv.modeling.regression import logistic_regression_query

FEATURES = ["age", "education_num", "hours_per_week"]
SECRET = ProportionSecret("income = '>50K'", values=[0.45, 0.55])


@pytest.fixture(scope="module")
def adult():
    return load_adult()


@pytest.mark.parametrize(("c", "solver"), [(1.0, "newton-cholesky"), (0.05, "lbfgs")])
def test_fit_matches_scikit_learn(adult, c, solver):
    sklearn = pytest.importorskip("sklearn.linear_model")
    q = logistic_regression_query("sex = 'Female'", FEATURES, C=c)
    rows = np.random.default_rng(4).integers(0, len(adult), (12, 100))
    ours = q.evaluate_subsets(as_table(adult), rows)
    x = adult[FEATURES].to_numpy(float)
    y = (adult["sex"] == "Female").to_numpy(int)
    for r in range(rows.shape[0]):
        fit = sklearn.LogisticRegression(C=c, solver=solver, tol=1e-12, max_iter=100_000)
        fit.fit(x[rows[r]], y[rows[r]])
        ref = np.r_[fit.coef_[0], fit.intercept_]
        np.testing.assert_allclose(ours[r], ref, rtol=1e-5, atol=1e-7)


def test_release_path_and_names(adult):
    q = logistic_regression_query("sex = 'Female'", FEATURES)
    assert q.names == ("coef_age", "coef_education_num", "coef_hours_per_week", "intercept")
    assert q.columns == {"sex", *FEATURES}
    assert not q.is_linear
    rows = np.arange(200, 300)
    batch = q.evaluate_subsets(as_table(adult), rows[None])[0]
    one = q.evaluate(adult.iloc[rows].reset_index(drop=True))
    np.testing.assert_allclose(one, batch, rtol=1e-12)
    assert "logistic_regression(sex = 'Female' ~ age" in q.to_dict()["intercept"]


def test_errors_name_the_statistic(adult):
    q = logistic_regression_query("sex = 'Female'", FEATURES)
    men = adult[adult["sex"] == "Male"].head(300)
    with pytest.raises(ParameterError, match=r"logistic_regression\(sex = 'Female'.*one class"):
        q.evaluate(men.head(100))
    with pytest.raises(ParameterError, match="C must be finite"):
        logistic_regression_query("sex = 'Female'", FEATURES, C=float("inf"))
    with pytest.raises(ParameterError, match="C"):
        logistic_regression_query("sex = 'Female'", FEATURES, C=0)
    with pytest.raises(ParameterTypeError, match="features"):
        logistic_regression_query("sex = 'Female'", "age")
    with pytest.raises(ParameterError, match="target age must be a predicate or 0/1"):
        logistic_regression_query("age", ["hours_per_week"]).evaluate(adult.head(50))
    with pytest.raises(ParameterError, match="nope"):
        model_query(
            adult,
            logistic_regression_query("sex = 'Female'", ["nope"]),
            SECRET,
            subset_size=100,
            method="montecarlo",
            n_samples=10,
            rng=0,
        )


def test_a_callable_that_fails_on_a_subset_is_named(adult):
    def median_ratio(frame):
        if len(frame) and frame["hours_per_week"].iloc[0] > 60:
            raise ZeroDivisionError("long week")
        return [frame["age"].median()]

    q = Query(median_ratio, names=["age_med"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ParameterError, match=r"statistics 'age_med'.*ZeroDivisionError"):
            model_query(
                adult, q, SECRET, subset_size=100, method="montecarlo", n_samples=200, rng=1
            )

    def not_finite(frame):
        return [1.0, float("nan")]

    with pytest.raises(ParameterError, match=r"statistic\(s\) 'b'"):
        Query(not_finite, names=["a", "b"]).evaluate(adult.head(20))


def test_model_and_bootstrap_layer_of_the_regression(adult):
    q = logistic_regression_query("sex = 'Female'", FEATURES)
    sample = adult.sample(2000, random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = model_query(
            sample,
            q,
            SECRET,
            subset_size=100,
            method="montecarlo",
            n_samples=200,
            rng=5,
            bootstrap=20,
        )
    assert model.uncertainty is not None and model.uncertainty.resamples == 20
    assert model.means.shape == (2, 4) and np.all(np.isfinite(model.covariances))
    # The layer's standard errors of the gap are positive and well below the spread of
    # one dataset's coefficients (the model's moments are known far better than a draw).
    gap_sd = np.sqrt(np.diag(model.uncertainty.gap_covariances[0]))
    draw_sd = np.sqrt(np.diag(model.covariances[0]))
    assert np.all(gap_sd > 0) and np.all(gap_sd < 0.5 * draw_sd)
