"""The query's distinct feature rows (modeling/atoms.py): found exactly, and drawing them is
the law of drawing rows.

References shared with no code of the atoms: numpy's ``unique`` over the row-level features
(``Query.row_features``, one value per row), the closed-form moments of a sum of rows drawn
i.i.d. (or without replacement) from each stratum, and the row-level sampler itself.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import distpriv.modeling.strata as strata
from distpriv.errors import ParameterError
from distpriv.modeling import Query
from distpriv.modeling.atoms import feature_atoms
from distpriv.modeling.queries import _row_sql
from distpriv.modeling.secrets import ProportionSecret
from distpriv.modeling.strata import StratifiedSampler
from distpriv.modeling.tables import as_table

SECRET = ProportionSecret("g = 1", [0.3, 0.5])


def _frame(rows: int, seed: int) -> pd.DataFrame:
    """Few-valued columns (so rows share their features) and a stratum flag."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x": rng.integers(0, 40, rows).astype(float),
            "h": rng.choice([20.0, 35.5, 40.0, 60.0], rows),
            "c": rng.choice(["a", "b", "c"], rows),
            "g": rng.integers(0, 2, rows),
        }
    )


def _query(m: int) -> Query:
    """Threshold shares, band averages and a categorical count: nested, not disjoint."""
    stats = {f"le{j}": f"count_if(x <= {j * 40 // m})" for j in range(m // 2)}
    stats |= {f"band{j}": f"avg(CASE WHEN x >= {j} THEN h ELSE 0 END)" for j in range(m // 2)}
    stats["is_a"] = "count_if(c = 'a')"
    return Query(stats)


def _brute(frame: pd.DataFrame, q: Query) -> dict[tuple[float, ...], tuple[int, int]]:
    """Each distinct feature row's count among g = 1 and g = 0, from the row features."""
    x = q.row_features(as_table(frame))
    out: dict[tuple[float, ...], list[int]] = {}
    for row, g in zip(map(tuple, x), frame.g.to_numpy(), strict=True):
        out.setdefault(row, [0, 0])[0 if g == 1 else 1] += 1
    return {k: (a, b) for k, (a, b) in out.items()}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_atoms_are_the_distinct_feature_rows_with_their_counts(seed):
    frame = _frame(3000, seed)
    q = _query(12)
    got = feature_atoms(
        as_table(frame),
        [_row_sql(s) for s in q.statistics],
        SECRET.predicate,
        columns=["x", "h", "c", "g"],
        max_bytes=1e9,
        what="atoms",
    )
    assert got is not None
    want = _brute(frame, q)
    assert got.values.shape == (len(want), q.dim)
    found = {
        tuple(v): (int(a), int(b))
        for v, a, b in zip(got.values, got.counts[0], got.counts[1], strict=True)
    }
    assert found == want
    assert got.stratum_sizes == (int((frame.g == 1).sum()), int((frame.g == 0).sum()))


def test_no_atoms_when_they_would_not_fit_or_not_help():
    frame = _frame(3000, 0)
    q = _query(12)
    features = [_row_sql(s) for s in q.statistics]
    table = as_table(frame)
    # Too little memory for them.
    cols = ["x", "h", "c", "g"]
    assert (
        feature_atoms(table, features, SECRET.predicate, columns=cols, max_bytes=100.0, what="a")
        is None
    )
    # Mostly distinct rows: no gain over the rows themselves.
    frame = frame.assign(x=np.random.default_rng(1).random(len(frame)))
    got = feature_atoms(
        as_table(frame), ["x", "h"], SECRET.predicate, columns=cols, max_bytes=1e9, what="a"
    )
    assert got is None
    # Many distinct rows of the columns, few distinct features (a threshold of a continuous
    # column): found by the second estimate.
    got = feature_atoms(
        as_table(frame),
        ["CASE WHEN x <= 0.5 THEN 1 ELSE 0 END", "h"],
        SECRET.predicate,
        columns=cols,
        max_bytes=1e9,
        what="a",
    )
    assert got is not None and got.values.shape == (8, 2)


def _closed_form(frame: pd.DataFrame, q: Query, k: int, n: int, replace: bool):
    """Mean and covariance of a dataset's statistics: k rows of g = 1 and n − k of g = 0,
    drawn i.i.d. (or without replacement) from the table's rows, from the row features."""
    x = q.row_features(as_table(frame))
    scale = np.array([1.0 / n if s.scale == "mean" else 1.0 for s in q.statistics])
    mean, cov = np.zeros(q.dim), np.zeros((q.dim, q.dim))
    for rows, size in ((x[frame.g == 1], k), (x[frame.g == 0], n - k)):
        big_n = rows.shape[0]
        c = np.cov(rows.T, ddof=0)
        fpc = 1.0 if replace else (big_n - size) / (big_n - 1)
        mean += size * rows.mean(axis=0)
        cov += size * c * fpc
    return mean * scale, cov * np.outer(scale, scale)


@pytest.mark.parametrize("replace", [True, False])
@pytest.mark.parametrize("n", [30, 400])  # fewer rows than atoms (categorical), and more
def test_drawing_atoms_is_the_law_of_drawing_rows(monkeypatch, replace, n):
    monkeypatch.setattr(strata, "ATOMS_FROM_BYTES", 0.0)
    frame = _frame(4000, 3)
    q = _query(12)
    sampler = StratifiedSampler(frame, q, SECRET, n, replace=replace, only_values=True)
    assert sampler._atoms is not None and sampler.features is None  # no per-row array
    draws = 40_000
    for index in range(2):
        got = sampler.draw(index, draws, np.random.default_rng(5 + index))
        mean, cov = _closed_form(frame, q, sampler.counts[index], n, replace)
        se = np.sqrt(np.diag(cov) / draws)
        assert np.max(np.abs(got.mean(axis=0) - mean) / se) < 5
        sd = np.sqrt(np.diag(cov))
        corr_got = np.cov(got.T) / np.outer(sd, sd)
        # A covariance estimated from 40,000 draws: entries of the correlation scale
        # within about 5 / sqrt(draws) (plus the estimate's own sd ratio).
        np.testing.assert_allclose(corr_got, cov / np.outer(sd, sd), atol=0.04)


def test_the_row_path_and_the_atoms_agree_on_the_table_size_checks(monkeypatch):
    monkeypatch.setattr(strata, "ATOMS_FROM_BYTES", 0.0)
    frame = _frame(200, 4).assign(x=lambda f: f.x % 3)  # few atoms: the atoms' path
    q = _query(12)
    assert StratifiedSampler(frame, q, SECRET, 20, only_values=True)._atoms is not None
    few = int((frame.g == 1).sum())
    for only_values in (True, False):
        with pytest.raises(ParameterError, match=f"p=0.8 needs 120 rows .* the table has {few}"):
            StratifiedSampler(
                frame, q, ProportionSecret("g = 1", [0.5, 0.8]), 150, only_values=only_values
            )
        with pytest.raises(ParameterError, match="satisfied by no row"):
            StratifiedSampler(
                frame, q, ProportionSecret("g = 7", [0.3, 0.5]), 10, only_values=only_values
            )


def test_a_null_feature_is_named_by_the_row_path(monkeypatch):
    monkeypatch.setattr(strata, "ATOMS_FROM_BYTES", 0.0)
    frame = _frame(500, 5)
    q = Query({"ratio": "avg(h / (x - x))"})  # 0 / 0: NaN on every row
    with pytest.raises(ParameterError, match="statistic 'ratio'"):
        StratifiedSampler(frame, q, SECRET, 20, only_values=True)
