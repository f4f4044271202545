"""distpriv.divergences: closed forms, brute force over all subsets, and bad input.

References are written here independently: KL and the other f-divergences from their
definitions with scipy's ``rel_entr``; D∞^δ and the hockey-stick divergence by enumerating
every subset R of a small support (KM 2019b, Def. 5).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import rel_entr

from distpriv.divergences import (
    DIVERGENCES,
    check_distribution,
    check_stochastic_matrix,
    chi2_divergence,
    divergence,
    hellinger_divergence,
    hockey_stick,
    kl_divergence,
    max_divergence,
    total_variation,
)
from distpriv.errors import ParameterError, ParameterTypeError


def brute_dinf(p, q, delta):
    """max over R ⊆ supp(p) with p[R] ≥ δ of ln((p[R] − δ) / q[R])."""
    supp = [i for i in range(len(p)) if p[i] > 0]
    best = -math.inf
    for r in range(1, len(supp) + 1):
        for sub in itertools.combinations(supp, r):
            pr, qr = sum(p[i] for i in sub), sum(q[i] for i in sub)
            if pr < delta or pr - delta <= 0:
                continue
            best = max(best, math.inf if qr == 0 else math.log((pr - delta) / qr))
    return best


def brute_hockey(p, q, eps):
    return max(
        sum(p[i] for i in sub) - math.exp(eps) * sum(q[i] for i in sub)
        for r in range(len(p) + 1)
        for sub in itertools.combinations(range(len(p)), r)
    )


@st.composite
def pairs(draw, min_n=2, max_n=7, zeros=True):
    n = draw(st.integers(min_n, max_n))
    # Exact zeros or weights ≥ 1e-6 (subnormals would only test float overflow).
    positive = st.floats(1e-6 if zeros else 0.01, 1.0)
    weights = st.one_of(st.just(0.0), positive) if zeros else positive
    a = np.array(draw(st.lists(weights, min_size=n, max_size=n)))
    b = np.array(draw(st.lists(weights, min_size=n, max_size=n)))
    a[draw(st.integers(0, n - 1))] += 0.5  # never all zero
    b[draw(st.integers(0, n - 1))] += 0.5
    return a / a.sum(), b / b.sum()


def test_closed_forms_on_a_worked_example():
    p = np.array([0.5, 0.3, 0.2, 0.0])
    q = np.array([0.25, 0.25, 0.25, 0.25])
    assert kl_divergence(p, q) == pytest.approx(float(rel_entr(p, q).sum()))
    assert total_variation(p, q) == pytest.approx(0.5 * (0.25 + 0.05 + 0.05 + 0.25))
    assert chi2_divergence(p, q) == pytest.approx(sum((p - q) ** 2 / q))
    assert hellinger_divergence(p, q) == pytest.approx(0.5 * sum((np.sqrt(p) - np.sqrt(q)) ** 2))
    assert max_divergence(p, q) == pytest.approx(math.log(2.0))
    # supp(p) ⊄ supp(q): KL, χ² and D∞ are infinite, TV and Hellinger finite.
    assert kl_divergence(q, p) == math.inf and chi2_divergence(q, p) == math.inf
    assert max_divergence(q, p) == math.inf and max_divergence(q, p, delta=0.3) < math.inf
    assert total_variation(q, p) == total_variation(p, q)


@settings(max_examples=60)
@given(pairs(), st.sampled_from([0.0, 0.01, 0.1, 0.4]))
def test_max_divergence_equals_brute_force(pq, delta):
    p, q = pq
    got = max_divergence(p, q, delta=delta)
    want = brute_dinf(p, q, delta)
    if math.isinf(want):
        assert got == want
    else:
        assert got == pytest.approx(want, abs=1e-9)


@settings(max_examples=60)
@given(pairs(), st.floats(-1.0, 3.0))
def test_hockey_stick_equals_brute_force_and_inverts_dinf(pq, eps):
    p, q = pq
    assert hockey_stick(p, q, eps) == pytest.approx(brute_hockey(p, q, eps), abs=1e-12)
    # D∞^δ is the smallest ε whose hockey-stick divergence is at most δ.
    delta = 0.05
    e = max_divergence(p, q, delta=delta)
    if math.isfinite(e):
        assert hockey_stick(p, q, e) <= delta + 1e-9
        assert hockey_stick(p, q, e - 1e-6) > delta - 1e-9


def test_batches_and_vector_arguments():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(5), size=4)
    q = rng.dirichlet(np.ones(5))
    for name in ("kl", "tv", "chi2", "hellinger"):
        batch = DIVERGENCES[name](p, q)
        assert batch.shape == (4,)
        assert batch[2] == pytest.approx(divergence(name, p[2], q))
    eps = np.array([0.0, 0.5, 1.0])
    hs = hockey_stick(p[0], q, eps)
    assert hs.shape == (3,) and np.all(np.diff(hs) <= 0)
    d = max_divergence(p[0], q, delta=np.array([0.0, 0.1]))
    assert d.shape == (2,) and d[1] < d[0]


def test_divergences_of_equal_distributions_vanish():
    p = np.array([0.2, 0.3, 0.5])
    for name in ("kl", "tv", "chi2", "hellinger", "dinf"):
        assert divergence(name, p, p) == pytest.approx(0.0, abs=1e-15)
    assert max_divergence(p, p, delta=0.1) == pytest.approx(math.log(0.9))


@pytest.mark.parametrize(
    ("p", "message"),
    [
        ([0.5, 0.4], "sum to 1"),
        ([1.2, -0.2], "non-negative"),
        ([0.5, float("nan")], "finite"),
        ([[0.5, 0.5], [0.3, 0.3]], "sum to 1"),
    ],
)
def test_bad_distributions(p, message):
    with pytest.raises(ParameterError, match=message):
        kl_divergence(p, [0.5, 0.5])
    with pytest.raises(ParameterError, match="lam0 must"):  # the message names the parameter
        check_distribution(p, "lam0", ndim=(1, 2))


def test_bad_arguments():
    with pytest.raises(ParameterError, match="same points"):
        total_variation([0.5, 0.5], [1 / 3] * 3)
    with pytest.raises(ParameterTypeError):
        kl_divergence("abc", [0.5, 0.5])
    with pytest.raises(ParameterError, match="delta must be < 1"):
        max_divergence([0.5, 0.5], [0.5, 0.5], delta=1.0)
    with pytest.raises(ParameterError, match="delta"):
        divergence("kl", [0.5, 0.5], [0.5, 0.5], delta=0.1)
    with pytest.raises(ParameterError, match="divergence must be one of"):
        divergence("renyi", [0.5, 0.5], [0.5, 0.5])
    # tolerance is 1e-9: a sum off by 1e-12 is accepted, 1e-6 is not
    check_distribution([0.5, 0.5 + 1e-12], "p")
    with pytest.raises(ParameterError, match=r"sums to 1\.000001"):
        check_distribution([0.5, 0.500001], "p")


def test_stochastic_matrix_rows():
    check_stochastic_matrix([[0.2, 0.8], [1.0, 0.0]], "A")
    with pytest.raises(ParameterError, match=r"row 1 sums to 0\.9"):
        check_stochastic_matrix([[0.2, 0.8], [0.5, 0.4]], "A")
    with pytest.raises(ParameterError, match="non-negative"):
        check_stochastic_matrix([[1.2, -0.2]], "A")
    with pytest.raises(ParameterError, match="3 rows"):
        check_stochastic_matrix([[1.0, 0.0]], "A", rows=3)
