"""Spark: the same aggregates in Spark SQL, translated by sqlglot, equal DuckDB."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import distpriv as dp
from adult_setup import ADULT_STATS, INCOME
from distpriv import DistPrivError
from distpriv.modeling import Query, model_query
from distpriv.modeling.tables import as_table

# pyspark 4 warns about pandas 3 on every conversion; the conversions used here work.
pytestmark = pytest.mark.filterwarnings("ignore:PySpark does not yet fully support:FutureWarning")


@pytest.fixture(scope="module")
def adult(tmp_path_factory, adult_modeling):
    frame = adult_modeling
    path = tmp_path_factory.mktemp("spark") / "adult.parquet"
    frame.to_parquet(path)
    return frame, path


def rel_close(a, b, rtol=1e-9):
    a, b = np.asarray(a), np.asarray(b)
    scale = np.maximum(np.abs(b), np.abs(b).max() * 1e-12)
    assert np.all(np.abs(a - b) <= rtol * scale), np.max(np.abs(a - b) / scale)


def test_adult_income_model_through_spark_equals_duckdb(spark, adult):
    frame, path = adult
    sdf = spark.read.parquet(str(path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dp.AssumptionWarning)
        ms = model_query(sdf, ADULT_STATS, INCOME, subset_size=100, method="analytic")
        md = model_query(path, ADULT_STATS, INCOME, subset_size=100, method="analytic")
    assert as_table(sdf).dialect == "spark" and ms.diagnostics["engine"] == "spark"
    rel_close(ms.means, md.means)
    rel_close(ms.covariances, md.covariances)
    rel_close(ms.diagnostics["skewness"], md.diagnostics["skewness"], rtol=1e-6)
    assert ms.stratum_sizes == md.stratum_sizes
    # And both equal the in-memory frame (same data, a third route).
    mf = model_query(frame, ADULT_STATS, INCOME, subset_size=100, method="analytic")
    rel_close(mf.covariances, md.covariances)


def test_release_statistics_through_spark_equal_duckdb(spark, adult):
    frame, _ = adult
    rng = np.random.default_rng(7)
    sample = frame.iloc[rng.choice(len(frame), 100, replace=False)].reset_index(drop=True)
    sample.loc[[2, 9], "age"] = np.nan
    sdf = spark.createDataFrame(sample)
    q = Query(ADULT_STATS)
    with pytest.raises(DistPrivError, match=r"column 'age' of the released data has 2 missing"):
        q.evaluate(sdf)
    es, ed = q.evaluation(sdf, missing="drop"), q.evaluation(sample, missing="drop")
    assert es.n_rows == ed.n_rows == 98 and es.missing.rows_dropped == 2
    rel_close(es.value, ed.value)
    # A full release with the Spark table as released and modelling data: same numbers.
    clean = sample.drop(index=[2, 9]).reset_index(drop=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dp.AssumptionWarning)
        kwargs = dict(mechanism="daum", epsilon=1.0, delta=1e-3, subset_size=98, rng=3)
        rs = dp.release(
            spark.createDataFrame(clean), ADULT_STATS, INCOME, model_data=frame, **kwargs
        )
        rd = dp.release(clean, ADULT_STATS, INCOME, model_data=frame, **kwargs)
    rel_close(rs.true_value, rd.true_value)
    rel_close(rs.release.value, rd.release.value)


def test_spark_refuses_the_same_hostile_sql(spark, tmp_path):
    sdf = spark.createDataFrame(pd.DataFrame({"x": [1.0, 2.0], "s": [True, False]}))
    for text in ["max(length(read_text('/etc/passwd')))", "avg(x); DROP TABLE t"]:
        with pytest.raises(DistPrivError, match="not allowed"):
            Query({"a": text}).evaluate(sdf)
    with pytest.raises(DistPrivError, match="unknown column 'y'"):
        Query({"a": "avg(y)"}).evaluate(sdf)


def test_row_pool_is_drawn_in_spark(spark, adult, monkeypatch):
    # A Spark table larger than the in-memory limit: the Monte Carlo pool comes from
    # uniform samples drawn in Spark, per stratum, without replacement.
    from distpriv.modeling import tables
    from distpriv.modeling.resampling import draw_pool

    frame, _ = adult
    small = frame.iloc[:300].assign(rid=np.arange(300))
    monkeypatch.setattr(tables, "MAX_IN_MEMORY_ROWS", 100)
    table = as_table(spark.createDataFrame(small))
    pool, sizes, pooled = draw_pool(table, INCOME, pool_size=40, rng=np.random.default_rng(0))
    mask = (small["income"] == ">50K").to_numpy()
    assert sizes == (int(mask.sum()), int((~mask).sum())) and pooled == (40, 40)
    rid = pool.frame["rid"].to_numpy()
    assert np.all(mask[rid[:40]]) and not np.any(mask[rid[40:]]) and len(set(rid)) == 80
