"""Noise: covariance, closed-form and quadrature E‖Z‖, seeded statistical checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import gamma

from distpriv import Noise, NoiseComponent, ParameterError


def _random_basis(rng, m, d):
    q, _ = np.linalg.qr(rng.normal(size=(m, m)))
    return q[:, :d]


def test_isotropic_gaussian_closed_form():
    n = Noise.isotropic("gaussian", 5, 2.0)
    expected = 2.0 * math.sqrt(2) * gamma(3.0) / gamma(2.5)
    assert n.expected_l2_norm() == pytest.approx(expected, rel=1e-12)
    assert n.mse() == pytest.approx(20.0)


def test_rank_one():
    v = np.array([[0.6], [0.8]])
    assert Noise.along("gaussian", v, [3.0]).expected_l2_norm() == pytest.approx(
        3.0 * math.sqrt(2 / math.pi)
    )
    assert Noise.along("laplace", v, [3.0]).expected_l2_norm() == pytest.approx(3.0)
    np.testing.assert_allclose(Noise.along("laplace", v, [3.0]).covariance, 18.0 * v @ v.T)


def test_quadrature_equals_closed_form_for_isotropic():
    # The quadrature path, forced by a tiny anisotropy, agrees with the exact formula.
    s = np.full(4, 1.5)
    s[0] *= 1 + 1e-9
    n = Noise.along("gaussian", np.eye(4), s)
    exact = 1.5 * math.sqrt(2) * gamma(2.5) / gamma(2.0)
    assert n.expected_l2_norm() == pytest.approx(exact, rel=1e-7)


@pytest.mark.parametrize("kind", ["gaussian", "laplace"])
@pytest.mark.parametrize("scales", [[0.2, 1.0, 4.0], [2.0, 2.0, 2.0, 2.0, 2.0], [1e-3, 10.0]])
def test_expected_norm_against_monte_carlo(kind, scales, rng):
    m = len(scales)
    n = Noise.along(kind, _random_basis(rng, m, m), scales)
    draws = np.linalg.norm(n.sample(200_000, rng), axis=1)
    se = draws.std() / math.sqrt(draws.size)
    assert abs(n.expected_l2_norm() - draws.mean()) < 5 * se


@pytest.mark.parametrize("kind", ["gaussian", "laplace"])
def test_sample_covariance(kind, rng):
    basis = _random_basis(rng, 4, 2)
    n = Noise.along(kind, basis, [1.0, 3.0])
    size = 200_000
    z = n.sample(size, rng)
    cov = n.covariance
    emp = z.T @ z / size
    # Standard error of a second moment E[Z_i Z_j] is sd(Z_i Z_j)/√n; 6 se bounds each entry.
    se = np.sqrt(np.var(z[:, :, None] * z[:, None, :], axis=0) / size)
    assert np.all(np.abs(emp - cov) < 6 * se + 1e-12)
    # Noise lives in the span of the basis.
    resid = z - (z @ basis) @ basis.T
    assert np.max(np.abs(resid)) < 1e-9


def test_sum_of_components_uses_monte_carlo_and_adds_covariances(rng):
    a = Noise.along("gaussian", np.array([[1.0], [0.0]]), [2.0])
    b = Noise.isotropic("laplace", 2, 1.0)
    c = a.plus(b)
    np.testing.assert_allclose(c.covariance, a.covariance + b.covariance)
    draws = np.linalg.norm(c.sample(200_000, rng), axis=1)
    assert c.expected_l2_norm() == pytest.approx(draws.mean(), rel=1e-2)


def test_none_and_validation():
    n = Noise.none(3)
    assert n.is_zero and n.mse() == 0.0 and n.expected_l2_norm() == 0.0
    assert n.sample(4, 0).shape == (4, 3)
    with pytest.raises(ParameterError, match="orthonormal"):
        NoiseComponent("gaussian", np.array([[1.0], [1.0]]), np.array([1.0]))
    with pytest.raises(ParameterError, match="kind"):
        NoiseComponent("cauchy", np.eye(2), np.ones(2))
    with pytest.raises(ParameterError, match="scales"):
        NoiseComponent("gaussian", np.eye(2), np.array([1.0, -1.0]))
