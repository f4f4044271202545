"""The analytic model pushed down to the engine: one aggregate, same moments."""

from __future__ import annotations

import itertools
import warnings

import duckdb
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from adult_setup import ADULT_QUERY
from distpriv import DistPrivError
from distpriv.modeling import ProportionSecret, Query, model_query, stratum_moments
from distpriv.modeling import tables as tables_mod
from distpriv.modeling.engines import DuckDBEngine
from distpriv.modeling.tables import Table

SECRET = ProportionSecret("income = '>50K'", values=[0.4, 0.45, 0.55])


def old_path_moments(frame, query, secret, n):
    """The previous implementation: row features in pandas, stratum_moments per value."""
    rich = (frame["income"] == ">50K").to_numpy()
    feats = np.column_stack(
        [
            frame["age"],
            frame["education_num"],
            frame["marital_status"] == "Never-married",
            frame["sex"] == "Female",
            frame["hours_per_week"],
        ]
    ).astype(float)
    scale = np.array([1 / n, 1 / n, 1, 1, 1 / n])
    means, covs = [], []
    for k in secret.counts(n):
        ma, ca = stratum_moments(feats[rich], k)
        mb, cb = stratum_moments(feats[~rich], n - k)
        means.append((ma + mb) * scale)
        covs.append((ca + cb) * np.outer(scale, scale))
    return np.stack(means), np.stack(covs)


def count_queries(monkeypatch):
    calls = []
    original = DuckDBEngine.query

    def spy(self, sql, what):
        calls.append(sql)
        return original(self, sql, what)

    monkeypatch.setattr(DuckDBEngine, "query", spy)
    return calls


@pytest.mark.filterwarnings("ignore::distpriv.errors.AssumptionWarning")
def test_pushdown_equals_the_materialised_path_for_every_source(
    adult_modeling, tmp_path, monkeypatch
):
    ref_means, ref_covs = old_path_moments(adult_modeling, ADULT_QUERY, SECRET, 100)
    adult_modeling.to_parquet(tmp_path / "a.parquet")
    adult_modeling.to_csv(tmp_path / "a.csv", index=False)
    import pyarrow as pa

    conn = duckdb.connect()
    conn.register("adult_frame", adult_modeling)
    sources = [
        adult_modeling,
        tmp_path / "a.parquet",
        str(tmp_path / "a.csv"),
        pa.Table.from_pandas(adult_modeling),
        conn.sql("SELECT * FROM adult_frame"),
    ]
    # The row-level path is not used: forbid it.
    monkeypatch.setattr(tables_mod, "MAX_IN_MEMORY_ROWS", 10)
    calls = count_queries(monkeypatch)
    for source in sources:
        calls.clear()
        model = model_query(
            source, ADULT_QUERY, SECRET, subset_size=100, method="analytic", population=True
        )
        np.testing.assert_allclose(model.means, ref_means, rtol=1e-12)
        np.testing.assert_allclose(model.covariances, ref_covs, rtol=1e-9, atol=1e-12)
        # A constant number of engine round trips (row count, scale probe, ONE aggregate),
        # whatever the number of statistics or secret values; the aggregate is grouped by
        # stratum, not run per value or per statistic.
        assert len(calls) == 3
        assert sum("GROUP BY" in c for c in calls) == 1


def test_row_limit_checked_before_loading(adult_modeling, tmp_path, monkeypatch):
    path = tmp_path / "a.parquet"
    adult_modeling.to_parquet(path)
    monkeypatch.setattr(tables_mod, "MAX_IN_MEMORY_ROWS", 1000)

    def no_load(*args, **kwargs):
        raise AssertionError("the table was loaded")

    monkeypatch.setattr(DuckDBEngine, "fetch_frame", no_load)
    with pytest.raises(DistPrivError, match=r"has 25222 rows.*at most 1000.*method='analytic'"):
        model_query(path, ADULT_QUERY, SECRET, subset_size=100, method="montecarlo", n_samples=10)
    # Release evaluation runs in the engine too, without loading.
    value = ADULT_QUERY.evaluate(path)
    assert value[3] == (adult_modeling["sex"] == "Female").sum()


