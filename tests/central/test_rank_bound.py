"""The floor on δ(ε) under noise of limited rank (central/_rank_bound.py).

References: the hockey-stick integral in 50-digit arithmetic (mpmath quadrature), and the
exact accountant (:func:`distpriv.population.exact.pair_deltas`) on pairs with random noises
of the stated rank — including ill-conditioned covariances and noises scaled far up.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from distpriv import GaussianQueryModel
from distpriv.central._rank_bound import centred_ratio_delta, rank_limited_floor
from distpriv.population.exact import pair_deltas


def _hockey_stick(ratio: float, epsilon: float) -> float:
    """∫ (p − e^ε q)₊ for p = N(0, ratio), q = N(0, 1), by quadrature at 50 digits."""
    mpmath.mp.dps = 50
    r, e = mpmath.mpf(ratio), mpmath.e ** mpmath.mpf(epsilon)

    def f(x: mpmath.mpf) -> mpmath.mpf:
        p = mpmath.exp(-(x**2) / (2 * r)) / mpmath.sqrt(2 * mpmath.pi * r)
        q = mpmath.exp(-(x**2) / 2) / mpmath.sqrt(2 * mpmath.pi)
        return max(p - e * q, mpmath.mpf(0))

    # The integrand is positive beyond ±c: the root of the log-density ratio minus ε,
    # found numerically (not from the closed form under test).
    def excess(x: mpmath.mpf) -> mpmath.mpf:
        return x**2 / 2 * (1 - 1 / r) - mpmath.log(r) / 2 - mpmath.log(e)

    c = mpmath.findroot(excess, (mpmath.mpf(0), mpmath.mpf(10) ** 4), solver="anderson")
    return float(2 * mpmath.quad(f, [c, c + 10 * mpmath.sqrt(r), mpmath.inf]))


@pytest.mark.parametrize("ratio", [1.0001, 1.01, 1.5, 3.0, 40.0, 1e4])
@pytest.mark.parametrize("epsilon", [0.0, 0.3, 1.0, 3.0])
def test_centred_ratio_delta_matches_quadrature(ratio: float, epsilon: float) -> None:
    got = centred_ratio_delta(ratio, epsilon)
    ref = _hockey_stick(ratio, epsilon)
    assert got == pytest.approx(ref, rel=1e-7, abs=1e-15)


def test_centred_ratio_delta_edges() -> None:
    assert centred_ratio_delta(1.0, 1.0) == 0.0
    assert centred_ratio_delta(0.5, 1.0) == 0.0  # only ratios above 1 (the caller inverts)
    assert centred_ratio_delta(math.inf, 1.0) == 1.0


def _wishart(rng: np.random.Generator, m: int, dof: int, spread: float) -> np.ndarray:
    x = rng.normal(size=(dof, m)) * np.geomspace(1.0, spread, m)
    return x.T @ x / dof


def _pair(rng: np.random.Generator, m: int, spread: float) -> GaussianQueryModel:
    covs = np.stack([_wishart(rng, m, m + 4, spread), _wishart(rng, m, m + 4, spread)])
    means = np.stack([np.zeros(m), rng.normal(size=m) * np.sqrt(np.diag(covs[0]))])
    return GaussianQueryModel(means, covs)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("spread", [1.0, 1e3])  # the second: condition numbers ~1e6-1e8
def test_floor_is_below_exact_delta_for_every_noise_of_that_rank(seed: int, spread: float) -> None:
    rng = np.random.default_rng(seed)
    m = 6
    model = _pair(rng, m, spread)
    for rank in (1, 2, 4):
        floor = rank_limited_floor(model, rank, epsilon=1.0)
        assert 0.0 <= floor <= 1.0
        # Random noises of that rank, and the adversarial one: noise along the top/bottom
        # generalised eigenvectors (its null space holds the ratios nearest 1).
        shapes = []
        for _ in range(3):
            u = rng.normal(size=(m, rank)) * np.sqrt(np.diag(model.covariances[0]))[:, None]
            shapes.append(u @ u.T)
        a, b = model.covariances
        rho, vec = np.linalg.eig(np.linalg.solve(b, a))
        order = np.argsort(-np.abs(np.log(rho.real)))
        v = vec.real[:, order[:rank]]
        v = b @ v  # the dual directions: noise there hides those generalised directions
        shapes.append(v @ v.T)
        for shape in shapes:
            shape = shape / np.trace(shape) * np.trace(a)
            for scale in (1e-2, 1.0, 1e3):
                exact = pair_deltas(model, scale * shape, epsilon=1.0).worst
                # The accountant's value is the exact δ up to its error bound (~1e-12).
                assert floor <= exact + 1e-9, (rank, scale, floor, exact)


def test_floor_is_tight_in_one_dimension() -> None:
    # m = 1, rank 0, equal means: the floor is the exact δ of the pair.
    for var in (1.7, 0.2, 25.0):
        model = GaussianQueryModel(np.zeros((2, 1)), np.array([[[var]], [[1.0]]]))
        floor = rank_limited_floor(model, 0, epsilon=0.5)
        exact = pair_deltas(model, np.zeros((1, 1)), epsilon=0.5).worst
        assert floor == pytest.approx(exact, rel=1e-8)
        assert floor > 0


def test_floor_is_zero_when_rank_covers_every_direction_or_covariances_equal() -> None:
    rng = np.random.default_rng(3)
    model = _pair(rng, 4, 1.0)
    assert rank_limited_floor(model, 4, epsilon=1.0) == 0.0
    same = GaussianQueryModel(model.means, np.stack([model.covariances[0]] * 2))
    assert rank_limited_floor(same, 1, epsilon=1.0) == 0.0


def test_floor_decides_rank_limited_shapes_on_wishart_pairs() -> None:
    # Independent Wishart covariances (the benchmark's setting): a rank-2 noise cannot meet
    # δ = 1e-3 at any scale, and the exact accountant agrees far up the scale.
    rng = np.random.default_rng(0)
    model = _pair(rng, 20, 1.0)
    floor = rank_limited_floor(model, 2, epsilon=1.0)
    assert floor > 1e-3
    u = rng.normal(size=(20, 2))
    exact = pair_deltas(model, 1e6 * u @ u.T, epsilon=1.0, tol=1e-6).worst
    assert exact >= floor


@pytest.mark.parametrize("side", ["above", "below"])
@pytest.mark.parametrize("rank", [1, 2])
def test_floor_is_attained_by_the_noise_on_the_extreme_directions(side: str, rank: int) -> None:
    # Σ₁ = L diag(ρ) Lᵀ, Σ₂ = L Lᵀ (L random, ill-conditioned) with one ratio beyond the
    # rank far from 1 and the rest 1: a huge noise on the r most extreme generalised
    # directions leaves exactly the (r + 1)-th, so the exact δ meets the floor (an
    # off-by-one in which ratio bounds it would break either inequality).
    rng = np.random.default_rng(rank)
    m = 5
    rho = np.ones(m)
    rho[: rank + 1] = np.geomspace(60.0, 12.0, rank + 1)
    if side == "below":
        rho = 1.0 / rho
    lower = rng.normal(size=(m, m)) * np.geomspace(1.0, 1e2, m)
    covs = np.stack([(lower * rho) @ lower.T, lower @ lower.T])
    model = GaussianQueryModel(np.zeros((2, m)), covs)
    floor = rank_limited_floor(model, rank, epsilon=1.0)
    assert floor == pytest.approx(centred_ratio_delta(max(rho[rank], 1 / rho[rank]), 1.0))
    noise = 1e6 * lower[:, :rank] @ lower[:, :rank].T
    exact = pair_deltas(model, noise, epsilon=1.0).worst
    assert floor <= exact + 1e-9
    assert exact == pytest.approx(floor, rel=1e-4)
