"""The price per statistic before releasing: pipeline.price.table.
References: the library's calibration run by hand on hand-sliced models, R² by regression
(not the inverse-covariance formula the module uses). ``distpriv verify`` on the clinic
case (sklearn's breast-cancer table): tests/pipeline/test_price_clinic.py."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import distpriv as dp
from distpriv import GaussianQueryModel, calibrate
from distpriv.moment_uncertainty import MomentUncertainty
from distpriv.pipeline.price.table import price_report

EPS, DELTA = 1.0, 1e-3


def _model(rng, m=4, collinear=True, uncertainty=True):
    """Two hypotheses (one stratum each), statistic 1 nearly a copy of statistic 0."""
    a = rng.normal(size=(m + 30, m))
    if collinear:
        a[:, 1] = a[:, 0] + 0.05 * a[:, 1]
    row = a.T @ a / (m + 30)
    rows = np.array([row, row * 1.1])
    unc = MomentUncertainty([800, 800], 100 * np.eye(2), rows, np.full((2, m), 3.0))
    mu0 = rng.normal(size=m)
    d = rng.normal(size=m)
    covs = 100 * rows
    d *= 25.0 / np.sqrt(d @ np.linalg.solve(covs[0], d))
    return GaussianQueryModel(
        [mu0, mu0 + d],
        covs,
        statistics=[f"s{k}" for k in range(m)],
        uncertainty=unc if uncertainty else None,
    )


def quiet(name, model, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return calibrate(name, model, epsilon=EPS, delta=DELTA, **kw)


def _r2_by_regression(cov, k):
    rest = [j for j in range(cov.shape[0]) if j != k]
    coef = np.linalg.solve(cov[np.ix_(rest, rest)], cov[rest, k])
    return float(cov[k, rest] @ coef / cov[k, k])


def test_price_rows_against_hand_calibrations():
    model = _model(np.random.default_rng(1))
    mech = quiet("expm-g", model)
    rep = price_report(model, mech)
    m = model.dim
    sd = np.sqrt(np.diag(mech.noise_covariance))
    spread = np.sqrt(np.mean([np.diag(c) for c in model.covariances], axis=0))
    plain = quiet("expm-g", model, beta=None)
    pooled = np.mean(model.covariances, axis=0)
    for k, row in enumerate(rep.rows):
        assert row.noise_sd == pytest.approx(sd[k], rel=1e-12)
        assert row.noise_to_spread == pytest.approx(sd[k] / spread[k], rel=1e-12)
        assert row.noise_sd_fitted == pytest.approx(np.sqrt(plain.noise_covariance[k, k]))
        assert row.r_squared == pytest.approx(_r2_by_regression(pooled, k), abs=1e-9)
        # Drop-one: the statistic removed by hand, moments and uncertainty sliced.
        keep = [j for j in range(m) if j != k]
        unc = model.uncertainty
        sub = GaussianQueryModel(
            model.means[:, keep],
            model.covariances[:, keep][:, :, keep],
            uncertainty=MomentUncertainty(
                unc.stratum_sizes,
                unc.weights,
                unc.row_covariances[:, keep][:, :, keep],
                unc.kurtosis[:, keep],
            ),
        )
        others = quiet("expm-g", sub)
        want = 1.0 - np.trace(others.noise_covariance) / np.sum(sd[keep] ** 2)
        assert row.drop_saving == pytest.approx(want, abs=1e-9)
    # The yardsticks: the gap across the secret's values, the typical value, the variance
    # ratio, and the condition number of the pooled correlation (numpy's cond).
    for k, row in enumerate(rep.rows):
        assert row.gap == pytest.approx(abs(model.means[1, k] - model.means[0, k]), rel=1e-12)
        assert row.value == pytest.approx(model.means[:, k].mean(), rel=1e-12)
        var = [c[k, k] for c in model.covariances]
        assert row.variance_ratio == pytest.approx(max(var) / min(var), rel=1e-12)
        assert row.noise_sd_weighted is None  # expm-g takes no weights: nothing to probe
    d = np.sqrt(np.diag(pooled))
    assert rep.condition == pytest.approx(np.linalg.cond(pooled / np.outer(d, d)), rel=1e-8)
    # The population premise costs something here, and the report says how much.
    assert rep.mse_fitted == pytest.approx(plain.mse())
    assert rep.mse > rep.mse_fitted
    assert any("population premise" in line for line in rep.lines)
    # Statistics 0 and 1 are nearly collinear, the others not.
    flags = [r.collinear for r in rep.rows]
    assert flags[:2] == [True, True] and not any(flags[2:])
    # Dominated statistics are named in plain words, exactly those with noise > spread.
    for r in rep.rows:
        named = any(line.startswith(f"{r.name}: the noise") for line in rep.lines)
        assert named == (r.noise_sd >= r.spread)
    assert "cannot move" in rep.weights


def test_weights_move_optimal_g_noise_and_the_report_says_so():
    from distpriv import max_mahalanobis_distance

    # Σ = I, gap c(1, 1, 0) with each coordinate alone within D* but not both: the noise
    # can go on s0 or s1. With W = I it splits evenly; a weight of 25 on s1 moves it to s0
    # (measured: Var(Z_1) falls 14-fold, from 0.31 to 0.022).
    c = 0.9 * max_mahalanobis_distance(epsilon=EPS, delta=DELTA)
    model = GaussianQueryModel([[0.0, 0.0, 0.0], [c, c, 0.0]], np.eye(3))
    flat = quiet("optimal-g", model)
    heavy = quiet("optimal-g", model, weights=[1.0, 25.0, 1.0])
    assert flat.noise_covariance[0, 0] == pytest.approx(flat.noise_covariance[1, 1], rel=1e-3)
    assert heavy.noise_covariance[1, 1] < 0.2 * flat.noise_covariance[1, 1]
    assert heavy.noise_covariance[0, 0] > flat.noise_covariance[0, 0]
    rep = price_report(model, heavy)
    assert rep.weights.startswith("weights move the noise of optimal-g")
    assert [r.noise_sd for r in rep.rows] == pytest.approx(
        np.sqrt(np.diag(heavy.noise_covariance)).tolist()
    )
    assert rep.notes and "premise costs nothing" in rep.notes[0]
    # The weight probe, recomputed: s0's weight 10 (the others as calibrated) moves the
    # noise off s0, and the report says so with the measured numbers.
    flat_rep = price_report(model, flat)
    probe = quiet("optimal-g", model, weights=[10.0, 1.0, 1.0])
    s0 = flat_rep.rows[0]
    assert s0.noise_sd_weighted == pytest.approx(np.sqrt(probe.noise_covariance[0, 0]))
    assert s0.weight_effect > 0.5
    assert "measured: a weight 10 times larger on" in flat_rep.weights
    assert "weights do not move" not in flat_rep.weights
    # s2 carries no gap: no noise, nothing for a weight to move.
    assert flat_rep.rows[2].noise_sd == pytest.approx(0.0, abs=1e-9)


def test_weights_move_optimal_g_full_noise():
    # The floored optimal-g: the same trade between s0 and s1 above its floor.
    c = 0.9 * dp.max_mahalanobis_distance(epsilon=EPS, delta=DELTA)
    model = GaussianQueryModel([[0.0, 0.0, 0.0], [c, c, 0.0]], np.eye(3))
    grid = {"lattice": [1e-3, 1e-3, 1e-3]}
    flat = quiet("optimal-g-full", model, **grid)
    heavy = quiet("optimal-g-full", model, weights=[1.0, 25.0, 1.0], **grid)
    assert flat.noise_rank == heavy.noise_rank == 3  # full rank (the floor)
    assert heavy.noise_covariance[1, 1] < 0.2 * flat.noise_covariance[1, 1]
    assert heavy.noise_covariance[0, 0] > flat.noise_covariance[0, 0]
    rep = price_report(model, flat)
    assert rep.weights.startswith("weights move the noise of optimal-g-full")
    probe = quiet("optimal-g-full", model, weights=[1.0, 10.0, 1.0], **grid)
    assert rep.rows[1].noise_sd_weighted == pytest.approx(np.sqrt(probe.noise_covariance[1, 1]))
    assert rep.rows[1].weight_effect > 0.5


def test_a_statistic_that_is_the_secret_is_named():
    # The count of rows with the property in a 100-row dataset at share 0.30 or 0.45 is
    # 30 or 45 exactly: no spread, a gap of 15. Publishing it publishes the secret.
    cov = np.diag([4.0, 0.0])
    model = GaussianQueryModel([[10.0, 30.0], [11.0, 45.0]], [cov, cov], statistics=["s0", "s1"])
    mech = quiet("expm-g", model)
    rep = price_report(model, mech)
    count = rep.rows[1]
    assert count.spread == 0 and count.gap == 15 and count.reveals_secret
    assert count.to_dict()["noise_to_spread"] is None  # inf, JSON-safe
    (line,) = [x for x in rep.lines if x.startswith("s1: the noise")]
    assert "must hide the secret itself" in line and "moves by 15" in line
    assert not rep.rows[0].reveals_secret


def test_release_html_does_not_publish_the_price(tmp_path):
    # noise / spread is curator-private (pipeline.report.noise_to_spread): the public page
    # of a release carries no price table.
    import shutil
    from pathlib import Path

    from distpriv.pipeline import run_release
    from distpriv.report.html import release_page

    src = Path(__file__).resolve().parents[2] / "examples" / "hospital"
    for f in src.iterdir():
        if f.suffix in (".csv", ".toml"):
            shutil.copy(f, tmp_path / f.name)
    outcome = run_release(tmp_path / "hospital.toml", insecure_seed=3, ledger=False)
    public, page = release_page(outcome, epsilons=(2.0,))
    assert "price" not in public
    assert '<section id="price">' not in page and "noise_to_spread" not in page


def test_noise_between_the_gap_and_the_spread_stays_informative():
    # s0 varies a lot across datasets (sd 10) and the secret moves it by 2; s1 (sd 1) by 2.
    # ExpM's isotropic noise, sized by s1, lands between s0's gap and its spread.
    model = GaussianQueryModel(
        [[0.0, 0.0], [2.0, 2.0]], np.diag([100.0, 1.0]), statistics=["s0", "s1"]
    )
    rep = price_report(model, quiet("expm-g", model))
    s0, s1 = rep.rows
    assert s0.gap <= s0.noise_sd < s0.spread  # the case, checked on the numbers
    assert not s0.dominated and s1.dominated
    (line,) = [x for x in rep.lines if x.startswith("s0")]
    assert line.startswith("s0 stays informative")
    assert f"{s0.noise_sd / 2.0:.3g} times its spread across the secret's values" in line
    assert any(x.startswith("s1: the noise") for x in rep.lines)


def test_what_if_calibrations_are_certified_and_do_not_leak_into_strict_checks():
    """The price table's recalibrations check at the search's accuracy
    (population.exact.what_if_accuracy): still certified (the strict accountant confirms the
    noise), equal to the strict calibration to its resolution, and a check remembered in
    the block never answers a strict one outside it."""
    from distpriv.accounting.calibration_cache import shared_calibration
    from distpriv.population.confidence import population_model
    from distpriv.population.exact import _WHAT_IF, pair_deltas, what_if_accuracy

    model = _model(np.random.default_rng(5))
    strict = quiet("expm-g", model)
    with what_if_accuracy():
        loose = quiet("expm-g", model)
    assert _WHAT_IF.get() is False
    assert loose.mse() == pytest.approx(strict.mse(), rel=1e-5)
    assert loose.mse() >= strict.mse() * (1 - 1e-9)  # never less noise than the least
    # The strict accountant on the set's worst members for the what-if noise: it passes.
    members = population_model(model, beta=0.05, noise_cov=loose.noise_covariance, epsilon=EPS)
    assert pair_deltas(members, loose.noise_covariance, epsilon=EPS, screen=DELTA).worst <= DELTA

    noise = 0.5 * strict.noise_covariance
    fresh = pair_deltas(model, noise, epsilon=EPS, screen=DELTA)
    with shared_calibration() as cache:
        with what_if_accuracy():
            rough = pair_deltas(model, noise, epsilon=EPS, screen=DELTA)
        again = pair_deltas(model, noise, epsilon=EPS, screen=DELTA)
        # two checks remembered, at two accuracies: the strict one was computed, not
        # answered by the what-if one
        accuracies = sorted(key[3] for key in cache.pair_checks)
    assert accuracies == [1e-12, DELTA * 1e-4]
    assert np.array_equal(again.deltas, fresh.deltas)
    assert again.error_bound == fresh.error_bound
    # a certified bound either way
    assert np.all(rough.deltas + rough.error_bound >= fresh.deltas - fresh.error_bound)
