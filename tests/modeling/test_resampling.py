"""Chunked Monte Carlo: exact subset sampler for every k, streamed moments, row pools."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from scipy import stats

from adult_setup import ADULT_QUERY, INCOME
from distpriv import DistPrivError
from distpriv.modeling import model_query
from distpriv.modeling.resampling import MomentAccumulator, draw_pool, monte_carlo
from distpriv.modeling.sampling import chunk_rows, sample_subsets, subset_chunks
from distpriv.modeling.strata import StratifiedSampler
from distpriv.modeling.tables import as_table

# ---------------------------------------------------------------------------------------------
# The subset sampler: exact and uniform in every regime of k against N
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("population", "size"),
    [(7, 3), (7, 4), (8, 5), (9, 9), (5, 1)],  # k² > N with k ≤ N/2, the complement, k = N
)
def test_every_subset_and_order_equally_likely(population, size):
    rng = np.random.default_rng(11)
    count = 40_000
    draws = sample_subsets(population, size, count, rng)
    srt = np.sort(draws, axis=1)
    assert np.all(srt[:, 1:] != srt[:, :-1])
    assert draws.min() >= 0 and draws.max() < population
    if size < population:
        keys, counts = np.unique(srt, axis=0, return_counts=True)
        assert len(keys) == len(list(itertools.combinations(range(population), size)))
        assert stats.chisquare(counts).pvalue > 1e-4
    # ordered=True: the first position is uniform over the population too.
    assert stats.chisquare(np.bincount(draws[:, 0], minlength=population)).pvalue > 1e-4


@pytest.mark.parametrize(("population", "size"), [(2000, 300), (2000, 1500), (50_000, 2000)])
def test_inclusion_frequencies_uniform_beyond_the_old_cliff(population, size):
    # k² ≫ N here: the regime where the old sampler switched to N keys per subset.
    rng = np.random.default_rng(3)
    count = 200 if population == 50_000 else 2000
    draws = sample_subsets(population, size, count, rng, ordered=False)
    assert np.all(np.diff(np.sort(draws, axis=1), axis=1) > 0)
    freq = np.bincount(draws.ravel(), minlength=population)
    assert freq.sum() == count * size
    assert stats.chisquare(freq).pvalue > 1e-4


def test_subset_chunks_bound_memory_and_total():
    rng = np.random.default_rng(0)
    sizes = [c.shape for c in subset_chunks(10_000, 100, 25_000, rng)]
    assert sum(s[0] for s in sizes) == 25_000
    assert all(s[1] == 100 and s[0] * 100 <= 1 << 20 for s in sizes)
    assert chunk_rows(100) == (1 << 20) // 100 and chunk_rows(10**9) == 1


def test_sampler_edge_cases():
    rng = np.random.default_rng(0)
    assert sample_subsets(5, 0, 3, rng).shape == (3, 0)
    assert sample_subsets(5, 2, 0, rng).shape == (0, 2)
    full = sample_subsets(4, 4, 10, rng, ordered=False)
    assert np.array_equal(np.sort(full, axis=1), np.tile(np.arange(4), (10, 1)))


# ---------------------------------------------------------------------------------------------
# Streamed moments
# ---------------------------------------------------------------------------------------------


def test_moment_accumulator_equals_numpy_with_an_offset():
    rng = np.random.default_rng(1)
    offset = np.array([1e6, -5.0, 0.0, 1e4])
    x = rng.normal(size=(5003, 4)) * [1.0, 10.0, 0.1, 3.0] + offset
    # Subtracting the offset is exact here, so the reference keeps every digit.
    ref = np.cov(x - offset, rowvar=False)
    acc = MomentAccumulator(4)
    for lo, hi in [(0, 1), (1, 2), (2, 700), (700, 700), (700, 5003)]:
        acc.update(x[lo:hi])
    assert acc.count == 5003
    np.testing.assert_allclose(acc.mean, x.mean(axis=0), rtol=1e-14)
    np.testing.assert_allclose(acc.covariance(), ref, rtol=1e-8)
    with pytest.raises(DistPrivError, match="ddof"):
        MomentAccumulator(2).covariance()


def test_draw_chunks_moments_match_the_kept_samples(adult_modeling):
    draws = monte_carlo(adult_modeling, ADULT_QUERY, INCOME, subset_size=100, n_samples=3001, rng=4)
    for t, s in enumerate(draws.samples):
        assert s.shape == (3001, 5)
        np.testing.assert_allclose(draws.means[t], s.mean(axis=0), rtol=1e-12)
        np.testing.assert_allclose(draws.covariances[t], np.cov(s, rowvar=False), rtol=1e-9)
    # Small chunks give the same law: every chunk of the sampler has the right shape.
    sampler = StratifiedSampler(adult_modeling, ADULT_QUERY, INCOME, 100)
    blocks = list(sampler.draw_chunks(0, 50, np.random.default_rng(0), chunk=7))
    assert [b.shape[0] for b in blocks] == [7] * 7 + [1]


# ---------------------------------------------------------------------------------------------
# Same moments as the previous (unchunked) implementation, within Monte Carlo error
# ---------------------------------------------------------------------------------------------


def _previous_sample_subsets(population, size, count, rng):
    """The sampler of commit eb5e882, kept here as the reference."""
    if size * size <= population:
        out = rng.integers(0, population, size=(count, size), dtype=np.int64)
        todo = np.arange(count)
        while todo.size:
            srt = np.sort(out[todo], axis=1)
            dup = np.any(srt[:, 1:] == srt[:, :-1], axis=1)
            todo = todo[dup]
            out[todo] = rng.integers(0, population, size=(todo.size, size), dtype=np.int64)
        return out
    keys = rng.random((count, population))
    return np.argpartition(keys, size - 1, axis=1)[:, :size]


def _previous_draws(sampler, index, count, rng):
    """eb5e882's StratifiedSampler.draw: all (count, n, m) features at once."""
    k = sampler.counts[index]
    pick = np.concatenate(
        [
            sampler.rows_a[_previous_sample_subsets(sampler.rows_a.size, k, count, rng)],
            sampler.rows_b[
                _previous_sample_subsets(sampler.rows_b.size, sampler.n - k, count, rng)
            ],
        ],
        axis=1,
    )
    return sampler.features[pick].sum(axis=1) * sampler.scale