def test_numerically_stable_with_a_large_offset():
    """Features around 1e9 with unit spread: raw power sums would lose every digit."""
    rng = np.random.default_rng(3)
    n = 20_000
    frame = pd.DataFrame(
        {"x": 1e9 + rng.normal(size=n), "s": rng.random(n) < 0.5, "z": rng.exponential(size=n)}
    )
    q = Query({"mx": "avg(x)", "sz": "sum(z)"})
    secret = ProportionSecret("s", values=[0.4, 0.6])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = model_query(frame, q, secret, subset_size=50, method="analytic", population=True)
    feats = frame[["x", "z"]].to_numpy()
    mask = frame["s"].to_numpy()
    for t, k in enumerate(model.counts):
        ma, ca = stratum_moments(feats[mask], k)
        mb, cb = stratum_moments(feats[~mask], 50 - k)
        scale = np.array([1 / 50, 1.0])
        np.testing.assert_allclose(model.means[t], (ma + mb) * scale, rtol=1e-14)
        np.testing.assert_allclose(
            model.covariances[t], (ca + cb) * np.outer(scale, scale), rtol=1e-8
        )


def test_exact_cumulants_match_enumeration():
    """Skewness and kurtosis of f_θ from the engine's power sums equal full enumeration."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "x": rng.integers(0, 9, 9).astype(float),
            "y": rng.exponential(size=9),
            "s": [True] * 4 + [False] * 5,
        }
    )
    q = Query({"mx": "avg(x)", "sy": "sum(y * y)", "c": "count_if(y > 0.5)"})
    secret = ProportionSecret("s", values=[0.5, 0.75])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = model_query(df, q, secret, subset_size=4, method="analytic", population=True)
    pos, neg = np.flatnonzero(df.s), np.flatnonzero(~df.s)
    for t, k in enumerate(model.counts):
        vals = np.array(
            [
                [sub.x.mean(), (sub.y**2).sum(), (sub.y > 0.5).sum()]
                for a in itertools.combinations(pos, k)
                for b in itertools.combinations(neg, 4 - k)
                for sub in [df.iloc[list(a + b)]]
            ]
        )
        np.testing.assert_allclose(model.diagnostics["skewness"][t], stats.skew(vals), atol=1e-9)
        np.testing.assert_allclose(
            model.diagnostics["excess_kurtosis"][t], stats.kurtosis(vals), atol=1e-9
        )


def test_strata_errors_from_the_aggregate(adult_modeling):
    with pytest.raises(DistPrivError, match="satisfied by no row"):
        model_query(
            adult_modeling,
            ADULT_QUERY,
            ProportionSecret("age > 500", values=[0.4, 0.6]),
            subset_size=10,
            method="analytic",
        )
    with pytest.raises(DistPrivError, match=r"needs \d+ rows satisfying"):
        model_query(
            adult_modeling.head(2000), ADULT_QUERY, SECRET, subset_size=2000, method="analytic"
        )
    bad = adult_modeling.head(50).assign(age=0.0)
    with pytest.raises(DistPrivError, match=r"statistic 'r'.*NULL, NaN or infinite"):
        model_query(
            bad,
            {"r": "avg(1.0 / age)"},
            ProportionSecret("sex = 'Female'", values=[0.4, 0.6]),
            subset_size=10,
            method="analytic",
        )


def test_table_is_not_copied_for_a_frame(adult_modeling):
    table = Table(adult_modeling)
    assert table.frame is not None and table.n_rows == len(adult_modeling)
    np.testing.assert_allclose(
        ADULT_QUERY.evaluate(table)[:2],
        [adult_modeling.age.mean(), adult_modeling.education_num.mean()],
        rtol=1e-12,
    )


def test_only_the_needed_columns_are_read(adult_modeling, tmp_path, monkeypatch):
    """DuckDB's plan for the moments query reads only the statistics' and secret's columns."""
    path = tmp_path / "wide.parquet"
    adult_modeling.assign(payload_unused="x" * 50).to_parquet(path)
    plans = []
    original = DuckDBEngine.query

    def explain(self, sql, what):
        if "GROUP BY" in sql:
            plans.append(self.conn.sql("EXPLAIN " + sql).fetchall()[0][1])
        return original(self, sql, what)

    monkeypatch.setattr(DuckDBEngine, "query", explain)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model_query(path, ADULT_QUERY, SECRET, subset_size=100, method="analytic")
    (plan,) = plans
    scan = plan[plan.index("READ_PARQUET") :]
    for col in ("age", "education_num", "marital_status", "sex", "hours_per_week", "income"):
        assert col in scan
    for col in ("payload_unused", "workclass", "fnlwgt", "race"):
        assert col not in scan
