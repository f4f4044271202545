"""model_query: analytic moments are exact, Monte Carlo agrees with them, bad input is caught."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from adult_setup import ADULT_QUERY, INCOME
from distpriv import AssumptionWarning, DistPrivError, calibrate
from distpriv.modeling import ProportionSecret, Query, model_query, stratum_moments
from distpriv.modeling.sampling import sample_subsets


def test_paper_mean_difference(adult_analytic):
    # Chen & Ohrimenko 2023 §5.1 data give ‖μ0.45 − μ0.55‖₂ between 4.2 and 4.4.
    norm = np.linalg.norm(adult_analytic.means[0] - adult_analytic.means[1])
    assert 4.2 <= norm <= 4.4
    assert adult_analytic.counts == (45, 55)
    assert adult_analytic.labels == (0.45, 0.55)
    assert adult_analytic.statistics == ADULT_QUERY.names


def test_montecarlo_agrees_with_analytic(adult_modeling, adult_analytic):
    s = 10_000
    mc = model_query(
        adult_modeling,
        ADULT_QUERY,
        INCOME,
        subset_size=100,
        method="montecarlo",
        n_samples=s,
        rng=2,
    )
    for t in range(2):
        x = mc.samples[t]
        cov = adult_analytic.covariances[t]
        # Mean: standard error √(Σ_kk / S) from the exact covariance; 5 se per entry.
        se_mean = np.sqrt(np.diag(cov) / s)
        assert np.all(np.abs(mc.means[t] - adult_analytic.means[t]) < 5 * se_mean)
        # Covariance: se of each entry = sd of the centred products / √S (from the draws,
        # since count statistics are not exactly Gaussian); 5 se per entry.
        c = x - x.mean(axis=0)
        prod = c[:, :, None] * c[:, None, :]
        se_cov = prod.std(axis=0) / np.sqrt(s)
        assert np.all(np.abs(mc.covariances[t] - cov) < 5 * se_cov)


def tiny_table():
    return pd.DataFrame(
        {
            "x": [1.0, 4.0, 2.0, 8.0, 3.0, 5.0, 7.0],
            "y": [0, 1, 1, 0, 2, 5, 1],
            "g": ["a", "b", "a", "a", "b", "b", "a"],
            "s": [True, True, False, True, False, False, False],
        }
    )


TINY_QUERY = Query(
    {
        "mx": "avg(x)",
        "sy": "sum(y)",
        "na": "count_if(g = 'a')",
        "n": "count(*)",
        "mxy": "avg(x * y)",
    }
)


def test_analytic_moments_exact_by_enumeration():
    df = tiny_table()
    secret = ProportionSecret("s", values=[0.25, 0.5, 0.75])
    # Statistics of 4-row datasets are far from Gaussian, and the model says so.
    with pytest.warns(AssumptionWarning, match="not Gaussian"):
        model = model_query(
            df, TINY_QUERY, secret, subset_size=4, method="analytic", rng=0, population=True
        )
    pos, neg = np.flatnonzero(df.s), np.flatnonzero(~df.s)
    for t, k in enumerate(model.counts):
        vals = []
        for a in itertools.combinations(pos, k):
            for b in itertools.combinations(neg, 4 - k):
                sub = df.iloc[list(a + b)]
                vals.append(
                    [
                        sub.x.mean(),
                        sub.y.sum(),
                        (sub.g == "a").sum(),
                        len(sub),
                        (sub.x * sub.y).mean(),
                    ]
                )
        vals = np.array(vals)
        np.testing.assert_allclose(model.means[t], vals.mean(axis=0), rtol=1e-12)
        np.testing.assert_allclose(
            model.covariances[t], np.cov(vals, rowvar=False, ddof=0), atol=1e-12
        )


def test_stratum_moments_edge_cases():
    x = np.array([[1.0], [3.0]])
    mean, cov = stratum_moments(x, 2)  # whole population: no variance
    assert mean[0] == 4.0 and cov[0, 0] == 0.0
    mean, cov = stratum_moments(x[:1], 1)
    assert mean[0] == 1.0 and cov[0, 0] == 0.0


@pytest.mark.parametrize(("population", "size"), [(6, 2), (6, 6), (40, 3)])
def test_sampler_uniform(population, size):
    rng = np.random.default_rng(5)
    count = 30_000
    draws = sample_subsets(population, size, count, rng)
    assert draws.shape == (count, size)
    assert np.all(np.sort(draws, axis=1)[:, 1:] != np.sort(draws, axis=1)[:, :-1])
    # Each index appears in a fraction k/N of the subsets: chi-square on the counts.
    freq = np.bincount(draws.ravel(), minlength=population)
    if size < population:
        assert stats.chisquare(freq).pvalue > 1e-4
    if population <= 6 and size < population:
        # Every k-subset equally likely.
        keys, counts = np.unique(np.sort(draws, axis=1), axis=0, return_counts=True)
        assert len(keys) == len(list(itertools.combinations(range(population), size)))
        assert stats.chisquare(counts).pvalue > 1e-4
    # Position within the row is uniform too (the order is randomised).
    first = np.bincount(draws[:, 0], minlength=population)
    assert stats.chisquare(first).pvalue > 1e-4


def test_nonlinear_sql_and_callable_paths_match_pandas():
    df = tiny_table()
    secret = ProportionSecret("s", values=[0.25, 0.5])
    q = Query({"med": "median(x)", "mx": "avg(x)"})
    assert not q.is_linear
    m = model_query(df, q, secret, subset_size=4, method="montecarlo", n_samples=50, rng=3)
    fn = Query(lambda d: [d.x.median(), d.x.mean()], names=["med", "mx"])
    m2 = model_query(df, fn, secret, subset_size=4, method="montecarlo", n_samples=50, rng=3)
    # Same seed, same subsets: DuckDB's grouped aggregate equals the per-subset callable.
    for a, b in zip(m.samples, m2.samples, strict=True):
        np.testing.assert_allclose(a, b)
    with pytest.raises(DistPrivError, match=r"analytic.*median"):
        model_query(df, q, secret, subset_size=4, method="analytic")


@pytest.mark.filterwarnings("ignore::distpriv.errors.AssumptionWarning")
def test_inputs_csv_parquet_arrow(tmp_path):
    import pyarrow as pa

    df = tiny_table()
    secret = ProportionSecret("s", values=[0.25, 0.5])
    ref = model_query(df, TINY_QUERY, secret, subset_size=4, method="analytic", rng=0)
    df.to_csv(tmp_path / "t.csv", index=False)
    df.to_parquet(tmp_path / "t.parquet")
    for source in (tmp_path / "t.csv", str(tmp_path / "t.parquet"), pa.Table.from_pandas(df)):
        other = model_query(source, TINY_QUERY, secret, subset_size=4, method="analytic", rng=0)
        np.testing.assert_allclose(other.means, ref.means)
        np.testing.assert_allclose(other.covariances, ref.covariances, atol=1e-12)


def test_model_feeds_calibrate(adult_analytic):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mech = calibrate("daum", adult_analytic, epsilon=1.0, delta=1e-3, calibration="analytic")
    g = mech.guarantee
    gauss = next(a for a in g.assumptions if a.name == "gaussian")
    assert gauss.holds is None and "exact mean and covariance" in gauss.detail
    # Real data: covariances differ between p = 0.45 and 0.55, and the guarantee says so.
    assert any(a.name == "equal-covariance" and a.holds is False for a in g.assumptions)
    assert any(issubclass(w.category, AssumptionWarning) for w in caught)
    assert adult_analytic.diagnostics["covariance_gap"][0] > 0.01


def test_diagnostics_and_to_dict(adult_analytic):
    import json

    d = adult_analytic.diagnostics
    assert d["skewness"].shape == (2, 5) and d["parallel_residual"] == 0.0
    out = adult_analytic.to_dict()
    json.dumps(out, allow_nan=False)
    assert out["method"] == "analytic" and out["counts"] == [45, 55]
    with pytest.raises(DistPrivError, match="no samples"):
        adult_analytic.to_sampled()


@pytest.mark.parametrize(
    ("query", "secret", "kwargs", "match"),
    [
        ({"a": "avg(agee)"}, None, {}, r"statistic 'a'.*agee"),
        ({"a": "avg(age"}, None, {}, r"statistic 'a'"),
        ({"a": "avg(age)"}, ("income = 'rich'", [0.4, 0.6]), {}, "satisfied by no row"),
        ({"a": "avg(age)"}, ("age > 0", [0.4, 0.6]), {}, "satisfied by every row"),
        ({"a": "avg(age)"}, ("incme = 1", [0.4, 0.6]), {}, "secret predicate"),
        ({"a": "avg(age)"}, None, {"subset_size": 30_000}, "needs .* rows"),
        ({"a": "avg(age)"}, None, {"subset_size": 0}, "subset_size must be >= 1"),
        ({"a": "avg(age)"}, None, {"method": "exact"}, "method must be one of"),
        ({"a": "avg(age)"}, None, {"n_samples": 1}, "n_samples must be >= 2"),
        ({"a": "avg(CASE WHEN age > 50 THEN NULL ELSE age END)"}, None, {}, "NULL"),
        ({"a": "avg(age / (age - age))"}, None, {}, "NULL, NaN or infinite"),
    ],
)
def test_bad_input(adult_modeling, query, secret, kwargs, match):
    sec = INCOME if secret is None else ProportionSecret(secret[0], values=secret[1])
    args = {"subset_size": 100, **kwargs}
    with pytest.raises(DistPrivError, match=match):
        model_query(adult_modeling.head(2000), query, sec, **args)


def test_bad_secret_and_table():
    with pytest.raises(DistPrivError, match="values must be <= 1"):
        ProportionSecret("x > 0", values=[0.5, 1.5])
    with pytest.raises(DistPrivError, match="values must be >= 0"):
        ProportionSecret("x > 0", values=[-0.1, 0.5])
    with pytest.raises(DistPrivError, match="distinct"):
        ProportionSecret("x > 0", values=[0.5, 0.5])
    with pytest.raises(DistPrivError, match="same count"):
        ProportionSecret("s", values=[0.25, 0.26]).counts(4)
    with pytest.raises(DistPrivError, match="within"):
        ProportionSecret("s", values=[0.1, 0.5], within=0.1)
    with pytest.raises(DistPrivError, match="empty"):
        model_query(
            pd.DataFrame({"x": []}),
            {"a": "avg(x)"},
            ProportionSecret("x > 0", values=[0.2, 0.4]),
            subset_size=5,
        )
    with pytest.raises(DistPrivError, match="not found"):
        model_query(
            "/no/such.csv",
            {"a": "avg(x)"},
            ProportionSecret("x > 0", values=[0.2, 0.4]),
            subset_size=5,
        )
    with pytest.raises(DistPrivError, match="must be a pandas DataFrame"):
        model_query(
            42, {"a": "avg(x)"}, ProportionSecret("x > 0", values=[0.2, 0.4]), subset_size=5
        )


def test_secret_pairs():
    s = ProportionSecret("x", values=[0.3, 0.4, 0.5, 0.6], within=0.1)
    assert s.pairs == ((0.3, 0.4), (0.4, 0.5), (0.5, 0.6))
    s2 = ProportionSecret("x", values=[0.3, 0.4, 0.5])
    assert len(s2.pairs) == 3
    s3 = ProportionSecret("x", values=[0.3, 0.4, 0.5], pairs=[(0.3, 0.5)])
    assert s3.pairs == ((0.3, 0.5),)


@pytest.mark.parametrize("kind", ["proportion", "mean", "mean-events", "several"])
@pytest.mark.parametrize("population", ["yes", 1, None])
def test_population_must_be_a_bool_for_every_kind_of_secret(adult_modeling, kind, population):
    from distpriv.errors import ParameterTypeError
    from distpriv.modeling.secret_events import EventSecret
    from distpriv.modeling.secret_mean import MeanSecret
    from distpriv.modeling.secret_mean_events import MeanGrid
    from distpriv.modeling.secret_several import SeveralSecrets

    secret = {
        "proportion": INCOME,
        "mean": MeanSecret("age", values=[37, 40]),
        "mean-events": EventSecret(MeanGrid("age", step=1.0), [[30, 35], [40, 45]]),
        "several": SeveralSecrets([INCOME, ProportionSecret("sex = 'Male'", [0.6, 0.7])]),
    }[kind]
    with pytest.raises(ParameterTypeError, match="population must be true or false"):
        model_query(adult_modeling, ADULT_QUERY, secret, subset_size=100, population=population)