@pytest.mark.filterwarnings("ignore::distpriv.AssumptionWarning")
def test_chunked_montecarlo_matches_previous_implementation(adult_modeling, adult_analytic):
    s = 20_000
    new = model_query(
        adult_modeling,
        ADULT_QUERY,
        INCOME,
        subset_size=100,
        method="montecarlo",
        n_samples=s,
        rng=5,
    )
    sampler = StratifiedSampler(adult_modeling, ADULT_QUERY, INCOME, 100)
    rng = np.random.default_rng(6)
    for t in range(2):
        old = _previous_draws(sampler, t, s, rng)
        x = new.samples[t]
        # Two independent estimates: the difference of means has sd √(2 Σ_kk / S) under the
        # exact covariance; 5 sd per entry.
        sd_mean = np.sqrt(2.0 * np.diag(adult_analytic.covariances[t]) / s)
        assert np.all(np.abs(new.means[t] - old.mean(axis=0)) < 5 * sd_mean)
        # Covariances: each entry's sd is that of the centred products / √S, for each.
        sd_cov = np.zeros((5, 5))
        for y in (x, old):
            c = y - y.mean(axis=0)
            sd_cov += (c[:, :, None] * c[:, None, :]).var(axis=0) / s
        assert np.all(np.abs(new.covariances[t] - np.cov(old, rowvar=False)) < 5 * np.sqrt(sd_cov))
    assert new.sampling.method == "full" and new.sampling.exact
    assert new.to_dict()["sampling"]["sampling"] == "full"


# ---------------------------------------------------------------------------------------------
# Row pools
# ---------------------------------------------------------------------------------------------


def test_pool_model_is_reported_and_close(adult_modeling, adult_analytic):
    model = model_query(
        adult_modeling,
        ADULT_QUERY,
        INCOME,
        subset_size=100,
        method="montecarlo",
        n_samples=4000,
        rng=7,
        pool_size=3000,
    )
    info = json.loads(json.dumps(model.to_dict()))["sampling"]
    assert info["sampling"] == "pool" and info["pool_size"] == 3000
    assert info["pool_strata_sizes"] == [3000, 3000] and not info["exact"]
    assert "approximate" in info["note"] and "pool" in model.fitted
    # The table's strata, not the pool's, are reported.
    assert model.stratum_sizes == adult_analytic.stratum_sizes
    assert sum(model.stratum_sizes) == len(adult_modeling)
    # Each draw is exactly uniform over the strata; the shared pool adds an error of relative
    # order 1/√pool to the mean's sd (on top of the Monte Carlo error): 6 (sd_mc + sd_pool).
    for t in range(2):
        sd = np.sqrt(np.diag(adult_analytic.covariances[t]))
        tol = 6 * (sd / np.sqrt(4000) + sd * np.sqrt(100 / 3000))
        assert np.all(np.abs(model.means[t] - adult_analytic.means[t]) < tol)
        ratio = np.diag(model.covariances[t]) / np.diag(adult_analytic.covariances[t])
        assert np.all(np.abs(ratio - 1) < 0.2)


