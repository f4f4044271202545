"""Exact DistP profiles against brute force over all R ⊆ Y; Thm 1 and Thm 2 of KM 2019a."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distpriv.distances import winf_distance
from distpriv.errors import ParameterError, ParameterTypeError
from distpriv.local import (
    DistPProfile,
    attack_success,
    distp_delta,
    distp_epsilon,
    distp_profile,
    divergence_distp,
    matrix_mechanism,
    planar_laplace,
    randomized_response,
    theorem1_guarantee,
    theorem2_guarantee,
)

from .helpers import random_domain


def brute_delta(mu0, mu1, eps):
    """max over every R ⊆ Y, both directions, of A#(λ)[R] − e^ε A#(λ')[R] (Def. 8)."""
    best = 0.0
    n = len(mu0)
    for r in range(1, n + 1):
        for sub in itertools.combinations(range(n), r):
            a, b = mu0[list(sub)].sum(), mu1[list(sub)].sum()
            best = max(best, a - math.exp(eps) * b, b - math.exp(eps) * a)
    return best


def brute_epsilon(mu0, mu1, delta):
    """Smallest ε ≥ 0 with A#(λ)[R] ≤ e^ε A#(λ')[R] + δ for all R, both directions."""
    best = 0.0
    n = len(mu0)
    for r in range(1, n + 1):
        for sub in itertools.combinations(range(n), r):
            for a, b in (
                (mu0[list(sub)].sum(), mu1[list(sub)].sum()),
                (mu1[list(sub)].sum(), mu0[list(sub)].sum()),
            ):
                if a - delta > 1e-15:
                    best = max(best, math.inf if b == 0 else math.log((a - delta) / b))
    return best


@st.composite
def matrix_cases(draw):
    n_x = draw(st.integers(2, 4))
    n_y = draw(st.integers(2, 7))
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    a = rng.dirichlet(np.full(n_y, 0.7), size=n_x)
    if draw(st.booleans()):
        a[a < 0.05] = 0.0  # some structural zeros
        a /= a.sum(axis=1, keepdims=True)
    return matrix_mechanism(a), rng.dirichlet(np.ones(n_x)), rng.dirichlet(np.ones(n_x))


@settings(max_examples=40)
@given(matrix_cases(), st.sampled_from([0.0, 0.3, 1.0]), st.sampled_from([0.0, 0.001, 0.05, 0.2]))
def test_profile_equals_brute_force_over_subsets(case, eps, delta):
    mech, lam0, lam1 = case
    mu0, mu1 = lam0 @ mech.matrix, lam1 @ mech.matrix
    assert distp_delta(mech, lam0, lam1, eps) == pytest.approx(
        brute_delta(mu0, mu1, eps), abs=1e-12
    )
    want = brute_epsilon(mu0, mu1, delta)
    got = distp_epsilon(mech, lam0, lam1, delta)
    if math.isinf(want):
        assert got == math.inf
    else:
        assert got == pytest.approx(want, abs=1e-9)
        assert distp_delta(mech, lam0, lam1, got) <= delta + 1e-9


def test_profile_object_and_divergences(small):
    dom, lam0, lam1 = small
    pl = planar_laplace(dom, epsilon=1.0)
    prof = distp_profile(pl, lam0, lam1)
    assert isinstance(prof, DistPProfile)
    eps = prof.epsilon(np.array([0.0, 0.01, 0.1]))
    assert eps.shape == (3,) and np.all(np.diff(eps) <= 0)
    div = divergence_distp(pl, lam0, lam1)
    assert div.worst("dinf") == pytest.approx(prof.epsilon(0.0))
    assert div.forward["tv"] == pytest.approx(div.backward["tv"])
    assert div.worst("tv") == pytest.approx(prof.delta(0.0))
    assert 0 < div.forward["hellinger"] <= div.forward["tv"]
    assert div.to_dict()["worst"]["kl"] == div.worst("kl")
    with pytest.raises(ParameterError, match="divergence must be one of"):
        div.worst("renyi")
    # Bayes attack: accuracy = ½ + ½ TV for equal priors.
    att = attack_success(pl, lam0, lam1)
    assert att.accuracy == pytest.approx(0.5 + 0.5 * div.worst("tv"))


@settings(max_examples=30)
@given(st.integers(2, 8), st.floats(0.05, 4.0), st.integers(0, 2**31))
def test_theorem1_randomized_response_is_eps_distp_for_every_pair(k, eps, seed):
    rng = np.random.default_rng(seed)
    rr = randomized_response(k, epsilon=eps)
    g = theorem1_guarantee(rr)
    assert g.epsilon == pytest.approx(eps) and g.delta == 0.0
    for _ in range(5):
        lam0, lam1 = rng.dirichlet(np.full(k, 0.3)), rng.dirichlet(np.full(k, 0.3))
        assert distp_epsilon(rr, lam0, lam1) <= eps + 1e-12
    # The bound is attained by two point masses.
    assert distp_epsilon(rr, np.eye(k)[0], np.eye(k)[1]) == pytest.approx(eps)


def test_theorem1_with_delta():
    rr = randomized_response(3, epsilon=1.0)
    g = theorem1_guarantee(rr, delta=0.01)
    assert g.epsilon < 1.0 and g.delta == pytest.approx(0.01 * 6)
    with pytest.raises(ParameterTypeError):
        theorem1_guarantee("rr")


@settings(max_examples=15)
@given(st.integers(3, 6), st.floats(0.2, 3.0), st.integers(0, 2**31))
def test_theorem2_planar_laplace_at_most_eps_times_winf(n, eps, seed):
    rng = np.random.default_rng(seed)
    dom = random_domain(rng, n)
    pl = planar_laplace(dom, epsilon=eps)
    lam0, lam1 = rng.dirichlet(np.full(n, 0.5)), rng.dirichlet(np.full(n, 0.5))
    g = theorem2_guarantee(pl, lam0, lam1)
    w = winf_distance(dom.inputs, dom.inputs, u_weights=lam0, v_weights=lam1, metric="l2")
    assert g.epsilon == pytest.approx(pl.xdp_epsilon() * w)
    assert distp_epsilon(pl, lam0, lam1) <= g.epsilon + 1e-9
    assert pl.xdp_epsilon() <= 2 * eps + 1e-12


def test_theorem2_point_masses_are_tight_up_to_the_xdp_constant():
    dom = random_domain(np.random.default_rng(11), 5)
    pl = planar_laplace(dom, epsilon=1.0)
    i, j = np.unravel_index(np.argmax(dom.input_distances), dom.input_distances.shape)
    e = np.eye(5)
    g = theorem2_guarantee(pl, e[i], e[j])
    assert g.epsilon == pytest.approx(pl.xdp_epsilon() * dom.input_distances[i, j])
    assert distp_epsilon(pl, e[i], e[j]) <= g.epsilon + 1e-12
    with pytest.raises(ParameterError, match="lam0 must sum to 1"):
        theorem2_guarantee(pl, [0.5] * 5, e[j])


def test_bad_mechanism_type():
    with pytest.raises(ParameterTypeError, match="MatrixMechanism or a CouplingMechanism"):
        distp_profile(object(), [1.0], [1.0])
