"""Calibrations of one call share their pure intermediate results.

``auto`` calibrates every mechanism on the same model; within one call the pair checks,
the population set's members and optimal-g's programs are remembered
(:mod:`distpriv.accounting.calibration_cache`). The reference is the same calibration with
nothing shared: every candidate must come out bit for bit the same, and the chosen
guarantee must be confirmed by the accountant on the published noise.
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest

from distpriv import GaussianQueryModel, max_mahalanobis_distance
from distpriv.accounting import calibration_cache as cc
from distpriv.moment_uncertainty import MomentUncertainty
from distpriv.population.confidence import population_model
from distpriv.population.exact import pair_deltas

EPS, DELTA, BETA = 1.0, 1e-3, 0.05


def wishart_model(m: int, k: int, seed: int = 0) -> GaussianQueryModel:
    """k hypotheses with independent covariances and the moments' uncertainty."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(k):
        x = rng.normal(size=(m + 10, m)) * rng.uniform(0.5, 2.0, size=m)
        rows.append(x.T @ x / (m + 10))
    covs = 100 * np.array(rows)
    dist = max_mahalanobis_distance(epsilon=EPS, delta=DELTA)
    means = [rng.normal(size=m) * 10]
    for _ in range(1, k):
        d = rng.normal(size=m)
        d *= 4.0 * dist / np.sqrt(d @ np.linalg.solve(covs[0], d))
        means.append(means[0] + d)
    unc = MomentUncertainty([4000] * k, 100 * np.eye(k), np.array(rows), np.full((k, m), 3.0))
    return GaussianQueryModel(np.stack(means), covs, uncertainty=unc)


@contextlib.contextmanager
def nothing_shared():
    @contextlib.contextmanager
    def off():
        yield None

    saved = cc.shared_calibration
    cc.shared_calibration = off
    try:
        yield
    finally:
        cc.shared_calibration = saved


def candidates(model, lattice):
    from distpriv.pipeline.stages.calibrate import calibrate_candidates

    names = ("expm-g", "eigm", "apgm", "optimal-g", "daum-floor", "optimal-g-full", "noiseless")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return calibrate_candidates(
            model,
            epsilon=EPS,
            delta=DELTA,
            mechanisms=names,
            options={n: {"lattice": lattice} for n in ("daum-floor", "optimal-g-full")},
        )


@pytest.mark.parametrize(("m", "k"), [(5, 3), (34, 2)])  # generic and structured solver
def test_shared_results_are_bit_for_bit_the_unshared_ones(monkeypatch, m, k):
    model = wishart_model(m, k)
    lattice = [1e-3 if i % 2 == 0 else None for i in range(m)]
    made = []
    init = cc.CalibrationCache.__init__

    def spy(self):
        init(self)
        made.append(self)

    monkeypatch.setattr(cc.CalibrationCache, "__init__", spy)
    shared = candidates(model, lattice)
    assert len(made) == 1 and made[0].hits > 0  # something was shared
    with nothing_shared():
        alone = candidates(model, lattice)
    assert len(made) == 1
    for a, b in zip(shared, alone, strict=True):
        assert a.mechanism == b.mechanism
        assert a.reason == b.reason and a.verified == b.verified
        assert (a.calibrated is None) == (b.calibrated is None)
        if a.calibrated is not None:
            assert a.mse == b.mse
            assert np.array_equal(a.calibrated.noise_covariance, b.calibrated.noise_covariance)
            assert (
                a.calibrated.diagnostics["exact_check"] == b.calibrated.diagnostics["exact_check"]
            )
    # Every verified guarantee is the accountant's verdict on the published noise (checked
    # here with nothing shared, on the worst members of the set for that noise).
    for c in shared:
        if c.verified:
            cov = c.calibrated.noise_covariance
            members = population_model(model, beta=BETA, noise_cov=cov)
            assert pair_deltas(members, cov, epsilon=EPS).worst <= DELTA


@pytest.mark.parametrize("method", ["box", "joint"])
def test_population_members_cached_equal_fresh(method):
    from distpriv.population.confidence import population_set

    with population_set(method):
        _members_cached_equal_fresh(method)


def _members_cached_equal_fresh(method):
    model = wishart_model(6, 3, seed=1)
    noise = np.diag(np.linspace(1.0, 3.0, 6))
    fresh = population_model(model, beta=BETA, noise_cov=noise)
    with cc.shared_calibration() as cache:
        first = population_model(model, beta=BETA, noise_cov=noise)
        again = population_model(model, beta=BETA, noise_cov=noise)
        other = population_model(model, beta=BETA, noise_cov=2 * noise)
        # The box also remembers its noise-free corners (a second hit for ``other``); the
        # joint set's members are all noise-dependent.
        hits = 2 if method == "box" else 1
        assert again is first and other is not first and cache.hits >= hits
    assert cc.active_cache() is None  # nothing outlives the block
    for got in (first, population_model(model, beta=BETA, noise_cov=2 * noise)):
        ref = population_model(model, beta=BETA, noise_cov=noise if got is first else 2 * noise)
        assert np.array_equal(got.means, ref.means)
        assert np.array_equal(got.covariances, ref.covariances)
        assert got.labels == ref.labels and got.pairs == ref.pairs
    assert np.array_equal(
        other.means, population_model(model, beta=BETA, noise_cov=2 * noise).means
    )
    assert np.array_equal(first.covariances, fresh.covariances)