def test_pool_holding_whole_strata_is_exact_and_uniform_rows(adult_modeling):
    small = adult_modeling.iloc[:400]
    table = as_table(small)
    pool, sizes, pooled = draw_pool(table, INCOME, pool_size=10_000, rng=np.random.default_rng(0))
    assert pooled == sizes and pool.n_rows == 400
    model = model_query(
        small,
        ADULT_QUERY,
        INCOME,
        subset_size=20,
        method="montecarlo",
        n_samples=50,
        rng=0,
        pool_size=10_000,
    )
    assert model.sampling.exact and model.sampling.method == "pool"
    # Rows of a proper pool are a uniform sample of their stratum: inclusion frequencies.
    ids = as_table(small.assign(rid=np.arange(400)))
    mask = ids.predicate(INCOME.predicate, "predicate")
    freq = np.zeros(400)
    rng = np.random.default_rng(1)
    for _ in range(40):
        pool, _, pooled = draw_pool(ids, INCOME, pool_size=60, rng=rng)
        assert pooled == (60, 60)
        assert (pool.frame["income"] == ">50K").sum() == 60
        freq[pool.frame["rid"].to_numpy()] += 1
    for stratum in (mask, ~mask):
        assert np.all(freq[stratum] >= 0)
        assert stats.chisquare(freq[stratum]).pvalue > 1e-4


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"pool_size": 50, "method": "montecarlo"}, "pool_size=50 is smaller than subset_size=100"),
        ({"pool_size": 0, "method": "montecarlo"}, "pool_size"),
        # The default method is analytic: a pool is refused without montecarlo.
        ({"pool_size": 500}, "applies only to method='montecarlo'"),
        ({"pool_size": 500, "method": "analytic"}, "applies only to method='montecarlo'"),
    ],
)
def test_pool_bad_input(adult_modeling, kwargs, match):
    with pytest.raises(DistPrivError, match=match):
        model_query(adult_modeling, ADULT_QUERY, INCOME, subset_size=100, n_samples=10, **kwargs)


def test_pool_from_a_table_larger_than_memory_is_drawn_in_the_engine(
    adult_modeling, tmp_path, monkeypatch
):
    # With the in-memory row limit below the table's size, any load of the whole table
    # raises; the pool must come from reservoir samples drawn in the engine.
    from distpriv.modeling import tables

    path = tmp_path / "big.parquet"
    adult_modeling.iloc[:400].assign(rid=np.arange(400)).to_parquet(path)
    monkeypatch.setattr(tables, "MAX_IN_MEMORY_ROWS", 100)
    with pytest.raises(DistPrivError, match="holds at most 100"):
        as_table(str(path)).frame  # noqa: B018
    model = model_query(
        str(path),
        ADULT_QUERY,
        INCOME,
        subset_size=20,
        method="montecarlo",
        n_samples=50,
        rng=0,
        pool_size=60,
    )
    assert model.sampling.method == "pool" and model.sampling.pool_strata_sizes == (60, 60)
    assert sum(model.stratum_sizes) == 400
    # Inclusion frequencies of the engine's reservoir samples are uniform per stratum.
    table = as_table(str(path))
    mask = (adult_modeling.iloc[:400]["income"] == ">50K").to_numpy()
    freq = np.zeros(400)
    rng = np.random.default_rng(2)
    for _ in range(40):
        pool, sizes, pooled = draw_pool(table, INCOME, pool_size=60, rng=rng)
        assert pooled == (60, 60) and sizes == (int(mask.sum()), int((~mask).sum()))
        rid = pool.frame["rid"].to_numpy()
        assert np.all(mask[rid[:60]]) and not np.any(mask[rid[60:]])
        assert len(set(rid)) == 120  # without replacement
        freq[rid] += 1
    for stratum in (mask, ~mask):
        assert stats.chisquare(freq[stratum]).pvalue > 1e-4
