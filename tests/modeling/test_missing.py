"""Missing values are a decision: an error naming column and count, or a counted drop."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import distpriv as dp
from distpriv import DistPrivError
from distpriv.modeling import ProportionSecret, Query, model_query

QUERY = {"avg_age": "avg(age)", "n_f": "count_if(sex = 'F')", "sum_h": "sum(hours)"}
SECRET = ProportionSecret("rich", values=[0.3, 0.5])


def frame(n=300, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 80, n).astype(float),
            "hours": pd.array(rng.integers(10, 60, n), dtype="Int64"),
            "sex": rng.choice(["F", "M"], n).astype(object),
            "rich": rng.random(n) < 0.4,
            "unused": np.full(n, np.nan),
        }
    )


def holes(df):
    df = df.copy()
    df.loc[[3, 7, 11], "age"] = np.nan  # NaN in a float column
    df.loc[[7, 20], "hours"] = pd.NA  # NULL in an integer column (7 overlaps)
    df.loc[[40], "sex"] = None
    return df


@pytest.mark.parametrize("method", ["analytic", "montecarlo"])
def test_modelling_nulls_are_an_error_naming_column_and_count(method):
    df = holes(frame())
    with pytest.raises(DistPrivError, match=r"column 'age' of the modelling data has 3 missing"):
        model_query(df, QUERY, SECRET, subset_size=20, method=method, n_samples=50, rng=0)
    # An unused all-NaN column is not a problem.
    model_query(frame(), QUERY, SECRET, subset_size=20, method=method, n_samples=50, rng=0)


def test_null_in_secret_column_is_an_error():
    df = frame()
    df["rich"] = df["rich"].astype(object)
    df.loc[[5, 6], "rich"] = None
    with pytest.raises(DistPrivError, match=r"column 'rich' of the modelling data has 2 missing"):
        model_query(df, QUERY, SECRET, subset_size=20, method="analytic")


@pytest.mark.filterwarnings("ignore::distpriv.errors.AssumptionWarning")
@pytest.mark.parametrize("method", ["analytic", "montecarlo"])
def test_drop_equals_the_cleaned_table_and_reports_the_count(method, tmp_path):
    df = holes(frame())
    clean = df.dropna(subset=["age", "hours", "sex"]).reset_index(drop=True)
    assert len(df) - len(clean) == 5  # rows 3, 7, 11, 20, 40
    ref = model_query(clean, QUERY, SECRET, subset_size=20, method=method, n_samples=50, rng=4)
    path = tmp_path / "holes.parquet"
    df.to_parquet(path)
    for source in (df, path):
        got = model_query(
            source,
            QUERY,
            SECRET,
            subset_size=20,
            method=method,
            n_samples=50,
            rng=4,
            missing="drop",
        )
        miss = got.diagnostics["missing"]
        assert miss["policy"] == "drop" and miss["rows_dropped"] == 5
        assert miss["missing_counts"] == {"age": 3, "hours": 2, "sex": 1}
        np.testing.assert_allclose(got.means, ref.means, rtol=1e-12)
        np.testing.assert_allclose(got.covariances, ref.covariances, rtol=1e-10, atol=1e-12)
        assert got.stratum_sizes == ref.stratum_sizes


def test_release_evaluation_nulls():
    """An average over 95 rows must not be reported as the average of 100."""
    df = holes(frame(100))
    q = Query(QUERY)
    with pytest.raises(DistPrivError, match=r"column 'age' of the released data has 3 missing"):
        q.evaluate(df)
    ev = q.evaluation(df, missing="drop")
    clean = df.dropna(subset=["age", "hours", "sex"])
    assert ev.n_rows == 95 and ev.missing.rows_dropped == 5
    np.testing.assert_allclose(
        ev.value, [clean.age.mean(), (clean.sex == "F").sum(), clean.hours.sum()], rtol=1e-12
    )
    np.testing.assert_allclose(q.evaluate(df, missing="drop"), ev.value)
    with pytest.raises(DistPrivError, match="missing must be one of"):
        q.evaluate(df, missing="ignore")


def test_release_refuses_nulls_in_released_table():
    data, model_data = holes(frame(50, seed=2)), frame(400)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dp.AssumptionWarning)
        with pytest.raises(DistPrivError, match=r"column 'age'.*missing"):
            dp.release(
                data,
                QUERY,
                SECRET,
                model_data=model_data,
                mechanism="daum",
                epsilon=1.0,
                delta=1e-3,
                rng=0,
            )


def test_every_row_missing_is_clear():
    df = frame(30)
    df["age"] = np.nan
    with pytest.raises(DistPrivError, match="every row"):
        Query(QUERY).evaluate(df, missing="drop")
