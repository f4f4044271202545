"""optimal-g: never worse than DauM/EigM, exactly private, closed form for one pair."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distpriv import (
    GaussianQueryModel,
    MechanismNotApplicableError,
    ParameterError,
    calibrate,
    max_mahalanobis_distance,
)
from distpriv.central.optimal import _solve_sdp, single_pair_optimum

from .test_privacy_profiles import assert_profile_within


@pytest.mark.parametrize("calibration", ["analytic", "classical"])
@pytest.mark.parametrize("epsilon", [0.2, 1.0, 5.0])
def test_adult_no_worse_than_daum_and_eigm(adult_analytic, epsilon, calibration):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mechs = {
            n: calibrate(n, adult_analytic, epsilon=epsilon, delta=1e-3, calibration=calibration)
            for n in ("optimal-g", "daum", "eigm", "expm-g")
        }
    opt = mechs["optimal-g"].mse()
    for other in ("daum", "eigm"):
        gain = mechs[other].mse() - opt
        print(
            f"eps={epsilon:g} {calibration}: optimal-g E||Z||^2 = {opt:.4f}, {other} = "
            f"{mechs[other].mse():.4f} (optimal-g lower by {gain:.4f})"
        )
        assert opt <= mechs[other].mse() * (1 + 1e-9) + 1e-12
    # Exact privacy profile of both outputs, with both covariances of the pair.
    assert_profile_within(mechs["optimal-g"], adult_analytic, epsilon, 1e-3)
    if epsilon == 5.0 and calibration == "analytic":
        # The model's own randomness suffices; ExpM (G) still adds sd ≈ 3 per statistic.
        assert opt == 0.0
        sd = np.sqrt(np.diag(mechs["expm-g"].noise_covariance))
        assert np.all((sd > 2.5) & (sd < 3.5))


def _spd(rng, m, cond=20.0):
    q, _ = np.linalg.qr(rng.normal(size=(m, m)))
    return (q * np.geomspace(1.0, cond, m)) @ q.T


@pytest.mark.parametrize("seed", range(8))
def test_single_pair_closed_form_matches_convex_program(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2, 6))
    cov = _spd(rng, m)
    d = rng.normal(size=m) * 3.0
    dist = max_mahalanobis_distance(epsilon=1.0, delta=1e-3)
    closed = single_pair_optimum(cov, d, dist)
    sdp, _ = _solve_sdp([(cov, d)], np.eye(m), dist)
    assert np.trace(closed) == pytest.approx(np.trace(sdp), rel=1e-5)
    w = np.linalg.eigvalsh(closed)
    assert np.sum(w > 1e-9 * w.max()) == 1  # rank one
    # The closed form meets the constraint with equality.
    val = d @ np.linalg.solve(cov + closed, d)
    assert val == pytest.approx(dist**2, rel=1e-9)


@settings(max_examples=25)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(3, 5))
def test_several_non_parallel_pairs(seed, k):
    rng = np.random.default_rng(seed)
    m = 3
    model = GaussianQueryModel(rng.normal(size=(k, m)) * 2.0, _spd(rng, m, 5.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        opt = calibrate("optimal-g", model, epsilon=0.5, delta=1e-4)
        eig = calibrate("eigm", model, epsilon=0.5, delta=1e-4)
    assert_profile_within(opt, model, 0.5, 1e-4)
    assert opt.mse() <= eig.mse() * (1 + 1e-6)


def test_no_noise_when_model_suffices(paper_model):
    mech = calibrate("optimal-g", paper_model, epsilon=1.0, delta=1e-3)
    assert mech.noise.is_zero and mech.diagnostics["method"] == "no noise needed"


def test_zero_difference_pairs_and_singular_covariance():
    # θ0 and θ1 have equal means (nothing to hide there); θ2 differs along the axis the
    # singular covariance does not cover, so noise is needed exactly there.
    cov = np.diag([4.0, 0.0])
    model = GaussianQueryModel([[0.0, 0.0], [0.0, 0.0], [0.0, 1.0]], cov)
    mech = calibrate("optimal-g", model, epsilon=1.0, delta=1e-3)
    assert_profile_within(mech, model, 1.0, 1e-3)
    noise = mech.noise_covariance
    assert noise[1, 1] > 0 and abs(noise[0, 0]) < 1e-6 * noise[1, 1]
    # A difference inside the covariance's range needs no noise if small enough. stat1 is
    # the same number (0) under every hypothesis, with no spread: the relative objective
    # weighs its noise against the other statistic's variance (central/objective.py), and
    # both objectives find that no noise is needed.
    model2 = GaussianQueryModel([[0.0, 0.0], [0.1, 0.0]], cov)
    assert calibrate("optimal-g", model2, epsilon=1.0, delta=1e-3, objective="l2").noise.is_zero
    assert calibrate("optimal-g", model2, epsilon=1.0, delta=1e-3).noise.is_zero


def test_weights():
    rng = np.random.default_rng(3)
    cov = _spd(rng, 3)
    model = GaussianQueryModel([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [2.0, -1.0, 0.5]], cov)
    plain = calibrate("optimal-g", model, epsilon=0.5, delta=1e-3)
    heavy = calibrate("optimal-g", model, epsilon=0.5, delta=1e-3, weights=[100.0, 1.0, 1.0])
    assert heavy.noise_covariance[0, 0] < plain.noise_covariance[0, 0]
    assert_profile_within(heavy, model, 0.5, 1e-3)
    assert heavy.diagnostics["objective"] <= np.trace(
        np.diag([100.0, 1.0, 1.0]) @ plain.noise_covariance
    ) * (1 + 1e-6)
    with pytest.raises(ParameterError, match="weights must be 3 positive"):
        calibrate("optimal-g", model, epsilon=0.5, delta=1e-3, weights=[1.0, -1.0, 1.0])
    with pytest.raises(ParameterError, match="weights must be 3 positive"):
        calibrate("optimal-g", model, epsilon=0.5, delta=1e-3, weights=[1.0, 1.0])
    with pytest.raises(ParameterError, match="positive definite"):
        calibrate("optimal-g", model, epsilon=0.5, delta=1e-3, weights=-np.eye(3))


def test_solver_failure_is_a_clear_error(monkeypatch):
    import cvxpy as cp

    def broken(self, *args, **kwargs):
        raise cp.error.SolverError("boom")

    monkeypatch.setattr(cp.Problem, "solve", broken)
    model = GaussianQueryModel([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]], np.eye(2) * 0.01)
    with pytest.raises(MechanismNotApplicableError, match="could not be solved"):
        calibrate("optimal-g", model, epsilon=1.0, delta=1e-3)
    assert math.isfinite(max_mahalanobis_distance(epsilon=1.0, delta=1e-3))
