"""Relaxed guarantees (Chen & Ohrimenko 2023, Thm 4.6 and 4.7)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from distpriv import (
    ParameterError,
    calibrate,
    relax_max_divergence,
    relax_wasserstein,
    relaxed_parameters,
)


def test_thm46_formula():
    eps, dlt = relaxed_parameters(0.5, 1e-4, lam=0.1, eta=1e-5)
    assert eps == pytest.approx(0.7)
    assert dlt == pytest.approx((1 + math.exp(0.6)) * 1e-5 + math.exp(0.1) * 1e-4)
    assert relaxed_parameters(0.5, 1e-4, lam=0.0, eta=0.0) == (0.5, 1e-4)


def test_relax_max_divergence_keeps_pairs_and_notes(paper_model):
    mech = calibrate("eigm", paper_model, epsilon=0.5, delta=1e-3)
    g = relax_max_divergence(mech, lam=0.05, eta=1e-6)
    assert g.epsilon == pytest.approx(0.6)
    assert g.pairs == mech.guarantee.pairs
    assert "Thm 4.6" in g.theorem
    assert g.delta > mech.guarantee.delta


def test_relax_wasserstein_adds_laplace(paper_model, rng):
    mech = calibrate("eigm", paper_model, epsilon=0.5, delta=1e-3)
    relaxed = relax_wasserstein(mech, wasserstein=0.2, lam=0.1)
    assert relaxed.guarantee.epsilon == pytest.approx(0.7)
    assert relaxed.guarantee.delta == pytest.approx(math.exp(0.1) * 1e-3)
    extra = 2 * (0.2 / 0.1) ** 2  # Laplace variance 2b² per coordinate
    np.testing.assert_allclose(relaxed.noise_covariance, mech.noise_covariance + extra * np.eye(2))
    assert relaxed.expected_l2_error() > mech.expected_l2_error()
    n = 200_000
    z = relaxed.release(np.zeros((n, 2)), rng=rng).value
    emp = z.T @ z / n
    # standard error of each second moment, from the sample itself (Laplace is heavy-tailed)
    se = np.sqrt(np.var(z[:, :, None] * z[:, None, :], axis=0) / n)
    assert np.all(np.abs(emp - relaxed.noise_covariance) < 5 * se)


def test_bad_relaxation_parameters(paper_model):
    mech = calibrate("eigm", paper_model, epsilon=0.5, delta=1e-3)
    with pytest.raises(ParameterError, match="lam"):
        relax_wasserstein(mech, wasserstein=0.2, lam=0.0)
    with pytest.raises(ParameterError, match="wasserstein"):
        relax_wasserstein(mech, wasserstein=-1.0, lam=0.1)
    with pytest.raises(ParameterError, match="eta"):
        relax_max_divergence(mech, lam=0.1, eta=2.0)
