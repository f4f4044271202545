"""The bootstrap population layer of Monte Carlo models of non-linear statistics.

The bootstrap's spread is checked against an independent reference: the spread of the
fitted model itself over modelling tables drawn independently from the real population
(Adult), which is what the bootstrap estimates from one table.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import distpriv as dp
from distpriv import BootstrapUncertainty, MomentUncertainty
from distpriv.datasets.adult import load_adult
from distpriv.errors import ParameterError
from distpriv.modeling import ProportionSecret, model_query
from distpriv.population.confidence import marginal, population_model

SECRET = ProportionSecret("income = '>50K'", values=[0.45, 0.55])
QUANTILES = {"median_age": "median(age)", "q75_hours": "quantile_cont(hours_per_week, 0.75)"}


def _model(frame, query=QUANTILES, **kw):
    opts = {"subset_size": 100, "method": "montecarlo", "n_samples": 200, "rng": 1}
    opts.update(kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model_query(frame, query, SECRET, **opts)


@pytest.fixture(scope="module")
def adult():
    return load_adult()


@pytest.fixture(scope="module")
def sample(adult):
    return adult.sample(1500, random_state=2)


def test_non_linear_models_get_the_layer(sample):
    model = _model(sample, bootstrap=20)
    unc = model.uncertainty
    assert isinstance(unc, BootstrapUncertainty)
    assert unc.gap_covariances.shape == (1, 2, 2) and unc.log_variance_sd.shape == (1, 2, 2)
    assert unc.resamples == 20 and unc.draws == 200
    assert np.all(np.linalg.eigvalsh(unc.gap_covariances[0]) > 0)
    # Seeded: the same rng gives the same layer.
    again = _model(sample, bootstrap=20)
    np.testing.assert_array_equal(again.uncertainty.gap_covariances, unc.gap_covariances)
    # No layer when switched off, when the table is the population, and the linear
    # statistics keep their closed-form layer.
    assert _model(sample, bootstrap=None).uncertainty is None
    assert _model(sample, bootstrap=20, population=True).uncertainty is None
    linear = _model(sample, query={"avg_age": "avg(age)"}, bootstrap=20)
    assert isinstance(linear.uncertainty, MomentUncertainty)
    restored = BootstrapUncertainty.from_dict(unc.to_dict())
    np.testing.assert_array_equal(restored.log_variance_sd, unc.log_variance_sd)


@pytest.mark.parametrize("bad", [0, 19, 5.0, True, "50"])
def test_too_few_resamples_are_refused(sample, bad):
    with pytest.raises(ParameterError, match="bootstrap"):
        _model(sample, bootstrap=bad)


def test_bootstrap_spread_matches_the_spread_over_independent_tables(adult):
    rng = np.random.default_rng(8)
    gaps, est = [], []
    for _ in range(16):
        table = adult.iloc[rng.choice(len(adult), 1500, replace=False)]
        model = _model(table, rng=rng, bootstrap=20)
        gaps.append(model.means[0] - model.means[1])
        est.append(np.sqrt(np.diag(model.uncertainty.gap_covariances[0])))
    ratio = np.mean(est, axis=0) / np.std(gaps, axis=0, ddof=1)
    print(f"\nbootstrap sd / sd over independent tables: {np.round(ratio, 3)}")
    # 16 tables give the reference sd to about ±18 % (1 sd); the bootstrap must be neither
    # a fraction of it (under-coverage) nor a multiple (a vacuous set).
    assert np.all(ratio > 0.6) and np.all(ratio < 1.7)


def test_calibration_covers_the_set_and_says_so(sample):
    model = _model(sample, bootstrap=20)
    covered = dp.calibrate("expm-g", model, epsilon=1.0, delta=1e-3)
    fitted = dp.calibrate("expm-g", model, epsilon=1.0, delta=1e-3, beta=None)
    assert covered.noise.mse() > fitted.noise.mse()
    premise = covered.guarantee.premises[-1]
    assert "bootstrap consistency" in premise.statement
    assert "20 resamples" in premise.detail
    assert "not covered" in fitted.guarantee.premises[-1].statement
    # Every member of the set meets the claim with the published noise (both directions).
    members = population_model(model, beta=0.05, noise_cov=covered.noise_covariance)
    assert len(members.pairs) == 4
    worst = 0.0
    for i, j in members.pairs:
        for a, b in ((i, j), (j, i)):
            worst = max(
                worst,
                dp.accounting.gaussian_pair_delta(
                    members.means[a],
                    members.covariances[a] + covered.noise_covariance,
                    members.means[b],
                    members.covariances[b] + covered.noise_covariance,
                    epsilon=1.0,
                ),
            )
    assert worst <= 1e-3 * (1 + 1e-6)
    sub = marginal(model, np.array([1]))
    assert isinstance(sub.uncertainty, BootstrapUncertainty) and sub.uncertainty.dim == 1


def test_ledger_composition_reads_the_bootstrap_set(sample):
    from distpriv.composition.accountant import _on_population

    model = _model(sample, bootstrap=20)
    noise = np.eye(2) * 4.0
    eps, _, rows = _on_population(model, noise, 0.05, 1e-3, None)
    plain, _, _ = _on_population(model, noise, None, 1e-3, None)
    assert len(rows) == 2 and eps >= plain


def test_common_positions_are_prefixes_of_one_iid_array():
    from distpriv.modeling.bootstrap import common_positions

    counts, n, sizes = (45, 55), 100, (300, 900)
    pos = common_positions(counts, n, sizes, 4000, np.random.default_rng(0))
    (a0, b0), (a1, b1) = pos
    assert a0.shape == (4000, 45) and b0.shape == (4000, 55)
    assert a1.shape == (4000, 55) and b1.shape == (4000, 45)
    # Value 0's A rows are value 1's first 45; value 1's B rows value 0's first 45.
    np.testing.assert_array_equal(a1[:, :45], a0)
    np.testing.assert_array_equal(b0[:, :45], b1)
    # Each position is uniform on its stratum (each value's law is unchanged): the share
    # of the lower half is 1/2 within 5 binomial standard errors.
    for arr, size in ((a1, sizes[0]), (b0, sizes[1])):
        assert arr.min() >= 0 and arr.max() < size
        share = float(np.mean(arr < size // 2))
        assert abs(share - 0.5) < 5 * np.sqrt(0.25 / arr.size)


def test_the_values_share_rows_so_their_draws_are_correlated(sample):
    # Common random numbers: dataset r of both values shares 90 of its 100 rows, so the
    # two values' draws of a median are strongly correlated (independent draws: about 0,
    # within 4/sqrt(200) = 0.28).
    model = _model(sample, bootstrap=20)
    s0, s1 = model.samples
    for k in range(s0.shape[1]):
        assert np.corrcoef(s0[:, k], s1[:, k])[0, 1] > 0.5
    # The fitted model is member 0 of the same positions: its moments are those draws'.
    np.testing.assert_allclose(model.means, np.stack([s0.mean(axis=0), s1.mean(axis=0)]))
    assert "common random numbers" in model.fitted
