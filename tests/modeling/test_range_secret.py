"""Range secrets: the grid, the pruning's proofs, and the released noise's
true δ against Monte Carlo of real Adult subsets at pairs across the range."""

from __future__ import annotations

import numpy as np
import pytest

import distpriv as dp
from distpriv.accounting import gaussian_pair_profile
from distpriv.accounting.pair_screen import renyi_delta_bounds
from distpriv.errors import ParameterError
from distpriv.modeling import ProportionSecret, model_query
from distpriv.population import exact as exact_mod
from distpriv.population import pair_pruning
from distpriv.population.exact import pair_deltas
from distpriv.querymodel import GaussianQueryModel
from support import quiet

from ._real_subsets import PREDICATE, STATS, adult_features, mc_delta, subsets

# -- the grid ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", [50, 100, 137])
def test_grid_is_every_multiple_in_range_and_pairs_within(n):
    s = ProportionSecret("x > 0", range=(0.2, 0.6), within=0.05).grid(n)
    brute = [k / n for k in range(n + 1) if 0.2 - 1e-9 <= k / n <= 0.6 + 1e-9]
    assert list(s.values) == brute
    want = {(a, b) for a in brute for b in brute if a < b and b - a <= 0.05 + 1e-9}
    assert set(s.pairs) == want
    assert s.counts(n) == tuple(round(v * n) for v in brute)


def test_listed_values_unchanged_and_range_reported():
    old = ProportionSecret("x > 0", values=[0.45, 0.55])
    assert old.pairs == ((0.45, 0.55),) and old.value_range is None
    assert "range" not in old.to_dict()
    wide = ProportionSecret("x > 0", range=[0.2, 0.6], within=0.05)
    assert wide.is_grid and wide.values == ()
    g = wide.grid(100)
    assert g.to_dict()["range"] == [0.2, 0.6] and "between 0.2 and 0.6" in g.describe()
    assert g.grid(100) is g  # materialised once


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"range": (0.2, 0.205)}, "only the value 0.2"),
        ({"range": (0.201, 0.205)}, "no value"),
        ({"range": (0.6, 0.2)}, "low < high"),
        ({"range": (0.2, 0.6), "within": 0.001}, "within=0.001"),
        ({"range": (0.2, 0.6), "values": [0.2, 0.3]}, "either values or range"),
        ({"range": (0.2, 1.5)}, "range"),
    ],
)
def test_range_errors_name_the_parameter(kwargs, match):
    with pytest.raises(ParameterError, match=match):
        ProportionSecret("x > 0", **kwargs).grid(100)


# -- the screen and the domination: upper bounds, never below the exact profile ---------


def test_renyi_screen_never_below_the_exact_profile():
    rng = np.random.default_rng(7)
    p, m = 120, 4
    a = rng.normal(size=(p, m, m))
    s1 = a @ a.transpose(0, 2, 1) / m + 0.3 * np.eye(m)
    b = rng.normal(size=(p, m, m)) * rng.uniform(0.05, 0.5, size=(p, 1, 1))
    s2 = s1 + b @ b.transpose(0, 2, 1) / m
    mu = rng.normal(size=(p, m)) * rng.uniform(0.05, 1.0, size=(p, 1))
    eps = 1.0
    bounds = renyi_delta_bounds(mu, s1, np.zeros((p, m)), s2, epsilon=eps)
    checked = 0
    for k in range(p):
        for d, (x, y) in enumerate(((0, 1), (1, 0))):
            mus, covs = (mu[k], np.zeros(m)), (s1[k], s2[k])
            exact = gaussian_pair_profile(mus[x], covs[x], mus[y], covs[y], epsilon=eps)
            if exact.estimate > 1e-10:  # where the accountant's value is not its tolerance
                checked += 1
                assert bounds[k, d] >= exact.estimate
    assert checked > 100


