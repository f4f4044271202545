"""Directions constant under every hypothesis (a full-coverage histogram's sum) in DauM.

The cells of an n-row histogram sum to n under every hypothesis, so each covariance
diag(c) − ccᵀ/N is singular along the vector of ones. DauM calibrates in the complement
(central/_constant.py); the reference here is independent of that code: the exact
accountant on the histogram with its last cell dropped (x_m = n − Σ_{k<m} x_k, so the first
m − 1 cells determine the release: the same privacy, in a basis that is not orthonormal).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from distpriv import calibrate
from distpriv.accounting import gaussian_delta, gaussian_pair_delta
from distpriv.central._constant import constant_directions
from distpriv.errors import MechanismNotApplicableError
from distpriv.querymodel import GaussianQueryModel

EPS, DELTA = 1.0, 1e-3


def _multinomial(p: np.ndarray, n: float) -> tuple[np.ndarray, np.ndarray]:
    """Mean n·p and covariance n(diag(p) − ppᵀ) of the cell counts of n rows."""
    return n * p, n * (np.diag(p) - np.outer(p, p))


def _histogram(m: int, seed: int, *, equal: bool, n: float = 1000.0) -> GaussianQueryModel:
    """Two hypotheses on m cells covering every row (the counts sum to n under both)."""
    rng = np.random.default_rng(seed)
    p0 = rng.dirichlet(np.full(m, 5.0))
    tilt = rng.normal(size=m) * 0.05
    p1 = p0 * np.exp(tilt)
    p1 /= p1.sum()
    mu0, s0 = _multinomial(p0, n)
    mu1, s1 = _multinomial(p1, n)
    if equal:
        s1 = s0.copy()
    return GaussianQueryModel(np.stack([mu0, mu1]), np.stack([s0, s1]), labels=["a", "b"])


def _dropped_delta(gm: GaussianQueryModel, noise_cov: np.ndarray) -> float:
    """Worst exact δ(ε) of both directions on the model without its last cell."""
    k = slice(0, gm.dim - 1)
    out = []
    for i, j in ((0, 1), (1, 0)):
        out.append(
            gaussian_pair_delta(
                gm.means[i][k],
                (gm.covariances[i] + noise_cov)[k, k],
                gm.means[j][k],
                (gm.covariances[j] + noise_cov)[k, k],
                epsilon=EPS,
            )
        )
    return max(out)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equal_covariances_daum_meets_delta_exactly_on_dropped_cell_model(seed: int) -> None:
    # Equal covariances: the papers' (analytic) DauM calibration is exact, so the dropped-cell
    # model's δ(ε), computed by the accountant in another basis, is the target itself.
    gm = _histogram(8, seed, equal=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mech = calibrate("daum", gm, epsilon=EPS, delta=DELTA, calibration="analytic")
    assert mech.diagnostics["noise_variance"] > 0
    v = np.asarray(mech.diagnostics["direction"])
    # No noise along the constant direction (the cells' sum): it reveals nothing.
    assert abs(v.sum()) < 1e-12
    assert abs(np.ones(8) @ mech.noise_covariance @ np.ones(8)) < 1e-9 * np.trace(
        mech.noise_covariance
    )
    ref = _dropped_delta(gm, mech.noise_covariance)
    assert ref == pytest.approx(DELTA, rel=1e-6)
    names = {a.name: a for a in mech.guarantee.assumptions}
    assert names["constant-directions"].holds is True
    assert "the sum of the 8 statistics" in names["constant-directions"].detail


@pytest.mark.parametrize("seed", [0, 3])
def test_unequal_covariances_exact_daum_certified_by_dropped_cell_accountant(seed: int) -> None:
    gm = _histogram(6, seed, equal=False)
    mech = calibrate("daum", gm, epsilon=EPS, delta=DELTA)
    assert mech.guarantee.calibration == "exact"
    ref = _dropped_delta(gm, mech.noise_covariance)
    assert ref <= DELTA * (1 + 1e-9)
    # The calibration is tight: 2 % less noise fails the independent reference.
    assert _dropped_delta(gm, 0.98 * mech.noise_covariance) > DELTA
    assert mech.diagnostics["achieved_delta"] == pytest.approx(ref, rel=1e-4)
    assert "constant-directions" in {a.name for a in mech.guarantee.assumptions}


def test_daum_floor_on_full_coverage_histogram_is_certified() -> None:
    gm = _histogram(10, 4, equal=False)
    mech = calibrate("daum-floor", gm, epsilon=EPS, delta=DELTA, lattice=[1.0] * 10)
    assert mech.noise_rank == 10
    names = {a.name: a.holds for a in mech.guarantee.assumptions}
    assert names == {"exact-profile": True, "constant-directions": True}
    # The floor is full rank: the whole release (no cell dropped) is checked directly too.
    cov = mech.noise_covariance
    full = max(
        gaussian_pair_delta(
            gm.means[i], gm.covariances[i] + cov, gm.means[j], gm.covariances[j] + cov, epsilon=EPS
        )
        for i, j in ((0, 1), (1, 0))
    )
    assert full <= DELTA * (1 + 1e-9)
    assert _dropped_delta(gm, cov) <= DELTA * (1 + 1e-9)


def test_zero_variance_direction_with_different_means_is_refused_by_name() -> None:
    gm = _histogram(6, 5, equal=False)
    means = gm.means.copy()
    means[1] += 0.5  # the sums now differ: 1000 against 1003, with zero variance along 1
    bad = GaussianQueryModel(means, gm.covariances, labels=["a", "b"])
    with pytest.raises(MechanismNotApplicableError, match="the sum of the 6 statistics") as err:
        calibrate("daum", bad, epsilon=EPS, delta=DELTA, calibration="analytic")
    assert "infinite privacy loss" in str(err.value)


def test_scale_free_detection_and_same_noise_in_other_units() -> None:
    # Statistic 2 in units a million times smaller: the constant direction is no longer
    # the vector of ones, but it is found, and the calibration is the same up to units.
    gm = _histogram(7, 6, equal=True)
    unit = np.ones(7)
    unit[2] = 1e-6
    scaled = GaussianQueryModel(
        gm.means * unit, gm.covariances * np.outer(unit, unit), labels=["a", "b"]
    )
    const = constant_directions(scaled, "test")
    assert const.count == 1
    u = const.null[:, 0]
    assert np.allclose(u / u[0], 1.0 / unit, rtol=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = calibrate("daum", gm, epsilon=EPS, delta=DELTA, calibration="analytic")
        b = calibrate("daum", scaled, epsilon=EPS, delta=DELTA, calibration="analytic")
    ref = _dropped_delta(scaled, b.noise_covariance)
    assert ref == pytest.approx(DELTA, rel=1e-6)
    assert a.diagnostics["noise_variance"] > 0 and b.diagnostics["noise_variance"] > 0


def test_small_real_variance_is_not_taken_for_a_constant_direction() -> None:
    # A variance of 1e-9 of the largest along the ones is real (not rounding): kept, and
    # DauM then uses the full positive definite covariance (no constant-directions claim).
    gm = _histogram(5, 7, equal=True)
    scale = float(np.max(gm.covariances))
    covs = gm.covariances + 1e-9 * scale * np.ones((5, 5)) / 5
    pd = GaussianQueryModel(gm.means, covs, labels=["a", "b"])
    assert constant_directions(pd, "test").count == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mech = calibrate("daum", pd, epsilon=EPS, delta=DELTA, calibration="analytic")
    assert "constant-directions" not in {a.name for a in mech.guarantee.assumptions}
    d = gm.means[0] - gm.means[1]
    # Reference: equal covariances, so the output's Mahalanobis distance gives δ in closed form.
    out = covs[0] + mech.noise_covariance
    dist = float(np.sqrt(d @ np.linalg.solve(out, d)))
    assert float(gaussian_delta(dist, epsilon=EPS)) == pytest.approx(DELTA, rel=1e-5)


def test_direction_along_the_constant_direction_is_refused() -> None:
    gm = _histogram(4, 8, equal=True)
    with pytest.raises(MechanismNotApplicableError, match="constant direction"):
        calibrate(
            "daum", gm, epsilon=EPS, delta=DELTA, calibration="analytic", direction=np.ones(4)
        )
