"""The strata's moments of disjoint cells from one count per stratum and cell
(modeling/cell_moments.py), against numpy on the materialised rows and the general path."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from distpriv.errors import ParameterError
from distpriv.modeling.cell_moments import cell_stratum, indicator_conditions
from distpriv.modeling.cells import histogram_cells, marginal_cells
from distpriv.modeling.expressions import parse_expression
from distpriv.modeling.moments import STREAM_FROM, table_moments
from distpriv.modeling.queries import Query
from distpriv.modeling.tables import Table


def _frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x": np.round(rng.gamma(3.0, 10.0, n), 2),
            "c": rng.choice(list("abcdefg"), n),
            "g": rng.integers(0, 2, n),
        }
    )


def _moments(frame: pd.DataFrame, stats: dict[str, str], missing: str = "error"):
    q = Query(stats)
    feats = [s.row_parsed for s in q.statistics]
    pred = parse_expression("g = 1", what="secret", kind="scalar")
    return table_moments(Table(frame), feats, pred, names=list(q.names), missing=missing)


def _reference(frame: pd.DataFrame, stats: dict[str, str], rich: bool):
    """Moments from the materialised 0/1 features (numpy, two-pass)."""
    rows = frame[frame.g.to_numpy() == (1 if rich else 0)]
    x = np.asarray(Query(stats).row_features(Table(rows)), dtype=np.float64)
    mean = x.mean(axis=0)
    y = x - mean
    return mean, y.T @ y, (y**3).sum(axis=0), (y**4).sum(axis=0)


@pytest.mark.parametrize("bins", [STREAM_FROM, 120])
def test_histogram_moments_from_counts_equal_numpy_on_the_rows(bins):
    frame = _frame(5000, 0)
    stats = histogram_cells("x", bins=bins, range=[0, 90]).query()
    got = _moments(frame, stats)
    assert "per stratum and cell" in got.how  # the count path was taken
    for stratum, rich in ((got.a, True), (got.b, False)):
        mean, cross, p3, p4 = _reference(frame, stats, rich)
        np.testing.assert_allclose(stratum.mean, mean, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(stratum.cross, cross, rtol=1e-10, atol=1e-9)
        np.testing.assert_allclose(stratum.p3, p3, rtol=1e-10, atol=1e-9)
        np.testing.assert_allclose(stratum.p4, p4, rtol=1e-10, atol=1e-9)
        # The cells cover every row: the counts sum to n, the ones are a null direction.
        assert np.max(np.abs(stratum.cross.sum(axis=1))) <= 1e-9 * np.max(stratum.cross)


def test_overlapping_counts_take_the_general_path_with_the_same_moments():
    frame = _frame(3000, 1)
    # Cumulative shares: count_if(x >= t) overlap, the check on the data sends them back.
    stats = {f"ge{t}": f"count_if(x >= {t})" for t in range(0, 2 * STREAM_FROM, 2)}
    got = _moments(frame, stats)
    assert "per stratum and cell" not in got.how
    mean, cross, _, _ = _reference(frame, stats, True)
    np.testing.assert_allclose(got.a.mean, mean, rtol=1e-12)
    np.testing.assert_allclose(got.a.cross, cross, rtol=1e-9, atol=1e-8)


def test_a_marginal_with_missing_values_dropped_or_refused_as_on_the_general_path():
    frame = _frame(4000, 2)
    frame.loc[frame.index[::97], "c"] = None
    # A two-way table of c and b: 28 disjoint cells, enough for the count path.
    stats = marginal_cells(
        ["c", "b"], values={"c": list("abcdefg"), "b": [0, 1, 2, 3]}, others=False
    ).query()
    frame["b"] = (frame.x // 20).clip(upper=3).astype(int)
    with pytest.raises(ParameterError, match="column 'c' of the modelling data has 42 missing"):
        _moments(frame, stats)
    got = _moments(frame, stats, missing="drop")
    assert got.missing.rows_dropped == 42 and "per stratum and cell" in got.how
    kept = frame.dropna()
    mean, cross, p3, p4 = _reference(kept, stats, False)
    np.testing.assert_allclose(got.b.p3, p3, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(got.b.mean, mean, rtol=1e-12)
    np.testing.assert_allclose(got.b.cross, cross, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(got.b.p4, p4, rtol=1e-10, atol=1e-9)


def test_cross_moments_of_the_patterns_equal_brute_force():
    rng = np.random.default_rng(3)
    m, n = 6, 400
    cell = rng.integers(-1, m, n)  # -1: in no cell
    x = np.zeros((n, m))
    x[cell >= 0, cell[cell >= 0]] = 1.0
    counts = np.array([*(np.sum(cell == k) for k in range(m)), np.sum(cell < 0)])
    n_rows, mean, cross, p3, p4, c3, c4 = cell_stratum(counts, cross=True)
    y = x - x.mean(axis=0)
    assert n_rows == n
    np.testing.assert_allclose(mean, x.mean(axis=0), rtol=1e-14)
    np.testing.assert_allclose(cross, y.T @ y, atol=1e-10)
    np.testing.assert_allclose(p3, (y**3).sum(axis=0), atol=1e-10)
    np.testing.assert_allclose(p4, (y**4).sum(axis=0), atol=1e-10)
    np.testing.assert_allclose(c3, np.einsum("rj,rl->jl", y, y**2), atol=1e-10)
    np.testing.assert_allclose(c4, np.einsum("rl,rk->lk", y**2, y**2), atol=1e-10)


def test_only_count_if_indicators_are_recognised():
    q = Query({"a": "count_if(x > 1)", "b": "count_if(c = 'a')"})
    assert indicator_conditions([s.row_parsed for s in q.statistics]) is not None
    for other in ("sum(x)", "count(*)", "count(x)", "avg(CAST(x > 1 AS INTEGER))"):
        q = Query({"a": "count_if(x > 1)", "b": other})
        assert indicator_conditions([s.row_parsed for s in q.statistics]) is None


def test_the_lattices_of_counts_come_from_one_aggregate_pass_as_from_the_rows(monkeypatch):
    from distpriv.modeling import lattice

    frame = _frame(800, 4)
    # Bins with rows, two empty outer cells and a count holding every row (a constant 1).
    stats = {**histogram_cells("x", edges=[0, 30, 1000]).query(), "all": "count_if(x >= 0)"}
    fast = lattice.query_lattices(frame, Query(stats), 50)

    def rows_only(table, query):
        return None

    monkeypatch.setattr(lattice, "_indicator_values", rows_only)
    slow = lattice.query_lattices(frame, Query(stats), 50)
    assert fast == slow
    assert [lat.step for lat in fast] == [1, 1, None, None, None]  # empty or constant: none


def test_an_overlap_after_the_probed_rows_is_found_by_the_full_pass():
    frame = _frame(3000, 5)
    frame["i"] = np.arange(len(frame))
    stats = histogram_cells("x", bins=STREAM_FROM, range=[0, 90]).query()
    # Disjoint on the first 1,000 rows (the probe), overlapping a bin further down.
    stats["late"] = "count_if(i >= 2000 AND x < 20)"
    got = _moments(frame, stats)
    assert "per stratum and cell" not in got.how
    mean, cross, _, _ = _reference(frame, stats, False)
    np.testing.assert_allclose(got.b.mean, mean, rtol=1e-12)
    np.testing.assert_allclose(got.b.cross, cross, rtol=1e-9, atol=1e-8)


@pytest.mark.parametrize("replace", [True, False])
def test_drawn_cell_counts_have_the_law_of_the_drawn_rows(replace):
    from distpriv.modeling.secrets import ProportionSecret
    from distpriv.modeling.strata import StratifiedSampler

    frame = _frame(600, 6)
    q = Query(histogram_cells("x", bins=STREAM_FROM, range=[0, 90]).query())
    secret = ProportionSecret("g = 1", [0.3, 0.5])
    n, draws = 40, 40_000
    fast = StratifiedSampler(frame, q, secret, n, replace=replace, only_values=True)
    rows = StratifiedSampler(frame, q, secret, n, replace=replace)
    assert fast.features is None and rows.features is not None  # no rows x m array
    for index in range(2):
        a = fast.draw(index, draws, np.random.default_rng(7))
        b = rows.draw(index, draws, np.random.default_rng(8))
        assert np.all(a.sum(axis=1) == n)  # the cells partition every drawn dataset
        # Same law: means within 5 standard errors, covariances close (both estimated).
        se = np.sqrt(np.var(b, axis=0) * 2 / draws) + 1e-12
        assert np.max(np.abs(a.mean(axis=0) - b.mean(axis=0)) / se) < 5
        np.testing.assert_allclose(np.cov(a.T), np.cov(b.T), atol=0.05 * np.max(np.var(b, axis=0)))


def test_a_200_cell_histogram_model_is_the_multinomial_law_of_its_strata():
    """The data path at m = 200 (one statement of m² aggregates crashed DuckDB from
    m = 177): the model's mean and covariance against the closed form of counts of n rows
    drawn i.i.d. from each stratum, from the strata's cell shares computed by numpy."""
    from distpriv.modeling import model_query
    from distpriv.modeling.secrets import ProportionSecret

    frame = _frame(6000, 9)
    cells = histogram_cells("x", bins=198, range=[0, 99])
    n = 50
    secret = ProportionSecret("g = 1", [0.4, 0.6])
    model = model_query(frame, cells.query(), secret, subset_size=n, bootstrap=None)
    assert model.means.shape == (2, 200)
    edges = np.histogram_bin_edges([0, 99], bins=198, range=(0, 99))
    for i, p in enumerate((0.4, 0.6)):
        mean, cov = np.zeros(200), np.zeros((200, 200))
        for rows, k in (
            (frame[frame.g == 1], round(p * n)),
            (frame[frame.g == 0], n - round(p * n)),
        ):
            x = rows.x.to_numpy()
            share = np.append(np.histogram(x, edges)[0], [(x < 0).sum(), (x > 99).sum()]) / len(x)
            mean += k * share
            # i.i.d. rows from a population the table samples: the unbiased (N − 1) estimate.
            cov += k * (np.diag(share) - np.outer(share, share)) * len(x) / (len(x) - 1)
        np.testing.assert_allclose(model.means[i], mean, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(model.covariances[i], cov, rtol=1e-10, atol=1e-12)
        assert abs(model.means[i].sum() - n) < 1e-9  # the counts sum to n