def test_equal_covariance_parallel_pairs_are_dominated_by_the_longest():
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    v = np.array([1.0, -0.5])
    means = np.array([t * v for t in range(8)])
    pairs = [(i, j) for i in range(8) for j in range(i + 1, 8) if j - i <= 3]
    model = GaussianQueryModel(means, np.stack([cov] * 8), pairs, labels=list(range(8)))
    rep = pair_pruning.dominating_pairs(model)
    assert sum(rep == np.arange(len(pairs))) == 1  # one gap of 3 represents them all
    noise = np.diag([0.5, 3.0])
    full = pair_deltas(model, noise, epsilon=1.0)
    pruned = pair_deltas(model, noise, epsilon=1.0, screen=1e-3)
    assert np.all(pruned.deltas >= full.deltas - 1e-15)
    assert pruned.worst == pytest.approx(full.worst, rel=1e-12)


# -- calibration of a range on Adult ----------------------------------------------------


@pytest.fixture(scope="module")
def adult():
    return adult_features()


@pytest.fixture(scope="module")
def range_model():
    from distpriv.datasets.adult import load_adult

    table = load_adult().sample(5000, random_state=0)
    secret = ProportionSecret(PREDICATE, range=(0.2, 0.6), within=0.05)
    return quiet(model_query, table, STATS, secret, subset_size=100)


def test_range_model_has_every_grid_pair(range_model):
    assert len(range_model.labels) == 41 and len(range_model.pairs) == 190


def test_pruned_calibration_is_the_full_calibration(range_model, monkeypatch):
    """The active set and the screen change the work, not the answer: the least scale is
    the one found on every pair with the exact profile only (fitted moments, β = None)."""
    fast = quiet(dp.calibrate, "expm-g", range_model, epsilon=1.0, delta=1e-3, beta=None)
    monkeypatch.setattr(exact_mod, "_ACTIVE_MIN", 10**9)
    monkeypatch.setattr(pair_pruning, "screened_profiles", lambda *a, **k: {})
    monkeypatch.setattr(pair_pruning, "dominating_pairs", lambda m: np.arange(len(m.pairs)))
    slow = quiet(dp.calibrate, "expm-g", range_model, epsilon=1.0, delta=1e-3, beta=None)
    a, b = fast.noise_covariance[0, 0], slow.noise_covariance[0, 0]
    assert a == pytest.approx(b, rel=1e-4)
    check = pair_deltas(range_model, fast.noise_covariance, epsilon=1.0)  # exact, every pair
    assert check.worst <= 1e-3


@pytest.mark.parametrize("pair", [(0.2, 0.25), (0.38, 0.43), (0.55, 0.6)])
def test_true_delta_on_real_subsets_across_the_range(range_model, adult, pair):
    """Released noise (expm-g, exact, on the population set β = 0.05) against Monte Carlo of
    real Adult subsets with each count (rows drawn i.i.d. from the whole table's strata:
    the population premise), both directions: no violation beyond Monte Carlo error."""
    mech = quiet(dp.calibrate, "expm-g", range_model, epsilon=1.0, delta=1e-3)
    x, rows_a, rows_b = adult
    rng = np.random.default_rng(sum(int(p * 100) for p in pair))
    ka, kb = (round(p * 100) for p in pair)
    draw = lambda k, size: subsets(x, rows_a, rows_b, np.full(size, k), rng)  # noqa: E731
    dens = {k: draw(k, 2000) for k in (ka, kb)}
    for p, q in ((ka, kb), (kb, ka)):
        est, se = mc_delta(dens[p], dens[q], draw(p, 10000), mech.noise_covariance, 1.0, rng)
        assert est <= 1e-3 + 4 * se + 1e-4, (pair, p, est, se)


def test_real_subset_reference_reads_zero_on_a_null(range_model, adult):
    """The reference is valid at this noise: two independent draws of the same value (true
    δ = 0) read 0 within Monte Carlo error. (With noise at a tenth of the statistics' spread
    it reads ≈ 0.4 on such a null — kernels too narrow to overlap — so it is used only for
    full-rank noise comparable to the spread, as expm-g's is.)"""
    mech = quiet(dp.calibrate, "expm-g", range_model, epsilon=1.0, delta=1e-3)
    x, rows_a, rows_b = adult
    rng = np.random.default_rng(5)
    draw = lambda size: subsets(x, rows_a, rows_b, np.full(size, 30), rng)  # noqa: E731
    est, se = mc_delta(draw(2000), draw(2000), draw(10000), mech.noise_covariance, 1.0, rng)
    assert est <= 4 * se + 1e-4
    assert np.all(np.diag(mech.noise_covariance) >= draw(2000).var(axis=0) * 0.5)
