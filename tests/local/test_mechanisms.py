"""Matrix mechanisms: definitions, samplers, losses, DP/XDP constants and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import chisquare

from distpriv.errors import ParameterError, ParameterTypeError
from distpriv.local import (
    Domain,
    expected_loss,
    matrix_mechanism,
    planar_gaussian,
    planar_laplace,
    randomized_response,
    restricted_laplace,
)

from .helpers import random_domain


def test_randomized_response_matrix_and_dp():
    rr = randomized_response(4, epsilon=math.log(3.0))
    # e^ε / (e^ε + k − 1) = 3/6 on the diagonal, 1/6 elsewhere.
    np.testing.assert_allclose(rr.matrix, np.full((4, 4), 1 / 6) + np.eye(4) / 3)
    assert rr.dp_epsilon() == pytest.approx(math.log(3.0))
    big = randomized_response(5, epsilon=800.0)  # no overflow
    assert np.allclose(big.matrix, np.eye(5)) and big.dp_epsilon() == pytest.approx(800.0)


def test_randomized_response_on_a_domain_reports_the_nearest_output():
    dom = Domain([[0.1, 0.0], [2.0, 0.0]], [[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]])
    rr = randomized_response(dom, epsilon=2.0)
    assert rr.matrix.shape == (2, 3)
    assert np.argmax(rr.matrix, axis=1).tolist() == [0, 2]


def test_planar_laplace_xdp_between_eps_and_twice_eps():
    rng = np.random.default_rng(3)
    dom = random_domain(rng, 8)
    for eps in (0.5, 2.0):
        pl = planar_laplace(dom, epsilon=eps)
        w = np.exp(-eps * dom.distances)
        np.testing.assert_allclose(pl.matrix, w / w.sum(axis=1, keepdims=True))
        xdp = pl.xdp_epsilon()
        assert 0 < xdp <= 2 * eps + 1e-12
        # Brute force: max over pairs and outputs of the log ratio per unit distance.
        brute = max(
            np.max(np.log(pl.matrix[i] / pl.matrix[j])) / dom.input_distances[i, j]
            for i in range(8)
            for j in range(8)
            if i != j
        )
        assert xdp == pytest.approx(brute)


def test_planar_gaussian_calibration():
    dom = random_domain(np.random.default_rng(4), 5)
    from distpriv.accounting import max_mahalanobis_distance

    pg = planar_gaussian(dom, epsilon=1.0, delta=1e-3, sensitivity=0.5)
    assert pg.params["sigma"] == pytest.approx(
        0.5 / max_mahalanobis_distance(epsilon=1.0, delta=1e-3)
    )
    w = np.exp(-(dom.distances**2) / (2 * pg.params["sigma"] ** 2))
    np.testing.assert_allclose(pg.matrix, w / w.sum(axis=1, keepdims=True))
    with pytest.raises(ParameterError, match="not both"):
        planar_gaussian(dom, sigma=1.0, epsilon=1.0)
    with pytest.raises(ParameterError, match="needs sigma"):
        planar_gaussian(dom, epsilon=1.0)


def test_restricted_laplace_def12():
    dom = Domain(np.arange(6, dtype=float).reshape(-1, 1))
    rl = restricted_laplace(dom, epsilon=1.0, radius=1.0)
    # Y_{x,r} = {x − 1, x, x + 1}: weights e^{-1}, 1, e^{-1} normalised.
    z = 1 + 2 * math.exp(-1)
    assert rl.matrix[2, 1:4] == pytest.approx([math.exp(-1) / z, 1 / z, math.exp(-1) / z])
    assert rl.matrix[2, [0, 4, 5]].tolist() == [0, 0, 0]
    assert rl.matrix[0, 0] == pytest.approx(1 / (1 + math.exp(-1)))
    # The worst-case loss is the radius; RL is not DP (zeros outside the radius).
    assert np.all(dom.distances[rl.matrix > 0] <= 1.0)
    assert rl.dp_epsilon() == math.inf
    np.testing.assert_allclose(
        restricted_laplace(dom, epsilon=1.0, radius=math.inf).matrix,
        planar_laplace(dom, epsilon=1.0).matrix,
    )
    assert np.allclose(restricted_laplace(dom, epsilon=0.0, radius=0.0).matrix, np.eye(6))


def test_restricted_laplace_bad_radius():
    dom = Domain([[0.0, 0.0]], [[1.0, 0.0], [2.0, 0.0]])
    with pytest.raises(ParameterError, match="radius must be >= 0"):
        restricted_laplace(dom, epsilon=1.0, radius=-0.5)
    with pytest.raises(ParameterError, match="use radius >= 1"):
        restricted_laplace(dom, epsilon=1.0, radius=0.5)
    with pytest.raises(ParameterError, match="epsilon must be >= 0"):
        restricted_laplace(dom, epsilon=-1.0, radius=2.0)
    with pytest.raises(ParameterTypeError):
        restricted_laplace("not a domain", epsilon=1.0, radius=1.0)


def test_sampler_matches_the_matrix():
    rng = np.random.default_rng(5)
    dom = random_domain(rng, 4, 7)
    pl = planar_laplace(dom, epsilon=1.5)
    n = 40_000
    for x in range(4):
        y = pl.sample(np.full(n, x), rng=rng)
        counts = np.bincount(y, minlength=7)
        # Seeded χ² goodness of fit; p < 1e-4 would be a real discrepancy.
        assert chisquare(counts, n * pl.matrix[x]).pvalue > 1e-4
    assert pl.sample(np.array([], dtype=int), rng=0).shape == (0,)
    with pytest.raises(ParameterError, match="indices in"):
        pl.sample([0, 4], rng=0)
    with pytest.raises(ParameterTypeError, match="integer indices"):
        pl.sample([0.5], rng=0)


def test_expected_loss_def17_against_monte_carlo():
    rng = np.random.default_rng(6)
    dom = random_domain(rng, 5, 6)
    lam = rng.dirichlet(np.ones(5))
    pg = planar_gaussian(dom, sigma=0.7)
    exact = expected_loss(pg, lam)
    assert exact == pytest.approx(float(np.sum(lam[:, None] * pg.matrix * dom.distances)))
    x = rng.choice(5, size=200_000, p=lam)
    losses = dom.distances[x, pg.sample(x, rng=rng)]
    assert abs(losses.mean() - exact) < 5 * losses.std() / math.sqrt(x.size)


def test_matrix_mechanism_validation():
    with pytest.raises(ParameterError, match="row 1 sums to"):
        matrix_mechanism([[1.0, 0.0], [0.3, 0.3]])
    with pytest.raises(ParameterError, match="non-negative"):
        matrix_mechanism([[1.5, -0.5]])
    dom = Domain([[0.0], [1.0]])
    with pytest.raises(ParameterError, match="to match the domain"):
        matrix_mechanism([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], domain=dom)
    m = matrix_mechanism([[0.5, 0.5], [0.5, 0.5]], name="coin")
    assert m.dp_epsilon() == 0.0 and m.to_dict()["name"] == "coin"
    with pytest.raises(ParameterError, match="needs a mechanism built on a Domain"):
        m.xdp_epsilon()
    with pytest.raises(ParameterError, match="epsilon must be > 0"):
        randomized_response(3, epsilon=0.0)
